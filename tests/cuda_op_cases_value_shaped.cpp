// Random problems for cuda_kernels_test whose output shape depends on
// input values. Range: every type the device takes, rising, falling and
// empty ranges, fractional steps whose products round (numpy.arange's rule:
// start + i * ((start + delta) - start) in double), and starts far from 0.
// NonZero: every type, mostly zeros, -0 and NaN, scalars, empty and
// many-chunk tensors. ConstantOfShape: shapes given as an input (empty,
// scalar, with zeros), values of every width, or none. And EyeLike, whose
// output is made from its input's shape alone: every type, diagonals in,
// on the edge of and outside the matrix. OneHot, whose depth sets the
// output's shape: every integer index type, indices past the depth and
// negative (counted from the end from opset 11), any axis, depth 0, values
// of any width. CenterCropPad, whose shape input sets the output's: axes
// cropped, padded and kept. NonMaxSuppression, whose output holds the boxes
// kept: overlapping, identical, flipped and empty boxes, both box formats,
// tied and NaN scores, every box limit and threshold (or none). Compress:
// conditions shorter than the axis, all false or mostly true, with an axis
// (negative too) or over the flattened input, any element width.
#include <algorithm>
#include <cmath>

#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

// A scalar graph input of type t holding v.
std::string scalar(Case& c, const std::string& name, DataType t, double v) {
  Tensor x = Tensor::zeros(t, {});
  switch (t) {
    case DataType::Float: x.mutable_data<float>()[0] = static_cast<float>(v); break;
    case DataType::Double: x.mutable_data<double>()[0] = v; break;
    case DataType::Int16: x.mutable_data<int16_t>()[0] = static_cast<int16_t>(v); break;
    case DataType::Int32: x.mutable_data<int32_t>()[0] = static_cast<int32_t>(v); break;
    case DataType::Float16: x.mutable_data<uint16_t>()[0] = float_to_half(static_cast<float>(v)); break;
    case DataType::BFloat16: x.mutable_data<uint16_t>()[0] = float_to_bfloat16(static_cast<float>(v)); break;
    default: x.mutable_data<int64_t>()[0] = static_cast<int64_t>(v); break;
  }
  c.m.input(name, t, {});
  c.inputs.emplace_back(name, Value(std::move(x)));
  c.what += " " + name + "=" + std::to_string(v);
  return name;
}

Case range(Rng& rng, const std::string&) {
  // float16 and bfloat16 from opset 27, computed in float32 (stash_type 1,
  // the default) or double (11); before it in double.
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Double, DataType::Int16, DataType::Int32,
                                                       DataType::Int64, DataType::Float16, DataType::BFloat16});
  const bool narrow = t == DataType::Float16 || t == DataType::BFloat16;
  Case c(narrow ? 27 : 11);
  const bool real = t == DataType::Float || t == DataType::Double || narrow;
  const double far = real && !narrow && coin(rng) ? choose(rng, std::vector<double>{1e6, -3e7, 123456.789}) : 0;
  const double start = far + (real ? static_cast<double>(pick(rng, -40, 40)) * 0.1 : static_cast<double>(pick(rng, -20, 20)));
  double delta = real ? choose(rng, std::vector<double>{0.1, 0.3, -0.7, 1.0 / 3.0, 2.5, -0.05}) : static_cast<double>(pick(rng, 1, 4));
  if (!real && coin(rng)) delta = -delta;
  const double count = static_cast<double>(pick(rng, -3, 60));  // up to 3 short of empty
  scalar(c, "start", t, start);
  scalar(c, "limit", t, start + count * delta + (real ? delta * 0.5 : 0));
  scalar(c, "delta", t, delta);
  auto& n = c.node("Range", {"start", "limit", "delta"});
  if (narrow && coin(rng)) attr_int(n, "stash_type", choose(rng, std::vector<int64_t>{1, 11}));
  return c;
}

Case nonzero(Rng& rng, const std::string&) {
  Case c(13);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Double, DataType::Float16, DataType::Int8,
                                                       DataType::Int32, DataType::Int64, DataType::Uint8, DataType::Bool});
  Shape x = random_shape(rng, 0, 4);
  if (pick(rng, 0, 3) == 0) x = {pick(rng, 2, 3), pick(rng, 300, 700)};  // many chunks
  if (!x.empty() && pick(rng, 0, 5) == 0) x[0] = 0;
  const bool real = t == DataType::Float || t == DataType::Double || t == DataType::Float16;
  c.add_tensor("x", t, x, rng, real ? -1 : -0.7, real ? 1 : 1.7);  // integers: mostly 0
  if (real) {
    Tensor& v = c.inputs.back().second.tensor();
    const uint64_t count = v.element_count();
    for (uint64_t i = 0; i < count; ++i) {
      const int what = static_cast<int>(pick(rng, 0, 9));
      const double f = what < 5 ? 0.0 : what == 5 ? -0.0 : what == 6 ? NAN : v.element_as_double(i);
      if (t == DataType::Float) v.mutable_data<float>()[i] = static_cast<float>(f);
      else if (t == DataType::Double) v.mutable_data<double>()[i] = f;
      else v.mutable_data<uint16_t>()[i] = float_to_half(static_cast<float>(f));
    }
  }
  c.node("NonZero", {"x"});
  return c;
}

