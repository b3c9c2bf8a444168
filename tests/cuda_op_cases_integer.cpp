// Random integer-product and dynamic quantization problems for
// cuda_kernels_test: MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
// (every int8/uint8 pairing, zero points absent, scalar or per row/column/
// channel, sums that requantize at halves and saturate) and
// DynamicQuantizeLinear (ranges on one side of 0, NaN and infinities, empty
// and many-chunk tensors).
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

const std::vector<DataType> kCodes = {DataType::Int8, DataType::Uint8};

// Codes over their whole range.
std::string codes(Case& c, const std::string& name, DataType t, const Shape& s, Rng& rng) {
  return t == DataType::Int8 ? c.add_tensor(name, t, s, rng, -128, 128) : c.add_tensor(name, t, s, rng, 0, 256);
}

// A per-tensor value: a scalar or a one-element vector.
Shape one(Rng& rng) { return coin(rng) ? Shape{} : Shape{1}; }

// numpy matmul shapes: plain, batched, broadcast batches, 1-D operands.
void matmul_shapes(Rng& rng, Shape& a, Shape& b) {
  const int64_t m = pick(rng, 1, 9), k = pick(rng, 0, 9), n = pick(rng, 1, 9);  // k 0: sums over nothing
  a = {m, k};
  b = {k, n};
  switch (pick(rng, 0, 4)) {
    case 1: a.insert(a.begin(), {pick(rng, 1, 3), pick(rng, 1, 3)}); break;
    case 2: {
      const int64_t bt = pick(rng, 1, 4);
      a.insert(a.begin(), bt);
      b.insert(b.begin(), bt);
      break;
    }
    case 3:
      a.insert(a.begin(), {pick(rng, 1, 3), 1});
      b.insert(b.begin(), {1, pick(rng, 2, 3)});
      break;
    case 4:
      if (coin(rng)) a = {k};
      else b = {k};
      break;
    default: break;
  }
}

// Scales whose product over y's is a half now and then (rounding to even)
// or small enough that most sums land in range, large enough that some
// saturate; of type `t` (float16 and bfloat16: QLinearMatMul 21), as inputs.
void requant_scales(Case& c, Rng& rng, const char* in_scale, const char* w_scale, const Shape& w_shape, const char* y_scale,
                    DataType t = DataType::Float) {
  if (t != DataType::Float) {
    c.add_tensor(in_scale, t, one(rng), rng, 0.01, 0.1);
    c.add_tensor(w_scale, t, w_shape, rng, 0.01, 0.1);
    c.add_tensor(y_scale, t, one(rng), rng, 0.005, 0.05);
    return;
  }
  if (pick(rng, 0, 3) == 0) {
    c.float_scalar(in_scale, 0.5f);
    if (w_shape.empty()) c.float_scalar(w_scale, 1.f);
    else c.float_list(w_scale, std::vector<float>(static_cast<size_t>(w_shape[0]), 1.f));
    c.float_scalar(y_scale, choose(rng, std::vector<float>{1.f, 16.f, 64.f}));
    return;
  }
  c.floats(in_scale, one(rng), rng, 0.01, 0.1);
  c.floats(w_scale, w_shape, rng, 0.01, 0.1);
  c.floats(y_scale, one(rng), rng, 0.005, 0.05);
}

Case matmul_integer(Rng& rng, const std::string&) {
  Case c(10);
  Shape a, b;
  matmul_shapes(rng, a, b);
  const DataType ta = choose(rng, kCodes), tb = choose(rng, kCodes);
  std::vector<std::string> in = {codes(c, "a", ta, a, rng), codes(c, "b", tb, b, rng)};
  const int za = static_cast<int>(pick(rng, 0, a.size() > 1 ? 2 : 1));  // none, scalar, per row
  const int zb = static_cast<int>(pick(rng, 0, b.size() > 1 ? 2 : 1));  // none, scalar, per column
  if (za || zb) in.push_back(za ? codes(c, "a_zp", ta, za == 1 ? one(rng) : Shape{a[a.size() - 2]}, rng) : "");
  if (zb) in.push_back(codes(c, "b_zp", tb, zb == 1 ? one(rng) : Shape{b.back()}, rng));
  c.node("MatMulInteger", in);
  return c;
}

Case qlinear_matmul(Rng& rng, const std::string&) {
  Case c(coin(rng) ? 10 : 21);
  Shape a, b;
  matmul_shapes(rng, a, b);
  const DataType ta = choose(rng, kCodes), tb = choose(rng, kCodes), ty = choose(rng, kCodes);
  codes(c, "a", ta, a, rng);
  codes(c, "a_zp", ta, one(rng), rng);
  codes(c, "b", tb, b, rng);
  codes(c, "b_zp", tb, one(rng), rng);
  codes(c, "y_zp", ty, one(rng), rng);
  const DataType scales = c.opset < 21 ? DataType::Float : choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16, DataType::BFloat16});
  requant_scales(c, rng, "a_scale", "b_scale", one(rng), "y_scale", scales);
  c.node("QLinearMatMul", {"a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"});
  return c;
}

// Conv's geometry (see conv in cuda_op_cases.cpp) for integer codes; the
// node's attributes are set by set_window.
struct ConvShapes {
  Shape x, w;
  int64_t groups = 1, maps = 1;
  std::vector<int64_t> strides, dilations, pads;
};

