// QuantizeLinear and DequantizeLinear (opsets 10 to 25) between float32 and
// the codes int8, uint8, int16, uint16, the packed int4, uint4, int2, uint2,
// the four float8 formats and the packed float4e2m1 (and int32 codes for
// dequantization): per tensor, per axis or blocked, the layout and its
// checks the reference's (core/quant_plan.h), one elementwise kernel each
// (kernels/quantize.h). float16 / bfloat16 values and scales through
// float32 (run_on_float32): QuantizeLinear divides in the scale's type (or
// `precision`'s) as the reference does, rounding x and the quotient to it;
// DequantizeLinear writes the scale's type (or output_dtype's), rounded
// once. DynamicQuantizeLinear: its range in two steps (kernels/integer.h),
// then the same kernel.
#include <algorithm>
#include <stdexcept>

#include "core/quant_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

constexpr std::initializer_list<DataType> kCodes = {
    DataType::Int8,         DataType::Uint8,          DataType::Int16,      DataType::Uint16,         DataType::Int4,
    DataType::Uint4,        DataType::Int2,           DataType::Uint2,      DataType::Float8E4M3FN,   DataType::Float8E4M3FNUZ,
    DataType::Float8E5M2,   DataType::Float8E5M2FNUZ, DataType::Float4E2M1};

bool quantized_code(DataType t) { return std::find(kCodes.begin(), kCodes.end(), t) != kCodes.end(); }

QuantIndex index_of(OpContext& c, const Shape& x) {
  const Shape* zp = c.has_input(2) ? &c.input(2).shape : nullptr;
  const Shape& scale = c.input(1).shape;
  if (c.opset() < 21 && scale.size() > 1)
    c.fail(std::string(c.node().op_type == "QuantizeLinear" ? "y_scale" : "x_scale") + " must be a scalar or 1-D before opset 21");
  quant::ParamIndex p;
  try {
    p = quant::param_index(x, scale, zp, c.attr_int("axis", 1), c.attr_int("block_size", 0));
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
  QuantIndex q;
  q.mode = p.mode == quant::ParamIndex::PerTensor ? 0 : p.mode == quant::ParamIndex::PerAxis ? 1 : 2;
  q.axis_dim = p.axis_dim;
  q.inner = p.inner;
  q.block = p.block;
  q.scale_axis_dim = p.scale_axis_dim;
  return q;
}

// The code QuantizeLinear writes without a zero point: output_dtype, else uint8.
DataType attribute_code(const Node& n) {
  const Attribute* a = n.attribute("output_dtype");
  return a && a->i != 0 ? static_cast<DataType>(a->i) : DataType::Uint8;
}

// The code it writes: the zero point's type, else attribute_code.
DataType quantized_type(const Graph& g, const Node& n) {
  return n.inputs.size() > 2 && !n.inputs[2].empty() ? declared_type(g, n.inputs[2]) : attribute_code(n);
}

std::optional<std::string> refuse_quantize(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("QuantizeLinear takes x and y_scale");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 2)) return r;
  if (auto r = require_types(g, n, kCodes, 2, 1)) return r;
  if (!quantized_code(quantized_type(g, n))) return std::string("the CUDA kernel for QuantizeLinear writes integer codes of 16, 8, 4 or 2 bits, float8 or float4");
  if (const Attribute* p = n.attribute("precision"); p && p->i != 0 && p->i != static_cast<int64_t>(DataType::Float) &&
                                                     p->i != static_cast<int64_t>(DataType::Float16) && p->i != static_cast<int64_t>(DataType::BFloat16))
    return std::string("the CUDA kernel for QuantizeLinear divides in float32, float16 or bfloat16 (precision 1, 10 or 16)");
  return std::nullopt;
}

// `precision`: the division's type (the scale's, or the precision attribute's).
void quantize(OpContext& c, DataType precision) {
  const DeviceTensor& x = c.input(0);
  const DataType code = c.has_input(2) ? c.input(2).dtype : attribute_code(c.node());
  if (const int64_t od = c.attr_int("output_dtype", 0); c.has_input(2) && od != 0 && od != static_cast<int64_t>(code))
    c.fail("output_dtype " + std::to_string(od) + " differs from y_zero_point's type " + std::string(dtype_name(code)));
  if (!quantized_code(code)) c.fail("cannot quantize to " + std::string(dtype_name(code)) + " on the device");
  const QuantIndex at = index_of(c, x.shape);
  c.output(0) = c.allocate(code, x.shape);
  QuantizeKernel k{};
  k.at = at;
  k.x = static_cast<const float*>(x.data);
  k.scale = static_cast<const float*>(c.input(1).data);
  k.zero_point = c.has_input(2) ? c.input(2).data : nullptr;
  k.code = static_cast<ElemType>(code);
  switch (code) {
    case DataType::Int8: k.lo = -128; k.hi = 127; break;
    case DataType::Uint8: k.lo = 0; k.hi = 255; break;
    case DataType::Int16: k.lo = -32768; k.hi = 32767; break;
    case DataType::Uint16: k.lo = 0; k.hi = 65535; break;
    case DataType::Int4: k.lo = -8; k.hi = 7; break;
    case DataType::Uint4: k.lo = 0; k.hi = 15; break;
    case DataType::Int2: k.lo = -2; k.hi = 1; break;
    case DataType::Uint2: k.lo = 0; k.hi = 3; break;
    default: break;  // float codes: no range, saturate instead
  }
  k.saturate = c.attr_int("saturate", 1) != 0;
  k.narrow = narrow_code(precision);
  k.n = static_cast<int64_t>(elements_of(x.shape));
  k.y = c.output(0).data;
  const int per = packed_bits(k.code) ? 8 / packed_bits(k.code) : 1;
  launch(c.rt(), k, (k.n + per - 1) / per);
}

