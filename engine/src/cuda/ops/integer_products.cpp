// The integer products of quantized models: MatMulInteger and ConvInteger
// (int32 sums) and QLinearMatMul and QLinearConv (sums requantized to int8
// or uint8), int8/uint8 codes with their zero points, one kernel each
// (kernels/integer.h). The shape and zero point rules are the reference's
// (reference/ops/quantization/), with its messages. QLinearMatMul's
// float8 codes (opset 21) go to the CPU engine.
#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

namespace {

constexpr std::initializer_list<DataType> kCodes = {DataType::Int8, DataType::Uint8};

CodeOperand operand(const DeviceTensor& t) {
  CodeOperand o{};
  o.data = static_cast<const uint8_t*>(t.data);
  o.is_signed = t.dtype == DataType::Int8;
  return o;
}

// The kernel reads a zero point as its input's type, which the spec's
// type constraints make the same (the rules below refuse others).
void set_zero_point(OpContext& c, CodeOperand& o, const DeviceTensor& zp, bool per_slice, const char* what) {
  if ((zp.dtype == DataType::Int8) != o.is_signed) c.fail(std::string(what) + " must have the same type as its input");
  o.zp = static_cast<const uint8_t*>(zp.data);
  o.zp_step = per_slice ? 1 : 0;
}

// Placement: each zero point (input zp) of its input's (input of) declared type.
std::optional<std::string> require_zero_point_types(const Graph& g, const Node& n, std::initializer_list<std::pair<size_t, size_t>> pairs) {
  for (const auto& [of, zp] : pairs)
    if (zp < n.inputs.size() && !n.inputs[zp].empty())
      if (auto r = require_types(g, n, {declared_type(g, n.inputs[of])}, zp, 1)) return r;
  return std::nullopt;
}

// A scale or zero point that must hold one value.
const DeviceTensor& scalar(OpContext& c, size_t k, const std::string& message) {
  const DeviceTensor& t = c.input(k);
  if (elements_of(t.shape) != 1) c.fail(message);
  return t;
}

// --- MatMulInteger, QLinearMatMul -----------------------------------------

// MatMulInteger's zero points: a scalar, or one per row of A (a_zp) or
// column of B (b_zp); an empty one is none.
void matmul_zero_point(OpContext& c, CodeOperand& o, size_t k, const Shape& s, bool along_rows, const char* what) {
  if (!c.has_input(k)) return;
  const DeviceTensor& zp = c.input(k);
  const uint64_t count = elements_of(zp.shape);
  if (count == 0) return;
  if (count == 1) return set_zero_point(c, o, zp, false, what);
  if (s.size() < 2) c.fail(std::string(what) + " must be a scalar for a 1-D input");
  const int64_t want = along_rows ? s[s.size() - 2] : s.back();
  if (static_cast<int64_t>(count) != want)
    c.fail(std::string(what) + " must be a scalar or have " + std::to_string(want) + " values, got " + shape_to_string(zp.shape));
  set_zero_point(c, o, zp, true, what);
}

// numpy matmul over a (input ia) and b (input ib), 1-D operands promoted;
// returns the kernel with its shapes and operands set, and allocates y.
IntMatMulKernel matmul_kernel(OpContext& c, size_t ia, size_t ib, DataType y_type) {
  const DeviceTensor& a = c.input(ia);
  const DeviceTensor& b = c.input(ib);
  if (a.shape.empty() || b.shape.empty()) c.fail("MatMul inputs must have rank >= 1 (scalars are not allowed)");
  Shape as = a.shape, bs = b.shape;
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  IntMatMulKernel k{};
  k.m = as[as.size() - 2];
  k.k = as.back();
  k.n = bs.back();
  if (bs[bs.size() - 2] != k.k) c.fail("inner dimensions do not match: " + shape_to_string(as) + " @ " + shape_to_string(bs));
  const Shape shapes[2] = {Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2)};
  const auto plan = broadcast_plan(shapes);
  if (!plan) c.fail("batch dims of " + shape_to_string(a.shape) + " and " + shape_to_string(b.shape) + " do not broadcast");
  k.batch.rank = plan->rank;
  for (int d = 0; d < plan->rank; ++d) {
    const auto s = static_cast<size_t>(d);
    k.batch.out[d] = plan->dims[s];
    k.batch.stride[0][d] = plan->strides[0][s] * k.m * k.k;
    k.batch.stride[1][d] = plan->strides[1][s] * k.k * k.n;
  }
  Shape out = plan->out;
  if (a.shape.size() > 1) out.push_back(k.m);
  if (b.shape.size() > 1) out.push_back(k.n);
  c.output(0) = c.allocate(y_type, out);
  k.a = operand(a);
  k.b = operand(b);
  return k;
}

std::optional<std::string> refuse_matmul_integer(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("MatMulInteger takes A and B");
  if (auto r = require_types(g, n, kCodes)) return r;
  return require_zero_point_types(g, n, {{0, 2}, {1, 3}});
}

