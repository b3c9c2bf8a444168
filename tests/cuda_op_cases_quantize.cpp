// Random QuantizeLinear and DequantizeLinear problems for cuda_kernels_test
// (the rest of the generators are in cuda_op_cases.cpp): per tensor, per axis
// and blocked scales, every integer code (packed 4- and 2-bit ones
// included, in odd counts) with and without a zero point, and
// values that round at halves, saturate, or are NaN and infinite.
#include <algorithm>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

// The scale's shape for x: per tensor (scalar or [1]), per axis (opset 13
// on) or blocked (opset 21 on), with the attributes that say so.
Shape scale_layout(Rng& rng, const Case& c, const Shape& x, std::vector<std::pair<const char*, int64_t>>& attrs) {
  const auto rank = static_cast<int64_t>(x.size());
  const int form = static_cast<int>(pick(rng, 0, c.opset >= 21 ? 2 : c.opset >= 13 ? 1 : 0));
  if (form == 0) return coin(rng) ? Shape{} : Shape{1};
  const int64_t axis = pick(rng, -rank, rank - 1);
  const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  if (axis != 1 || coin(rng)) attrs.emplace_back("axis", axis);
  if (form == 1) return Shape{x[a]};
  const int64_t block = pick(rng, 1, x[a]);
  attrs.emplace_back("block_size", block);
  Shape s = x;
  s[a] = (x[a] + block - 1) / block;
  return s;
}

// The codes an opset has: float8 from 19, 16-bit and packed 4-bit integers
// from 21, float4 from 23, packed 2-bit integers from 25, int32 codes (for
// dequantization) from 10.
std::vector<DataType> codes(int64_t opset, bool int32) {
  std::vector<DataType> t = {DataType::Int8, DataType::Uint8};
  if (opset >= 19) t.insert(t.end(), {DataType::Float8E4M3FN, DataType::Float8E4M3FNUZ, DataType::Float8E5M2, DataType::Float8E5M2FNUZ});
  if (opset >= 21) t.insert(t.end(), {DataType::Int16, DataType::Uint16, DataType::Int4, DataType::Uint4});
  if (opset >= 23) t.push_back(DataType::Float4E2M1);
  if (opset >= 25) t.insert(t.end(), {DataType::Int2, DataType::Uint2});
  if (int32) t.push_back(DataType::Int32);
  return t;
}

bool float_code(DataType t) { return t == DataType::Float4E2M1 || dtype_info(t).is_float; }

// A code's range [lo, hi] (int32's cut to what the tests draw; float codes:
// past their largest values, to saturate).
void code_range(DataType t, double& lo, double& hi) {
  switch (t) {
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: lo = -600; hi = 600; break;
    case DataType::Float8E5M2: case DataType::Float8E5M2FNUZ: lo = -70000; hi = 70000; break;
    case DataType::Float4E2M1: lo = -8; hi = 8; break;
    case DataType::Int8: lo = -128; hi = 127; break;
    case DataType::Int16: lo = -32768; hi = 32767; break;
    case DataType::Uint16: lo = 0; hi = 65535; break;
    case DataType::Int32: lo = -2e9; hi = 2e9; break;
    case DataType::Int4: lo = -8; hi = 7; break;
    case DataType::Uint4: lo = 0; hi = 15; break;
    case DataType::Int2: lo = -2; hi = 1; break;
    case DataType::Uint2: lo = 0; hi = 3; break;
    default: lo = 0; hi = 255; break;
  }
}