std::optional<std::string> refuse_dequantize(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("DequantizeLinear takes x and x_scale");
  if (declared_type(g, n.inputs[0]) != DataType::Int32)
    if (auto r = require_types(g, n, kCodes, 0, 1)) return r;
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 1, 1)) return r;
  if (auto r = require_types(g, n, {declared_type(g, n.inputs[0])}, 2, 1)) return r;
  if (const Attribute* a = n.attribute("output_dtype"); a && a->i != 0 && a->i != static_cast<int64_t>(DataType::Float) &&
                                                          a->i != static_cast<int64_t>(DataType::Float16) && a->i != static_cast<int64_t>(DataType::BFloat16))
    return std::string("the CUDA kernel for DequantizeLinear writes float32, float16 or bfloat16");
  return std::nullopt;
}

void dequantize(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (c.has_input(2) && c.input(2).dtype != x.dtype)
    c.fail("x_zero_point type " + std::string(dtype_name(c.input(2).dtype)) + " differs from x's " + std::string(dtype_name(x.dtype)));
  const QuantIndex at = index_of(c, x.shape);
  c.output(0) = c.allocate(DataType::Float, x.shape);
  DequantizeKernel k{};
  k.at = at;
  k.x = x.data;
  k.code = static_cast<ElemType>(x.dtype);
  k.scale = static_cast<const float*>(c.input(1).data);
  k.zero_point = c.has_input(2) ? c.input(2).data : nullptr;
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

void run_quantize(OpContext& c) {
  const int64_t p = c.attr_int("precision", 0);
  const DataType precision = p != 0 ? static_cast<DataType>(p) : c.input(1).dtype;
  run_on_float32(c, [precision](OpContext& f) { quantize(f, precision); });
}

// The output is output_dtype's type, else the scale's.
void run_dequantize(OpContext& c) {
  const int64_t od = c.attr_int("output_dtype", 0);
  run_on_float32(c, dequantize, ~0u, od != 0 ? static_cast<DataType>(od) : c.input(1).dtype);
}

std::optional<std::string> refuse_dynamic_quantize(const Graph& g, const Node& n) {
  if (n.inputs.size() != 1) return std::string("DynamicQuantizeLinear takes x");
  return require_types(g, n, {DataType::Float});
}

// uint8 codes for x with a scale and zero point from x's range (which holds
// 0): the range over chunks, then over the chunks' results, then the
// quantization, reading the scale and zero point where step 2 wrote them.
void run_dynamic_quantize(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto n = static_cast<int64_t>(elements_of(x.shape));
  c.output(0) = c.allocate(DataType::Uint8, x.shape);
  c.output(1) = c.allocate(DataType::Float, {});
  c.output(2) = c.allocate(DataType::Uint8, {});
  const Chunks split = chunks_of(n);
  const int64_t chunk = split.size, rows = split.count;
  const DeviceTensor partial = c.allocate(DataType::Float, {std::max<int64_t>(rows, 1), 2});
  MinMaxPartialKernel range{};
  range.n = n;
  range.chunk = chunk;
  range.x = static_cast<const float*>(x.data);
  range.partial = static_cast<float*>(partial.data);
  launch(c.rt(), range, rows);
  DynamicQuantParamsKernel params{};
  params.parts = rows;
  params.partial = range.partial;
  params.scale = static_cast<float*>(c.output(1).data);
  params.zero_point = static_cast<uint8_t*>(c.output(2).data);
  launch(c.rt(), params, 1);
  QuantizeKernel q{};
  q.x = range.x;
  q.scale = params.scale;
  q.zero_point = params.zero_point;
  q.code = static_cast<ElemType>(DataType::Uint8);
  q.lo = 0;
  q.hi = 255;
  q.n = n;
  q.y = c.output(0).data;
  launch(c.rt(), q, n);
}

}  // namespace

void add_quantize_ops(std::vector<OpDef>& t) {
  t.push_back({"QuantizeLinear", refuse_quantize, run_quantize});
  t.push_back({"DequantizeLinear", refuse_dequantize, run_dequantize});
  t.push_back({"DynamicQuantizeLinear", refuse_dynamic_quantize, run_dynamic_quantize});
}

}  // namespace onnxscope::cuda