void run_matmul_integer(OpContext& c) {
  IntMatMulKernel k = matmul_kernel(c, 0, 1, DataType::Int32);
  matmul_zero_point(c, k.a, 2, c.input(0).shape, true, "a_zero_point");
  matmul_zero_point(c, k.b, 3, c.input(1).shape, false, "b_zero_point");
  k.out.y32 = static_cast<int32_t*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(c.output(0).shape)));
}

std::optional<std::string> refuse_qlinear_matmul(const Graph& g, const Node& n) {
  if (n.inputs.size() != 8) return std::string("QLinearMatMul takes 8 inputs");
  for (size_t i : {0, 2, 3, 5, 7})
    if (auto r = require_types(g, n, kCodes, i, 1)) return r;
  for (size_t i : {1, 4, 6})
    if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, i, 1)) return r;
  if (declared_type(g, n.inputs[4]) != declared_type(g, n.inputs[1]) || declared_type(g, n.inputs[6]) != declared_type(g, n.inputs[1]))
    return std::string("QLinearMatMul's scales differ in type");
  return require_zero_point_types(g, n, {{0, 2}, {3, 5}});
}

void run_qlinear_matmul(OpContext& c) {
  const DeviceTensor& a_scale = scalar(c, 1, "a_scale must be a scalar (per-tensor quantization)");
  const DeviceTensor& b_scale = scalar(c, 4, "b_scale must be a scalar (per-tensor quantization)");
  const DeviceTensor& y_scale = scalar(c, 6, "y_scale must be a scalar (per-tensor quantization)");
  const DeviceTensor& y_zp = scalar(c, 7, "y_zero_point must be a scalar");
  if (elements_of(c.input(2).shape) != 1 || elements_of(c.input(5).shape) != 1)
    c.fail("a_zero_point and b_zero_point must be scalars");
  IntMatMulKernel k = matmul_kernel(c, 0, 3, y_zp.dtype);
  set_zero_point(c, k.a, c.input(2), false, "a_zero_point");
  set_zero_point(c, k.b, c.input(5), false, "b_zero_point");
  k.out.y8 = static_cast<uint8_t*>(c.output(0).data);
  k.out.y_signed = y_zp.dtype == DataType::Int8;
  if (b_scale.dtype != a_scale.dtype || y_scale.dtype != a_scale.dtype) c.fail("a_scale, b_scale and y_scale differ in type");
  k.out.scale_type = static_cast<ElemType>(a_scale.dtype);
  k.out.in_scale = a_scale.data;
  k.out.w_scale = b_scale.data;
  k.out.y_scale = y_scale.data;
  k.out.y_zp = static_cast<const uint8_t*>(y_zp.data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(c.output(0).shape)));
}

// --- ConvInteger, QLinearConv ----------------------------------------------

// A convolution's zero point: scalar for x; scalar or one per output
// channel for w; of the input's own type. Empty: none.
void conv_zero_point(OpContext& c, CodeOperand& o, size_t k, const DeviceTensor& t, const char* what) {
  if (!c.has_input(k)) return;
  const DeviceTensor& zp = c.input(k);
  const uint64_t count = elements_of(zp.shape);
  if (count == 0) return;
  if (count == 1) return set_zero_point(c, o, zp, false, what);
  if (zp.shape.size() != 1 || t.shape.empty() || zp.shape[0] != t.shape[0])
    c.fail(std::string(what) + " must be a scalar or have one value per output channel, got " + shape_to_string(zp.shape));
  set_zero_point(c, o, zp, true, what);
}

// The kernel for x (input ix) and w (input iw) with the window and the
// channel rules of Conv; allocates y [N, M, *out] of y_type.
IntConvKernel conv_kernel(OpContext& c, size_t ix, size_t iw, DataType y_type) {
  const DeviceTensor& x = c.input(ix);
  const DeviceTensor& w = c.input(iw);
  if (x.shape.size() < 3) c.fail("X must have shape [N, C, D1, ...], got " + shape_to_string(x.shape));
  if (w.shape.size() != x.shape.size())
    c.fail("W has rank " + std::to_string(w.shape.size()) + " but X has rank " + std::to_string(x.shape.size()));
  const int64_t group = c.attr_int("group", 1);
  if (group < 1) c.fail("group must be >= 1");
  const int64_t ch = x.shape[1], maps = w.shape[0];
  if (maps % group != 0)
    c.fail("the output channels of W (" + std::to_string(maps) + ") are not divisible by group " + std::to_string(group));
  if (w.shape[1] * group != ch)
    c.fail("X has " + std::to_string(ch) + " channels but W expects " + std::to_string(w.shape[1]) + " x group " + std::to_string(group));
  const Window win = window_of(c, x.shape, std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()), false);
  const std::vector<int64_t> ks = c.attr_ints("kernel_shape");
  if (!ks.empty() && ks != win.kernel)
    c.fail("kernel_shape " + shape_to_string(ks) + " does not match W's spatial shape " + shape_to_string(win.kernel));
  IntConvKernel k{};
  k.rank = win.rank;
  k.channels = ch;
  k.maps = maps;
  k.cg = w.shape[1];
  k.mg = maps / group;
  k.in_size = k.kernel_size = k.out_size = 1;
  for (int d = win.rank - 1; d >= 0; --d) {
    const auto s = static_cast<size_t>(d);
    k.in[d] = win.in[s];
    k.in_stride[d] = k.in_size;
    k.in_size *= win.in[s];
    k.kernel[d] = win.kernel[s];
    k.kernel_size *= win.kernel[s];
    k.out[d] = win.out[s];
    k.out_size *= win.out[s];
    k.stride[d] = win.stride[s];
    k.dilation[d] = win.dilation[s];
    k.pad[d] = win.pad_begin[s];
  }
  Shape out = {x.shape[0], maps};
  out.insert(out.end(), win.out.begin(), win.out.end());
  c.output(0) = c.allocate(y_type, out);
  k.x = operand(x);
  k.w = operand(w);
  return k;
}