Case quantize(Rng& rng, const std::string&) {
  Case c(choose(rng, std::vector<int64_t>{10, 13, 19, 21, 23, 25}));
  const Shape x = random_shape(rng, 1, 4, 6);
  // x and the scale float16 / bfloat16 from opset 19, of two types from 23.
  const DataType tx = c.opset >= 19 ? real_type(rng) : DataType::Float;
  const DataType ts = c.opset >= 23 && coin(rng) ? real_type(rng) : tx;
  c.add_tensor("x", tx, x, rng, -300, 300);
  Tensor& xv = c.inputs.back().second.tensor();
  for (uint64_t i = 0; i < xv.element_count(); ++i) {
    const auto f = static_cast<float>(xv.element_as_double(i));
    if (i % 3 == 0) set_real(xv, i, std::round(f * 2) / 2);  // halves (over the scales of 1 below): to even
    if (i % 11 == 5) set_real(xv, i, i % 2 ? NAN : (i % 3 ? INFINITY : -INFINITY));
  }
  std::vector<std::pair<const char*, int64_t>> attrs;
  const Shape scale = scale_layout(rng, c, x, attrs);
  std::vector<std::string> in = {"x", c.add_tensor("scale", ts, scale, rng, 0.25, 3)};
  Tensor& sv = c.inputs.back().second.tensor();
  for (uint64_t i = 0; i < sv.element_count(); ++i)  // exact quotients too
    if (coin(rng)) set_real(sv, i, choose(rng, std::vector<float>{0.5f, 1.f, 1.f, 2.f}));
  c.note_type(tx);
  if (ts != tx) c.what += " scale of " + std::string(dtype_name(ts));
  const DataType code = choose(rng, codes(c.opset, false));
  const bool zero_point = c.opset < 21 ? coin(rng) || code != DataType::Uint8 : coin(rng);
  if (zero_point) {
    double lo, hi;
    code_range(code, lo, hi);
    if (float_code(code) && coin(rng)) lo = hi = 0;  // what exporters write for float codes
    in.push_back(c.add_tensor("zero_point", code, scale, rng, std::max(lo, -1000.0), std::min(hi, 1000.0) + (float_code(code) ? 0 : 0.99)));
  }
  auto& n = c.node("QuantizeLinear", in);
  if (float_code(code) && coin(rng)) attr_int(n, "saturate", 0);  // out of range to inf or NaN
  for (const auto& [name, v] : attrs) attr_int(n, name, v);
  if (c.opset >= 21 && (!zero_point ? code != DataType::Uint8 || coin(rng) : coin(rng)))
    attr_int(n, "output_dtype", static_cast<int64_t>(code));
  if (c.opset >= 23 && coin(rng)) {  // the division in another type than the scale's
    const DataType p = choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16, DataType::BFloat16});
    attr_int(n, "precision", static_cast<int64_t>(p));
    c.what += " precision " + std::string(dtype_name(p));
  }
  return c;
}

Case dequantize(Rng& rng, const std::string&) {
  Case c(choose(rng, std::vector<int64_t>{10, 13, 19, 21, 23, 25}));
  const Shape x = random_shape(rng, 1, 4, 6);
  const DataType code = choose(rng, codes(c.opset, true));
  double lo, hi;
  code_range(code, lo, hi);
  if (!float_code(code)) hi += 0.99;  // floor(x) <= hi
  c.add_tensor("x", code, x, rng, lo, hi);
  std::vector<std::pair<const char*, int64_t>> attrs;
  const Shape scale = scale_layout(rng, c, x, attrs);
  const DataType ts = c.opset >= 19 ? real_type(rng) : DataType::Float;  // float16 / bfloat16 scales from 19
  std::vector<std::string> in = {"x", c.add_tensor("scale", ts, scale, rng, -2, 2)};
  c.note_type(ts);
  if (coin(rng)) in.push_back(c.add_tensor("zero_point", code, scale, rng, lo, hi));
  auto& n = c.node("DequantizeLinear", in);
  for (const auto& [name, v] : attrs) attr_int(n, name, v);
  if (c.opset >= 23 && coin(rng)) {  // the output's type, the scale's or another
    const DataType o = coin(rng) ? ts : real_type(rng);
    attr_int(n, "output_dtype", static_cast<int64_t>(o));
    c.what += " output_dtype " + std::string(dtype_name(o));
  }
  return c;
}

}  // namespace

void add_quantize_generators(std::map<std::string, Generator>& m) {
  m["QuantizeLinear"] = quantize;
  m["DequantizeLinear"] = dequantize;
}

}  // namespace onnxscope::test::cuda_cases