ConvShapes conv_shapes(Rng& rng) {
  ConvShapes s;
  const int64_t r = pick(rng, 1, 3);
  s.groups = choose(rng, std::vector<int64_t>{1, 1, 2, 3});
  const int64_t cin = pick(rng, 0, 7) == 0 ? 0 : s.groups * pick(rng, 1, 3);  // 0: sums over nothing
  s.maps = s.groups * pick(rng, 1, 3);
  s.x = {pick(rng, 1, 2), cin};
  s.w = {s.maps, cin / s.groups};
  s.pads.resize(static_cast<size_t>(2 * r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t k = pick(rng, 1, 3);
    s.x.push_back(pick(rng, k + 2, r == 3 ? 6 : 9));
    s.w.push_back(k);
    s.strides.push_back(pick(rng, 1, 2));
    s.dilations.push_back(pick(rng, 1, 2));
  }
  for (auto& p : s.pads) p = pick(rng, 0, 2);
  return s;
}

void set_window(Rng& rng, onnx::NodeProto& n, const ConvShapes& s) {
  attr_int(n, "group", s.groups);
  attr_ints(n, "strides", s.strides);
  if (coin(rng)) attr_ints(n, "dilations", s.dilations);
  const int padding = static_cast<int>(pick(rng, 0, 2));
  if (padding == 1) attr_ints(n, "pads", s.pads);  // asymmetric ones included
  if (padding == 2) attr_string(n, "auto_pad", choose(rng, std::vector<std::string>{"SAME_UPPER", "SAME_LOWER", "VALID"}));
}

// w's zero point: a scalar or one per output channel.
Shape w_zero_point_shape(Rng& rng, int64_t maps) { return coin(rng) ? one(rng) : Shape{maps}; }

Case conv_integer(Rng& rng, const std::string&) {
  Case c(10);
  const ConvShapes s = conv_shapes(rng);
  const DataType tx = choose(rng, kCodes), tw = choose(rng, kCodes);
  std::vector<std::string> in = {codes(c, "x", tx, s.x, rng), codes(c, "w", tw, s.w, rng)};
  const bool zx = coin(rng), zw = coin(rng);
  if (zx || zw) in.push_back(zx ? codes(c, "x_zp", tx, one(rng), rng) : "");
  if (zw) in.push_back(codes(c, "w_zp", tw, w_zero_point_shape(rng, s.maps), rng));
  set_window(rng, c.node("ConvInteger", in), s);
  return c;
}

Case qlinear_conv(Rng& rng, const std::string&) {
  Case c(10);
  const ConvShapes s = conv_shapes(rng);
  const DataType tx = choose(rng, kCodes), tw = choose(rng, kCodes), ty = choose(rng, kCodes);
  codes(c, "x", tx, s.x, rng);
  codes(c, "x_zp", tx, one(rng), rng);
  codes(c, "w", tw, s.w, rng);
  codes(c, "w_zp", tw, w_zero_point_shape(rng, s.maps), rng);
  codes(c, "y_zp", ty, one(rng), rng);
  requant_scales(c, rng, "x_scale", "w_scale", coin(rng) ? one(rng) : Shape{s.maps}, "y_scale");
  std::vector<std::string> in = {"x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp"};
  if (coin(rng)) in.push_back(c.add_tensor("bias", DataType::Int32, {s.maps}, rng, -20000, 20000));
  set_window(rng, c.node("QLinearConv", in), s);
  return c;
}

Case dynamic_quantize(Rng& rng, const std::string&) {
  Case c(11);
  // 0 values across 0, 1 all positive, 2 all negative, 3 half zeros,
  // 4 many chunks of the range's first step, 5 a zero-sized dim.
  const int form = static_cast<int>(pick(rng, 0, 5));
  Shape x = random_shape(rng, 0, 4);
  if (form == 4) x = {pick(rng, 2, 5), pick(rng, 300, 900)};
  if (form == 5 && !x.empty()) x[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(x.size()) - 1))] = 0;
  const double lo = form == 0 ? -0.9 : form == 1 ? 0.5 : form == 2 ? -40 : -3, hi = form == 1 ? 40 : form == 2 ? -0.5 : 7;
  c.floats("x", x, rng, lo, hi);
  Tensor& v = c.inputs.back().second.tensor();
  const int specials = static_cast<int>(pick(rng, 0, 3));  // 1: NaN, 2: an infinity, 3: both
  const uint64_t count = v.element_count(), peak = count ? static_cast<uint64_t>(pick(rng, 0, static_cast<int64_t>(count) - 1)) : 0;
  for (uint64_t i = 0; i < count; ++i) {
    float& f = v.mutable_data<float>()[i];
    if (form == 3 && i % 2) f = 0;
    if (form == 4 && i == peak) f = coin(rng) ? 100.f : -100.f;  // the range set by one chunk
    if ((specials & 1) && i % 5 == 0) f = NAN;
    if ((specials & 2) && i % 17 == 7) f = i % 2 ? INFINITY : -INFINITY;
  }
  c.node("DynamicQuantizeLinear", {"x"}, 3);
  return c;
}

}  // namespace

void add_integer_generators(std::map<std::string, Generator>& m) {
  m["MatMulInteger"] = matmul_integer;
  m["QLinearMatMul"] = qlinear_matmul;
  m["ConvInteger"] = conv_integer;
  m["QLinearConv"] = qlinear_conv;
  m["DynamicQuantizeLinear"] = dynamic_quantize;
}

}  // namespace onnxscope::test::cuda_cases