std::optional<std::string> refuse_conv_integer(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("ConvInteger takes x and w");
  if (auto r = require_types(g, n, kCodes)) return r;
  if (auto r = require_zero_point_types(g, n, {{0, 2}, {1, 3}})) return r;
  return refuse_spatial_rank(g, n);
}

void run_conv_integer(OpContext& c) {
  if (c.has_input(2) && elements_of(c.input(2).shape) > 1) c.fail("x_zero_point must be a scalar");
  IntConvKernel k = conv_kernel(c, 0, 1, DataType::Int32);
  conv_zero_point(c, k.x, 2, c.input(0), "x_zero_point");
  conv_zero_point(c, k.w, 3, c.input(1), "w_zero_point");
  k.y.y32 = static_cast<int32_t*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(c.output(0).shape)));
}

std::optional<std::string> refuse_qlinear_conv(const Graph& g, const Node& n) {
  if (n.inputs.size() < 8) return std::string("QLinearConv takes x, w, their scales and zero points, and y's");
  for (size_t i : {0, 2, 3, 5, 7})
    if (auto r = require_types(g, n, kCodes, i, 1)) return r;
  for (size_t i : {1, 4, 6})
    if (auto r = require_types(g, n, {DataType::Float}, i, 1)) return r;
  if (auto r = require_types(g, n, {DataType::Int32}, 8, 1)) return r;
  if (auto r = require_zero_point_types(g, n, {{0, 2}, {3, 5}})) return r;
  return refuse_spatial_rank(g, n);
}

void run_qlinear_conv(OpContext& c) {
  if (elements_of(c.input(2).shape) != 1) c.fail("x_zero_point must be a scalar");
  IntConvKernel k = conv_kernel(c, 0, 3, c.input(7).dtype);
  conv_zero_point(c, k.x, 2, c.input(0), "x_zero_point");
  conv_zero_point(c, k.w, 5, c.input(3), "w_zero_point");
  if (c.has_input(8)) {
    const DeviceTensor& b = c.input(8);
    if (static_cast<int64_t>(elements_of(b.shape)) != k.maps)
      c.fail("B has " + std::to_string(elements_of(b.shape)) + " values, expected " + std::to_string(k.maps) + " (one per output channel)");
    if (b.dtype != DataType::Int32) c.fail("B must be int32, got " + std::string(dtype_name(b.dtype)));
    k.y.bias = static_cast<const int32_t*>(b.data);
  }
  const DeviceTensor& x_scale = scalar(c, 1, "x_scale must be a scalar");
  const DeviceTensor& y_scale = scalar(c, 6, "y_scale must be a scalar");
  const DeviceTensor& w_scale = c.input(4);
  const uint64_t w_scales = elements_of(w_scale.shape);
  if (w_scales != 1 && (w_scale.shape.size() != 1 || w_scale.shape[0] != k.maps))
    c.fail("w_scale must be a scalar or have one value per output channel");
  const DeviceTensor& y_zp = scalar(c, 7, "y_zero_point must be a scalar");
  k.y.y8 = static_cast<uint8_t*>(c.output(0).data);
  k.y.y_signed = y_zp.dtype == DataType::Int8;
  k.y.scale_type = ElemType::Float;
  k.y.in_scale = x_scale.data;
  k.y.w_scale = w_scale.data;
  k.y.w_scale_step = w_scales == 1 ? 0 : 1;
  k.y.y_scale = y_scale.data;
  k.y.y_zp = static_cast<const uint8_t*>(y_zp.data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(c.output(0).shape)));
}

}  // namespace

void add_integer_product_ops(std::vector<OpDef>& t) {
  t.push_back({"MatMulInteger", refuse_matmul_integer, run_matmul_integer});
  t.push_back({"QLinearMatMul", refuse_qlinear_matmul, run_qlinear_matmul});
  t.push_back({"ConvInteger", refuse_conv_integer, run_conv_integer});
  t.push_back({"QLinearConv", refuse_qlinear_conv, run_qlinear_conv});
}

}  // namespace onnxscope::cuda