Case constant_of_shape(Rng& rng, const std::string&) {
  Case c(20);
  std::vector<int64_t> dims(static_cast<size_t>(pick(rng, 0, 4)));
  for (auto& d : dims) d = pick(rng, 0, 6) == 0 ? 0 : pick(rng, 1, 7);
  c.index_input("shape", DataType::Int64, {static_cast<int64_t>(dims.size())}, dims);
  auto& n = c.node("ConstantOfShape", {"shape"});
  switch (pick(rng, 0, 6)) {
    case 0: break;  // float zeros
    case 1: attr_tensor(n, "value", make_float_tensor("", {1}, {-2.75f})); break;
    case 2: attr_tensor(n, "value", make_int64_tensor("", {1}, {-1234567890123LL})); break;
    default: {
      const DataType t = choose(rng, std::vector<DataType>{DataType::Int32, DataType::Bool, DataType::Uint8, DataType::Float16,
                                                           DataType::Double, DataType::Int8, DataType::Uint16});
      const unsigned char bytes[8] = {0x01, 0x3c, 0x5a, 0xc3, 0x11, 0x22, 0x33, 0x44};  // bool: the first byte, 1
      const size_t width = dtype_info(t).bits / 8;
      attr_tensor(n, "value", make_tensor_raw("", t, {1}, std::string(reinterpret_cast<const char*>(bytes), width)));
      c.what += std::string(" value of ") + std::string(dtype_name(t));
    }
  }
  return c;
}

Case eye_like(Rng& rng, const std::string&) {
  Case c(20);
  const std::vector<DataType> types = {DataType::Float, DataType::Int32, DataType::Int64, DataType::Bool,
                                       DataType::Uint8, DataType::Double, DataType::Float16, DataType::Int8};
  const DataType in = choose(rng, types);
  const Shape s = {pick(rng, 0, 7), pick(rng, 0, 7)};
  c.add_tensor("x", in, s, rng, 0, 3);
  auto& n = c.node("EyeLike", {"x"});
  if (coin(rng)) {
    const DataType out = choose(rng, types);
    attr_int(n, "dtype", static_cast<int64_t>(out));
    c.what += std::string(" to ") + std::string(dtype_name(out));
  }
  if (coin(rng)) {
    const int64_t k = choose(rng, std::vector<int64_t>{pick(rng, -8, 8), s[1], -s[0], INT64_MAX, INT64_MIN + 1});
    attr_int(n, "k", k);
    c.what += " k=" + std::to_string(k);
  }
  return c;
}

// CenterCropPad: each axis cropped, padded or kept, by even and odd
// differences, on all axes or some (negative ones too).
Case center_crop_pad(Rng& rng, const std::string&) {
  Case c(18);
  const Shape s = random_shape(rng, 1, 4);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Uint8, DataType::Float16});
  c.add_tensor("x", t, s, rng, 0, 9);
  const auto rank = static_cast<int64_t>(s.size());
  std::vector<int64_t> axes, shape;
  const bool some = coin(rng);
  for (int64_t d = 0; d < rank; ++d) {
    if (some && coin(rng)) continue;
    axes.push_back(coin(rng) ? d - rank : d);
    shape.push_back(std::max<int64_t>(0, s[static_cast<size_t>(d)] + pick(rng, -3, 3)));
  }
  if (axes.empty()) {  // at least one axis listed
    axes.push_back(0);
    shape.push_back(s[0] + 1);
  }
  c.index_input("shape", DataType::Int64, {static_cast<int64_t>(shape.size())}, shape);
  auto& n = c.node("CenterCropPad", {"x", "shape"});
  if (some) {
    attr_ints(n, "axes", axes);
    c.what += " axes";
    c.describe_values(axes);
  }
  return c;
}

Case one_hot(Rng& rng, const std::string&) {
  Case c(coin(rng) ? 9 : 11);
  const DataType it = choose(rng, std::vector<DataType>{DataType::Int64, DataType::Int64, DataType::Int32, DataType::Int8, DataType::Uint8, DataType::Uint16});
  const DataType vt = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Int32, DataType::Uint8, DataType::Float16, DataType::Bool});
  const int64_t depth = pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, 7);
  const bool is_signed = dtype_info(it).is_signed;
  const Shape s = random_shape(rng, pick(rng, 0, 5) == 0 ? 0 : 1, 3);
  c.add_tensor("indices", it, s, rng, is_signed ? -static_cast<double>(depth) - 2 : 0, static_cast<double>(depth) + 2);
  c.index_input("depth", DataType::Int64, {}, {depth});
  c.add_tensor("values", vt, {2}, rng, 0, 4);
  auto& n = c.node("OneHot", {"indices", "depth", "values"});
  const auto r = static_cast<int64_t>(s.size());
  if (coin(rng)) attr_int(n, "axis", pick(rng, -r - 1, r));
  c.what += std::string(" of ") + std::string(dtype_name(it)) + " depth " + std::to_string(depth) + " opset " + std::to_string(c.opset);
  return c;
}

Case nms(Rng& rng, const std::string&) {
  Case c(choose(rng, std::vector<int64_t>{10, 11}));
  const int64_t batches = pick(rng, 1, 2), classes = pick(rng, 1, 3);
  const int64_t nb = pick(rng, 0, 5) == 0 ? pick(rng, 40, 70) : pick(rng, 0, 12);
  const bool center = coin(rng);
  c.floats("boxes", {batches, nb, 4}, rng, 0, 10);
  Tensor& bx = c.inputs.back().second.tensor();
  float* b = bx.mutable_data<float>();
  for (int64_t i = 0; i < batches * nb; ++i) {
    float* p = b + i * 4;
    if (center) {  // centers in [0, 10], sizes in [0, 6)
      p[2] = std::fabs(p[2]) * 0.6f;
      p[3] = std::fabs(p[3]) * 0.6f;
    }
    const int64_t what = pick(rng, 0, 11);
    if (what <= 1 && i > 0) std::copy(p - 4, p, p);          // the box before it again: IoU 1, a tie with a threshold of 1
    if (what == 4 && !center) std::swap(p[0], p[2]);         // corners flipped
    if (what == 2) p[center ? 2 : 3] = p[center ? 2 : 1];    // no area
    if (what == 3 && pick(rng, 0, 2) == 0) p[0] = NAN;
  }
  c.floats("scores", {batches, classes, nb}, rng, 0, 1);
  Tensor& sc = c.inputs.back().second.tensor();
  for (uint64_t i = 0; i < sc.element_count(); ++i) {
    float& f = sc.mutable_data<float>()[i];
    const int64_t what = pick(rng, 0, 9);
    if (what < 3) f = std::round(f * 4) / 4;  // ties
    if (what == 3 && pick(rng, 0, 3) == 0) f = NAN;
  }
  std::vector<std::string> in = {"boxes", "scores"};
  const int64_t given = pick(rng, 0, 3);  // how many of the optional inputs
  if (given >= 1) in.push_back(c.ints("max_out", {choose(rng, std::vector<int64_t>{0, 1, 2, pick(rng, 1, nb + 2), 1000})}));
  if (given >= 2) in.push_back(c.float_list("iou", {choose(rng, std::vector<float>{0.f, 0.3f, 0.5f, 0.7f, 1.f, 1.f})}));
  if (given >= 3) in.push_back(c.float_list("score", {choose(rng, std::vector<float>{0.f, 0.25f, 0.5f, 0.9f})}));
  auto& n = c.node("NonMaxSuppression", in);
  if (center) attr_int(n, "center_point_box", 1);
  c.what += center ? " center boxes" : " corner boxes";
  return c;
}

Case compress(Rng& rng, const std::string&) {
  Case c(11);
  const Shape x = random_shape(rng, 1, 4);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Uint8, DataType::Float16});
  c.add_tensor("x", t, x, rng, -9, 9);
  const auto rank = static_cast<int64_t>(x.size());
  const bool has_axis = coin(rng);
  const int64_t axis = has_axis ? pick(rng, -rank, rank - 1) : 0;
  const int64_t dim = has_axis ? x[static_cast<size_t>(axis < 0 ? axis + rank : axis)] : static_cast<int64_t>(count(x));
  const int64_t len = pick(rng, 0, dim);  // shorter than the axis at times
  c.add_tensor("condition", DataType::Bool, {len}, rng, pick(rng, 0, 4) == 0 ? -1 : -0.5, pick(rng, 0, 4) == 0 ? 0 : 1);
  auto& n = c.node("Compress", {"x", "condition"});
  if (has_axis) {
    attr_int(n, "axis", axis);
    c.what += " axis " + std::to_string(axis);
  }
  return c;
}

}  // namespace

void add_value_shaped_generators(std::map<std::string, Generator>& m) {
  m["Range"] = range;
  m["NonZero"] = nonzero;
  m["ConstantOfShape"] = constant_of_shape;
  m["EyeLike"] = eye_like;
  m["OneHot"] = one_hot;
  m["CenterCropPad"] = center_crop_pad;
  m["NonMaxSuppression"] = nms;
  m["Compress"] = compress;
}

}  // namespace onnxscope::test::cuda_cases
