// The CUDA operators' random cases (cuda_op_cases.h), by family.
#include "cuda_op_cases.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace onnxscope::test::cuda_cases {

namespace {

// --- generators, by family ---

Case unary(Rng& rng, const std::string& op) {
  if ((op == "Neg" || op == "Abs" || op == "Sign" || op == "Relu") && pick(rng, 0, 2) == 0) return integer_unary(rng, op);
  Case c(op == "Swish" ? 24 : 20);
  double lo = -3, hi = 3;
  if (op == "Log" || op == "Sqrt") lo = 0.05;
  if (op == "Reciprocal") lo = 0.2;
  if (op == "Asin" || op == "Acos" || op == "Atanh") lo = -0.98, hi = 0.98;
  if (op == "Acosh") lo = 1.02, hi = 5;
  if (op == "Tan") lo = -1.3, hi = 1.3;  // away from the poles
  const DataType t = real_type(rng);
  c.add_tensor("x", t, random_shape(rng, 0, 4), rng, lo, hi);
  c.note_type(t);
  auto& n = c.node(op, {"x"});
  if (op == "LeakyRelu" || op == "Elu" || op == "Celu" || op == "ThresholdedRelu" || op == "HardSigmoid" || op == "Selu" ||
      op == "Swish")
    if (coin(rng)) attr_float(n, "alpha", static_cast<float>(pick(rng, 1, 9)) / 10.f);
  if (op == "Shrink") {
    if (coin(rng)) attr_float(n, "lambd", static_cast<float>(pick(rng, 0, 20)) / 10.f);
    if (coin(rng)) attr_float(n, "bias", static_cast<float>(pick(rng, -10, 10)) / 10.f);
  }
  if (op == "Gelu" && coin(rng)) attr_string(n, "approximate", "tanh");
  return c;
}

Case predicate(Rng& rng, const std::string& op) {
  Case c(20);
  const Shape s = random_shape(rng, 0, 4);
  if (op == "Not") {
    c.add_tensor("x", DataType::Bool, s, rng, -1, 1);
  } else {
    const DataType type = real_type(rng);
    c.add_tensor("x", type, s, rng, -2, 2);
    // NaN and infinities where the predicates have something to find.
    Tensor& t = c.inputs.back().second.tensor();
    const float specials[] = {NAN, INFINITY, -INFINITY};
    for (uint64_t i = 0; i < t.element_count(); i += 3) set_real(t, i, specials[i % 3]);
  }
  auto& n = c.node(op, {"x"});
  if (op == "IsInf" && coin(rng)) attr_int(n, coin(rng) ? "detect_negative" : "detect_positive", 0);
  return c;
}

Case binary(Rng& rng, const std::string& op) {
  const bool logic = op == "And" || op == "Or" || op == "Xor";
  const bool float_only = op == "Pow" || op == "PRelu";
  if ((op == "Max" || op == "Min") && pick(rng, 0, 3) == 0) return variadic(rng, op);
  if (!logic && !float_only && coin(rng)) return integer_binary(rng, op);
  if (op == "Pow" && pick(rng, 0, 2) == 0) return integer_pow(rng, op);
  Case c(20);
  const Shape s = random_shape(rng, 0, 4);
  Shape sa = s, sb = broadcastable(rng, s);
  if (coin(rng)) std::swap(sa, sb);
  const bool float_op = float_only || op == "Div" || op == "Mod";
  DataType t = logic ? DataType::Bool : float_op ? real_type(rng) : choose(rng, std::vector<DataType>{real_type(rng), real_type(rng), DataType::Int32, DataType::Int64});
  if (op == "Equal" && pick(rng, 0, 3) == 0) t = DataType::Bool;
  if (t == DataType::Float16 || t == DataType::BFloat16) c.what += std::string(" of ") + std::string(dtype_name(t));
  double lo = -4, hi = 4;
  if (op == "Pow") lo = 0.2;
  c.add_tensor("a", t, sa, rng, lo, hi);
  if (op == "Pow" && coin(rng)) {  // an exponent of another type (opset 12): integers too, under negative bases
    const DataType te = choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16, DataType::Double, DataType::Int64,
                                                          DataType::Int32, DataType::Int8, DataType::Uint8});
    c = Case(20);
    c.add_tensor("a", t, sa, rng, dtype_info(te).is_integer ? -4 : 0.2, 4);
    c.add_tensor("b", te, sb, rng, te == DataType::Uint8 ? 0 : -3, 3.99);
    c.note_type(t);
    c.what += " exponent of " + std::string(dtype_name(te));
  } else if (op == "Div" || op == "Mod") {
    c.add_tensor("b", t, sb, rng, 0.5, 3);
  } else {
    c.add_tensor("b", t, sb, rng, op == "Pow" ? -2 : lo, op == "Pow" ? 2 : hi);
  }
  if (op == "PRelu") {  // the slope broadcasts to X one way
    c = Case(20);
    c.add_tensor("a", t, s, rng, -2, 2);
    c.add_tensor("b", t, broadcastable(rng, s), rng, -2, 2);
  }
  auto& n = c.node(op, {"a", "b"});
  if (op == "Mod") attr_int(n, "fmod", 1);  // float Mod must be fmod
  return c;
}

Case where(Rng& rng, const std::string&) {
  Case c(20);
  const Shape s = random_shape(rng, 0, 4);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Uint8});
  c.add_tensor("c", DataType::Bool, broadcastable(rng, s), rng, -1, 1);
  c.add_tensor("a", t, broadcastable(rng, s), rng, 0, 100);
  c.add_tensor("b", t, s, rng, 0, 100);
  c.node("Where", {"c", "a", "b"});
  return c;
}

// Clip on every real type, infinities included (they pass a missing bound); integers a third of the time.
Case clip(Rng& rng, const std::string& op) {
  if (pick(rng, 0, 2) == 0) return integer_clip(rng, op);
  const DataType t = real_type(rng);
  Case c(coin(rng) ? 6 : 20);  // opset 6: bounds as attributes
  c.add_tensor("x", t, random_shape(rng, c.opset == 6 ? 1 : 0, 4), rng, -2, 2);
  Tensor& x = c.inputs.back().second.tensor();
  for (uint64_t i = 0; i < x.element_count(); i += 4) set_real(x, i, i % 8 == 0 ? INFINITY : -INFINITY);
  c.what += std::string(" of ") + std::string(dtype_name(t));
  if (c.opset == 6) {
    auto& n = c.node("Clip", {"x"});
    if (coin(rng)) attr_float(n, "min", -0.5f);
    if (coin(rng)) attr_float(n, "max", 0.7f);
    return c;
  }
  auto scalar = [&](const std::string& name, float v) {  // of x's type
    std::string raw;
    if (t == DataType::Float) raw.assign(reinterpret_cast<const char*>(&v), 4);
    else {
      const uint16_t h = t == DataType::Float16 ? float_to_half(v) : float_to_bfloat16(v);
      raw.assign(reinterpret_cast<const char*>(&h), 2);
    }
    c.m.initializer(make_tensor_raw(name, t, {}, raw));
    return name;
  };
  std::vector<std::string> in = {"x"};
  const int form = static_cast<int>(pick(rng, 0, 2));
  in.push_back(form == 1 ? std::string() : scalar("lo", -0.5f));
  if (form != 2) in.push_back(scalar("hi", 0.6f));
  c.node("Clip", in);
  return c;
}

// Cast between every type the device takes: values out of an integer
// target's range too (wrapped as the reference's numpy does on x86), past
// float8's range with and without saturate, and doubles just past a tie of
// the narrow formats, which a float16 (bfloat16, float8) rounds wrongly when
// rounded twice through float32.
// A packed type (int4, uint4, int2, uint2, float4e2m1) to or from any Cast
// type, or to another packed one (opset 25); odd counts leave a half-used
// last byte.
Case packed_cast(Rng& rng) {
  Case c(25);
  const std::vector<DataType> packed = {DataType::Int4, DataType::Uint4, DataType::Int2, DataType::Uint2, DataType::Float4E2M1};
  const std::vector<DataType> other = {DataType::Float, DataType::Double, DataType::Float16, DataType::BFloat16, DataType::Int8,
                                       DataType::Int32, DataType::Uint8, DataType::Int64, DataType::Bool, DataType::Float8E4M3FN};
  // 0: from packed, 1: to packed, 2: packed to packed, 3: doubles next to float4's ties
  const int dir = static_cast<int>(pick(rng, 0, 3));
  DataType f = dir == 1 ? choose(rng, other) : choose(rng, packed);
  DataType t = dir == 0 ? choose(rng, other) : choose(rng, packed);
  if (dir == 3) f = DataType::Double, t = DataType::Float4E2M1;
  double lo = -100, hi = 100;  // past the packed targets' ranges: the low bits are kept
  if (f == DataType::Int4) lo = -8, hi = 7.99;
  if (f == DataType::Uint4) lo = 0, hi = 15.99;
  if (f == DataType::Int2) lo = -2, hi = 1.99;
  if (f == DataType::Uint2) lo = 0, hi = 3.99;
  if (f == DataType::Float4E2M1 || f == DataType::Float8E4M3FN) lo = -7, hi = 7;
  if (f == DataType::Uint8 || f == DataType::Bool) lo = 0;
  c.add_tensor("x", f, random_shape(rng, 0, 3, 7), rng, lo, hi);
  if (f == DataType::Double && t == DataType::Float4E2M1) {  // just past float4's ties: rounded twice through float32 they would tie
    Tensor& x = c.inputs.back().second.tensor();
    for (uint64_t i = 0; i < x.element_count(); i += 2)
      x.mutable_data<double>()[i] = (coin(rng) ? -1 : 1) * (choose(rng, std::vector<double>{0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5}) + std::ldexp(1.0, -40));
  }
  attr_int(c.node("Cast", {"x"}), "to", static_cast<int64_t>(t));
  c.what += std::string(" of ") + std::string(dtype_name(f)) + " to " + std::string(dtype_name(t));
  return c;
}

Case cast(Rng& rng, const std::string&) {
  if (pick(rng, 0, 3) == 0) return packed_cast(rng);
  Case c(21);
  const std::vector<DataType> types = {DataType::Float,   DataType::Double, DataType::Float16, DataType::BFloat16,
                                       DataType::Int8,    DataType::Int16,  DataType::Int32,   DataType::Int64,
                                       DataType::Uint8,   DataType::Uint16, DataType::Bool,    DataType::Float8E4M3FN,
                                       DataType::Float8E4M3FNUZ, DataType::Float8E5M2, DataType::Float8E5M2FNUZ};
  const std::vector<DataType> narrow = {DataType::Float16, DataType::BFloat16, DataType::Float8E4M3FN,
                                        DataType::Float8E4M3FNUZ, DataType::Float8E5M2, DataType::Float8E5M2FNUZ};
  const int form = static_cast<int>(pick(rng, 0, 3));  // 2: doubles near ties, 3: past float8's range
  DataType f = choose(rng, types), t = choose(rng, types);
  if (form == 2) f = DataType::Double, t = choose(rng, narrow);
  if (form == 3) f = choose(rng, std::vector<DataType>{DataType::Float, DataType::Double}), t = choose(rng, narrow);
  const double range = form == 3 ? 7e4 : dtype_info(f).is_float ? choose(rng, std::vector<double>{100, 100, 7e4, 1e12, 1e20}) : 100;
  c.add_tensor("x", f, random_shape(rng, 0, 3), rng, -range, range);
  if (form == 2) {
    Tensor& x = c.inputs.back().second.tensor();
    for (uint64_t i = 0; i < x.element_count(); i += 2) {  // 1 + 2^-m + 2^-40: m = 11 float16, 8 bfloat16, 4 and 3 float8
      const double tie = 1.0 + std::ldexp(1.0, -static_cast<int>(choose(rng, std::vector<int64_t>{3, 4, 8, 11})));
      x.mutable_data<double>()[i] = (coin(rng) ? -1 : 1) * std::ldexp(tie + std::ldexp(1.0, -40), static_cast<int>(pick(rng, -3, 3)));
    }
  }
  auto& n = c.node("Cast", {"x"});
  attr_int(n, "to", static_cast<int64_t>(t));
  if (coin(rng)) attr_int(n, "saturate", 0);
  c.what += std::string(" to ") + std::string(dtype_name(t)) + " range " + std::to_string(range);
  return c;
}

// CastLike: Cast to the type of a second input (of any shape; its values unused).
Case cast_like(Rng& rng, const std::string&) {
  Case c(20);
  const std::vector<DataType> types = {DataType::Float, DataType::Int32, DataType::Int64, DataType::Bool,
                                       DataType::Uint8, DataType::Double, DataType::Int8, DataType::Uint16};
  const DataType f = choose(rng, types), t = choose(rng, types);
  const bool to_unsigned = t == DataType::Uint8 || t == DataType::Uint16;
  c.add_tensor("x", f, random_shape(rng, 0, 3), rng, to_unsigned || f == DataType::Uint8 || f == DataType::Uint16 ? 0 : -100, 100);
  c.add_tensor("like", t, random_shape(rng, 0, 2), rng, 0, 2);
  c.node("CastLike", {"x", "like"});
  c.what += std::string(" to ") + std::string(dtype_name(t));
  return c;
}

Case batchnorm(Rng& rng, const std::string&) {
  Case c(15);
  Shape s = random_shape(rng, 2, 4);
  const int64_t ch = s[1];
  // X of a real type; scale and B (T1), mean and var (T2) of X's type or of their own (opset 15).
  const DataType t = real_type(rng), t1 = coin(rng) ? t : real_type(rng), t2 = coin(rng) ? t : real_type(rng);
  c.add_tensor("x", t, s, rng, -2, 2);
  c.add_tensor("scale", t1, {ch}, rng, -2, 2);
  c.add_tensor("bias", t1, {ch}, rng, -2, 2);
  c.add_tensor("mean", t2, {ch}, rng, -2, 2);
  c.add_tensor("var", t2, {ch}, rng, 0.1, 2);
  c.note_type(t);
  c.rounds_apart = t != DataType::Float;  // the device folds scale and variance into one float32 factor
  auto& n = c.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"});
  if (coin(rng)) attr_float(n, "epsilon", 1e-3f);
  return c;
}

Case layernorm(Rng& rng, const std::string&) {
  Case c(17);
  const Shape s = random_shape(rng, 1, 4, 12);
  const int64_t rank = static_cast<int64_t>(s.size());
  const int64_t axis = pick(rng, -rank, rank - 1);
  const int64_t a = axis < 0 ? axis + rank : axis;
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -2, 2);
  Shape ns(s.begin() + a, s.end());
  c.add_tensor("scale", t, ns, rng, -2, 2);
  std::vector<std::string> in = {"x", "scale"};
  if (coin(rng)) in.push_back(c.add_tensor("bias", t, ns, rng, -2, 2));
  const int outputs = static_cast<int>(pick(rng, 1, 3));
  auto& n = c.node("LayerNormalization", in, outputs);
  attr_int(n, "axis", axis);
  c.rounds_apart = t != DataType::Float;
  c.note_type(t);
  return c;
}

Case softmax(Rng& rng, const std::string& op) {
  Case c(coin(rng) ? 13 : 11);  // 11: over the 2-D flattening at axis
  const Shape s = random_shape(rng, 1, 4, 9);
  const int64_t rank = static_cast<int64_t>(s.size());
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -5, 5);
  auto& n = c.node(op, {"x"});
  attr_int(n, "axis", pick(rng, -rank, rank - 1));
  c.note_type(t);
  return c;
}

Case reduce(Rng& rng, const std::string& op) {
  // A quarter of ReduceMax's and ReduceMin's cases on bool (opset 20: any,
  // all), zero-sized dims (an empty set) included.
  const bool boolean = (op == "ReduceMax" || op == "ReduceMin") && pick(rng, 0, 3) == 0;
  const bool modern = boolean || coin(rng);
  Case c(boolean ? 20 : modern ? 18 : 13);
  Shape s = random_shape(rng, 1, 4);
  if (boolean && coin(rng)) s[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(s.size()) - 1))] = 0;
  const int64_t rank = static_cast<int64_t>(s.size());
  double lo = -2, hi = 2;
  if (op == "ReduceLogSum") lo = 0.1;
  if (op == "ReduceProd") lo = 0.5, hi = 1.5;
  const DataType t = boolean ? DataType::Bool : real_type(rng);
  c.add_tensor("x", t, s, rng, lo, hi);
  c.note_type(t);
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    if (coin(rng)) axes.push_back(coin(rng) ? d : d - rank);
  const bool axes_input = modern || op == "ReduceSum";
  std::vector<std::string> in = {"x"};
  if (axes_input && !axes.empty()) in.push_back(c.ints("axes", axes));
  auto& n = c.node(op, in);
  if (!axes_input && !axes.empty()) attr_ints(n, "axes", axes);
  if (coin(rng)) attr_int(n, "keepdims", 0);
  return c;
}

Case pool(Rng& rng, const std::string& op) {
  Case c(19);
  const int64_t r = pick(rng, 1, 3);
  Shape s = {pick(rng, 1, 2), pick(rng, 1, 3)};
  std::vector<int64_t> kernel, strides, pads(static_cast<size_t>(2 * r)), dil;
  for (int64_t d = 0; d < r; ++d) {
    s.push_back(pick(rng, 5, r == 3 ? 6 : 9));  // at least the widest window (3 taps, dilation 2)
    kernel.push_back(pick(rng, 1, 3));
    strides.push_back(pick(rng, 1, 2));
    dil.push_back(pick(rng, 1, 2));
  }
  for (int64_t d = 0; d < r; ++d) {
    pads[static_cast<size_t>(d)] = pick(rng, 0, kernel[static_cast<size_t>(d)] - 1);
    pads[static_cast<size_t>(d + r)] = pick(rng, 0, kernel[static_cast<size_t>(d)] - 1);
  }
  // MaxPool on int8 / uint8 too (small ranges: ties, which decide Indices).
  const DataType t = op == "MaxPool" && pick(rng, 0, 3) == 0 ? choose(rng, std::vector<DataType>{DataType::Int8, DataType::Uint8})
                                                           : real_type(rng);
  c.add_tensor("x", t, s, rng, is_real(t) ? -2 : -4, is_real(t) ? 2 : 4);
  c.note_type(t);
  if (op == "MaxPool" && is_real(t) && coin(rng)) nan_some(c.inputs.back().second.tensor(), rng);
  const bool indices = op == "MaxPool" && coin(rng);
  auto& n = c.node(op, {"x"}, indices ? 2 : 1);
  if (indices && coin(rng)) attr_int(n, "storage_order", 1);
  if (indices) c.what += " with Indices";
  attr_ints(n, "kernel_shape", kernel);
  attr_ints(n, "strides", strides);
  if (coin(rng)) attr_ints(n, "pads", pads);
  else if (coin(rng)) attr_string(n, "auto_pad", choose(rng, std::vector<std::string>{"SAME_UPPER", "SAME_LOWER", "VALID"}));
  if (coin(rng)) attr_ints(n, "dilations", dil);
  if (coin(rng)) attr_int(n, "ceil_mode", 1);
  if (op == "AveragePool" && coin(rng)) attr_int(n, "count_include_pad", 1);
  if (op == "LpPool" && coin(rng)) attr_int(n, "p", pick(rng, 1, 3));
  return c;
}

Case global_pool(Rng& rng, const std::string& op) {
  Case c(17);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, random_shape(rng, 3, 5), rng, -2, 2);
  c.note_type(t);
  auto& n = c.node(op, {"x"});
  if (op == "GlobalLpPool" && coin(rng)) attr_int(n, "p", pick(rng, 1, 3));
  return c;
}

Case conv(Rng& rng, const std::string&) {
  Case c(17);
  c.loose = true;
  const int64_t r = pick(rng, 1, 3);
  const int64_t groups = choose(rng, std::vector<int64_t>{1, 1, 2, 3});
  // Now and then no input channels: the output is the bias alone.
  const int64_t cin = pick(rng, 0, 7) == 0 ? 0 : groups * pick(rng, 1, 3), cout = groups * pick(rng, 1, 3);
  Shape x = {pick(rng, 1, 2), cin}, w = {cout, cin / groups};
  std::vector<int64_t> strides, dil, pads(static_cast<size_t>(2 * r));
  for (int64_t d = 0; d < r; ++d) {
    const int64_t k = pick(rng, 1, 3);
    x.push_back(pick(rng, k + 2, r == 3 ? 6 : 10));
    w.push_back(k);
    strides.push_back(pick(rng, 1, 2));
    dil.push_back(pick(rng, 1, 2));
  }
  for (auto& p : pads) p = pick(rng, 0, 2);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, x, rng, -2, 2);
  c.add_tensor("w", t, w, rng, -2, 2);
  std::vector<std::string> in = {"x", "w"};
  if (coin(rng)) in.push_back(c.add_tensor("b", t, {cout}, rng, -2, 2));
  c.note_type(t);
  auto& n = c.node("Conv", in);
  attr_int(n, "group", groups);
  attr_ints(n, "strides", strides);
  if (coin(rng)) attr_ints(n, "dilations", dil);
  const int padding = static_cast<int>(pick(rng, 0, 2));
  if (padding == 1) attr_ints(n, "pads", pads);  // asymmetric ones included
  if (padding == 2) attr_string(n, "auto_pad", choose(rng, std::vector<std::string>{"SAME_UPPER", "SAME_LOWER", "VALID"}));
  return c;
}

Case matmul(Rng& rng, const std::string&) {
  Case c(17);
  c.loose = true;
  const int64_t m = pick(rng, 1, 9), k = pick(rng, 0, 9), n = pick(rng, 1, 9);  // k 0: sums over nothing
  const int form = static_cast<int>(pick(rng, 0, 4));
  Shape a = {m, k}, b = {k, n};
  if (form == 1) {  // batched, B a matrix
    a.insert(a.begin(), {pick(rng, 1, 3), pick(rng, 1, 3)});
  } else if (form == 2) {  // batched, same batch dims
    const int64_t bt = pick(rng, 1, 4);
    a.insert(a.begin(), bt);
    b.insert(b.begin(), bt);
  } else if (form == 3) {  // broadcast batch dims
    a.insert(a.begin(), {pick(rng, 1, 3), 1});
    b.insert(b.begin(), {1, pick(rng, 2, 3)});
  } else if (form == 4) {  // 1-D operands
    if (coin(rng)) a = {k};
    else b = {k};
  }
  const DataType t = real_type(rng);
  c.add_tensor("a", t, a, rng, -2, 2);
  c.add_tensor("b", t, b, rng, -2, 2);
  c.node("MatMul", {"a", "b"});
  c.note_type(t);
  return c;
}

Case gemm(Rng& rng, const std::string&) {
  Case c(13);
  c.loose = true;
  const int64_t m = pick(rng, 1, 9), k = pick(rng, 0, 9), n = pick(rng, 1, 9);  // k 0: sums over nothing
  const bool ta = coin(rng), tb = coin(rng);
  const DataType t = real_type(rng);
  c.add_tensor("a", t, ta ? Shape{k, m} : Shape{m, k}, rng, -2, 2);
  c.add_tensor("b", t, tb ? Shape{n, k} : Shape{k, n}, rng, -2, 2);
  std::vector<std::string> in = {"a", "b"};
  if (coin(rng)) in.push_back(c.add_tensor("c", t, choose(rng, std::vector<Shape>{{n}, {1, n}, {m, n}, {m, 1}, {}}), rng, -2, 2));
  auto& node = c.node("Gemm", in);
  c.note_type(t);
  if (ta) attr_int(node, "transA", 1);
  if (tb) attr_int(node, "transB", 1);
  if (coin(rng)) attr_float(node, "alpha", 0.5f);
  if (coin(rng)) attr_float(node, "beta", coin(rng) ? 0.f : 2.f);
  return c;
}

Case view(Rng& rng, const std::string& op) {
  const bool legacy = coin(rng) && (op == "Squeeze" || op == "Unsqueeze");
  Case c(legacy ? 11 : 17);
  Shape s = random_shape(rng, 1, 4);
  if (op == "Squeeze") s.insert(s.begin() + pick(rng, 0, static_cast<int64_t>(s.size())), 1);
  const int64_t rank = static_cast<int64_t>(s.size());
  c.add_tensor("x", choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Bool}), s, rng, -9, 9);
  if (op == "Reshape") {
    std::vector<int64_t> target = {static_cast<int64_t>(count(s))};
    if (rank >= 2 && coin(rng)) target = {0, -1};
    else if (coin(rng)) target = {-1, 1};
    c.node("Reshape", {"x", c.ints("shape", target)});
  } else if (op == "Flatten") {
    attr_int(c.node("Flatten", {"x"}), "axis", pick(rng, -rank, rank));
  } else if (op == "Squeeze" || op == "Unsqueeze") {
    std::vector<int64_t> axes;
    if (op == "Squeeze") {
      for (int64_t d = 0; d < rank; ++d)
        if (s[static_cast<size_t>(d)] == 1 && (axes.empty() || coin(rng))) axes.push_back(coin(rng) ? d : d - rank);
    } else {
      axes = {pick(rng, -(rank + 1), rank)};
    }
    if (legacy) attr_ints(c.node(op, {"x"}), "axes", axes);
    else c.node(op, {"x", c.ints("axes", axes)});
  } else {
    c.node("Identity", {"x"});
  }
  return c;
}

Case movement(Rng& rng, const std::string& op) {
  Case c(18);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Bool, DataType::Int32});
  const Shape s = random_shape(rng, 1, 5, 5);
  const int64_t rank = static_cast<int64_t>(s.size());
  if (op == "Transpose") {
    c.add_tensor("x", t, s, rng, -9, 9);
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    auto& n = c.node("Transpose", {"x"});
    if (coin(rng)) attr_ints(n, "perm", perm);
  } else if (op == "Slice") {
    c.add_tensor("x", t, s, rng, -9, 9);
    std::vector<int64_t> starts, ends, axes, steps;
    for (int64_t d = 0; d < rank; ++d) {
      if (coin(rng)) continue;
      const int64_t dim = s[static_cast<size_t>(d)];
      axes.push_back(coin(rng) ? d : d - rank);
      starts.push_back(pick(rng, -dim - 2, dim + 2));
      ends.push_back(coin(rng) ? pick(rng, -dim - 2, dim + 2) : (coin(rng) ? INT64_MAX : INT64_MIN));
      steps.push_back(choose(rng, std::vector<int64_t>{1, 1, 2, -1, -2, 3}));
    }
    if (starts.empty()) {
      axes = {0};
      starts = {0};
      ends = {s[0]};
      steps = {1};
    }
    c.node("Slice", {"x", c.ints("starts", starts), c.ints("ends", ends), c.ints("axes", axes), c.ints("steps", steps)});
  } else if (op == "Concat") {
    const int64_t axis = pick(rng, -rank, rank - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    std::vector<std::string> in;
    for (int i = 0, k = static_cast<int>(pick(rng, 1, 3)); i < k; ++i) {
      Shape p = s;
      p[a] = pick(rng, 0, 4);
      in.push_back(c.add_tensor(std::string("x").append(std::to_string(i)), t, p, rng, -9, 9));
    }
    attr_int(c.node("Concat", in), "axis", axis);
  } else if (op == "Split") {
    const int64_t axis = pick(rng, -rank, rank - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    Shape p = s;
    p[a] = pick(rng, 2, 7);
    c.add_tensor("x", t, p, rng, -9, 9);
    std::vector<int64_t> sizes = {pick(rng, 0, p[a])};
    sizes.push_back(p[a] - sizes[0]);
    if (coin(rng)) {
      auto& n = c.node("Split", {"x", c.ints("split", sizes)}, 2);
      attr_int(n, "axis", axis);
    } else {
      auto& n = c.node("Split", {"x"}, 2);
      attr_int(n, "axis", axis);
      attr_int(n, "num_outputs", 2);
    }
  } else if (op == "Expand") {
    const Shape from = broadcastable(rng, s);
    c.add_tensor("x", t, from, rng, -9, 9);
    std::vector<int64_t> target(s.begin(), s.end());
    if (!target.empty() && coin(rng)) target[0] = 1;  // a 1 in the target keeps x's dim
    c.node("Expand", {"x", c.ints("shape", target)});
  } else if (op == "Gather") {
    c.add_tensor("x", t, s, rng, -9, 9);
    const int64_t axis = pick(rng, -rank, rank - 1);
    const int64_t dim = s[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    // Constant indices (uploaded at prepare) or an input of either index type, of rank 0 to 2.
    Shape is;
    for (int64_t d = pick(rng, 0, 2); d > 0; --d) is.push_back(pick(rng, 1, 3));
    std::vector<int64_t> idx(static_cast<size_t>(count(is)));
    for (auto& i : idx) i = pick(rng, -dim, dim - 1);
    std::string indices;
    if (is.size() == 1 && coin(rng)) indices = c.ints("idx", idx);
    else indices = c.index_input("idx", coin(rng) ? DataType::Int32 : DataType::Int64, is, idx);
    attr_int(c.node("Gather", {"x", indices}), "axis", axis);
  } else if (op == "GatherND") {
    c.add_tensor("x", t, s, rng, -9, 9);
    const int64_t b = pick(rng, 0, rank - 1);  // batch dims
    const int64_t k = pick(rng, 1, rank - b);  // index tuple length
    Shape is(s.begin(), s.begin() + b);
    for (int64_t d = pick(rng, 0, 2); d > 0; --d) is.push_back(pick(rng, 1, 3));
    is.push_back(k);
    std::vector<int64_t> idx(static_cast<size_t>(count(is)));
    for (size_t i = 0; i < idx.size(); ++i) {
      const int64_t dim = s[static_cast<size_t>(b) + i % static_cast<size_t>(k)];
      idx[i] = pick(rng, -dim, dim - 1);
    }
    attr_int(c.node("GatherND", {"x", c.index_input("idx", DataType::Int64, is, idx)}), "batch_dims", b);
  }
  return c;
}

// GatherElements, ScatterElements (and Scatter, its opset 10 name) and
// ScatterND. Without a reduction the indices are distinct (duplicates are
// undefined by the spec, and on a GPU any one of them wins); with one they
// may repeat, so that several updates meet at one place.
Case indexed(Rng& rng, const std::string& op) {
  const std::string red = op == "Scatter" || op == "GatherElements"
                              ? "none"
                              : choose(rng, std::vector<std::string>{"none", "none", "add", "mul", "max", "min"});
  Case c(op == "Scatter" ? 10 : 18);
  const DataType t = red != "none" ? DataType::Float
                                   : choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Bool,
                                                                       DataType::Int32});
  const Shape s = random_shape(rng, 1, 4, 5);
  const auto rank = static_cast<int64_t>(s.size());
  c.add_tensor("x", t, s, rng, -9, 9);
  const DataType it = op == "ScatterND" || coin(rng) ? DataType::Int64 : DataType::Int32;
  auto shifted = [&](int64_t v, int64_t dim) { return coin(rng) ? v - dim : v; };  // negative half the time
  Shape is;
  std::vector<int64_t> idx;
  if (op == "ScatterND") {
    const int64_t k = pick(rng, 1, rank);
    for (int64_t d = pick(rng, 1, 2); d > 0; --d) is.push_back(pick(rng, 1, 3));
    // Every tuple of data's first k dims, shuffled: distinct tuples first.
    std::vector<std::vector<int64_t>> tuples(1);
    for (int64_t d = 0; d < k; ++d) {
      std::vector<std::vector<int64_t>> longer;
      for (const auto& tu : tuples)
        for (int64_t v = 0; v < s[static_cast<size_t>(d)]; ++v) {
          longer.push_back(tu);
          longer.back().push_back(v);
        }
      tuples = std::move(longer);
    }
    std::shuffle(tuples.begin(), tuples.end(), rng);
    if (red == "none") is[0] = std::min<int64_t>(is[0], static_cast<int64_t>(tuples.size()) / static_cast<int64_t>(count(is) / static_cast<uint64_t>(is[0])));
    if (is[0] < 1) is = {1};
    const auto n = count(is);
    for (uint64_t q = 0; q < n; ++q) {
      const auto& tu = tuples[red == "none" ? q % tuples.size() : static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(tuples.size()) - 1))];
      for (int64_t d = 0; d < k; ++d) idx.push_back(shifted(tu[static_cast<size_t>(d)], s[static_cast<size_t>(d)]));
    }
    Shape us = is;
    us.insert(us.end(), s.begin() + k, s.end());
    is.push_back(k);
    const std::string indices = c.index_input("idx", it, is, idx);
    c.add_tensor("u", t, us, rng, -9, 9);
    auto& n_ = c.node(op, {"x", indices, "u"});
    if (red != "none" || coin(rng)) attr_string(n_, "reduction", red);
    c.what += " reduction=" + red;
    return c;
  }
  const int64_t axis = pick(rng, -rank, rank - 1);
  const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  for (size_t d = 0; d < s.size(); ++d) is.push_back(pick(rng, 1, s[d]));
  if (op == "GatherElements") is[a] = pick(rng, 1, 4);
  if (red != "none") is[a] = pick(rng, 1, s[a] + 2);
  // One column (all coordinates but the axis) at a time, in indices order:
  // distinct values down each column without a reduction.
  idx.resize(count(is));
  Shape outer = is;
  outer[a] = 1;
  int64_t inner = 1;
  for (size_t d = a + 1; d < is.size(); ++d) inner *= is[d];
  for (uint64_t col = 0; col < count(outer); ++col) {
    std::vector<int64_t> perm(static_cast<size_t>(s[a]));
    for (size_t v = 0; v < perm.size(); ++v) perm[v] = static_cast<int64_t>(v);
    std::shuffle(perm.begin(), perm.end(), rng);
    const auto o = static_cast<int64_t>(col) / inner, r = static_cast<int64_t>(col) % inner;
    for (int64_t j = 0; j < is[a]; ++j) {
      const int64_t v = op == "GatherElements" || red != "none" ? pick(rng, 0, s[a] - 1) : perm[static_cast<size_t>(j)];
      idx[static_cast<size_t>((o * is[a] + j) * inner + r)] = shifted(v, s[a]);
    }
  }
  const std::string indices = c.index_input("idx", it, is, idx);
  if (op == "GatherElements") {
    attr_int(c.node(op, {"x", indices}), "axis", axis);
    return c;
  }
  c.add_tensor("u", t, is, rng, -9, 9);
  auto& n_ = c.node(op, {"x", indices, "u"});
  attr_int(n_, "axis", axis);
  if (red != "none" || (op != "Scatter" && coin(rng))) attr_string(n_, "reduction", red);
  c.what += " reduction=" + red;
  return c;
}

// Pad (constant mode; pads that grow and crop, axes, a constant) and Tile.
Case pad_tile(Rng& rng, const std::string& op) {
  Case c(op == "Pad" ? choose(rng, std::vector<int64_t>{11, 18, 19}) : 18);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Bool, DataType::Int32});
  const Shape s = random_shape(rng, op == "Pad" ? 0 : 1, 4, 5);
  const auto rank = static_cast<int64_t>(s.size());
  c.add_tensor("x", t, s, rng, -9, 9);
  if (op == "Tile") {
    std::vector<int64_t> repeats;
    for (int64_t d = 0; d < rank; ++d) repeats.push_back(pick(rng, 0, 3));
    if (coin(rng)) std::fill(repeats.begin(), repeats.end(), 2);
    c.node("Tile", {"x", c.ints("repeats", repeats)});
    return c;
  }
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    if (c.opset < 18 || coin(rng)) axes.push_back(coin(rng) ? d : d - rank);
  // edge, wrap and reflect need every padded dim non-empty; reflect and wrap repeat past the dim.
  std::string mode = choose(rng, std::vector<std::string>{"constant", "constant", "edge", "reflect", "wrap"});
  if (mode == "wrap" && c.opset < 19) mode = "reflect";
  for (int64_t d : s)
    if (d == 0) mode = "constant";
  std::vector<int64_t> pads(2 * axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = s[static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i])];
    const int64_t grow = mode == "constant" ? 3 : 2 * dim + 1;
    pads[i] = pick(rng, -dim / 2, grow);                 // begin: crop up to half, or grow
    pads[axes.size() + i] = pick(rng, -(dim - dim / 2), grow);  // end
  }
  std::vector<std::string> in = {"x", c.ints("pads", pads)};
  if (coin(rng)) {  // a constant of data's type
    c.add_tensor("value", t, {}, rng, -9, 9);
    in.push_back("value");
  } else if (c.opset >= 18 && !axes.empty()) {
    in.push_back("");
  }
  if (c.opset >= 18 && (axes.size() != static_cast<size_t>(rank) || coin(rng))) {
    if (in.size() == 2) in.push_back("");
    in.push_back(c.ints("axes", axes));
  }
  auto& n = c.node("Pad", in);
  if (mode != "constant" || coin(rng)) attr_string(n, "mode", mode);
  c.what += " " + mode + " opset " + std::to_string(c.opset);
  return c;
}

// InstanceNormalization, GroupNormalization (opset 18: a scale per group;
// 21: per channel); spatial dims of any count, zero-sized ones included.
Case group_norm(Rng& rng, const std::string& op) {
  const bool instance = op == "InstanceNormalization";
  Case c(instance ? 17 : choose(rng, std::vector<int64_t>{18, 21}));
  const int64_t groups = instance ? 0 : pick(rng, 1, 3);
  const int64_t channels = instance ? pick(rng, 1, 5) : groups * pick(rng, 1, 3);
  Shape x = {pick(rng, 1, 3), channels};
  for (int64_t d = pick(rng, 0, 3); d > 0; --d) x.push_back(pick(rng, 0, 9) == 0 ? 0 : pick(rng, 1, 7));
  const DataType t = real_type(rng);
  c.add_tensor("x", t, x, rng, -2, 2);
  const int64_t params = instance || c.opset >= 21 ? channels : groups;
  c.add_tensor("scale", t, {params}, rng, -2, 2);
  c.add_tensor("bias", t, {params}, rng, -2, 2);
  c.note_type(t);
  c.rounds_apart = t != DataType::Float;  // float32 statistics, the reference's in double
  auto& n = c.node(op, {"x", "scale", "bias"});
  if (!instance) attr_int(n, "num_groups", groups);
  if (coin(rng)) attr_float(n, "epsilon", 1e-2f);
  return c;
}

// RMSNormalization over [axis, rank), scale the normalized dims (with a
// leading 1 sometimes) or one element.
Case rms_norm(Rng& rng, const std::string&) {
  Case c(23);
  const Shape x = random_shape(rng, 1, 4);
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t axis = pick(rng, -rank, rank - 1);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, x, rng, -2, 2);
  Shape scale(x.begin() + (axis < 0 ? axis + rank : axis), x.end());
  const int kind = static_cast<int>(pick(rng, 0, 3));
  if (kind == 0) scale = {1};
  if (kind == 1 && scale.size() < x.size()) scale.insert(scale.begin(), 1);
  c.add_tensor("scale", t, scale, rng, -2, 2);
  auto& n = c.node("RMSNormalization", {"x", "scale"});
  attr_int(n, "axis", axis);
  if (coin(rng)) attr_float(n, "epsilon", 1e-2f);
  c.note_type(t);
  return c;
}

// DepthToSpace (DCR, CRD) and SpaceToDepth of every element width.
Case depth_space(Rng& rng, const std::string& op) {
  Case c(13);
  const int64_t b = pick(rng, 1, 3);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Bool, DataType::Uint8});
  Shape x = {pick(rng, 1, 2), 0, 0, 0};
  if (op == "DepthToSpace") {
    x[1] = b * b * pick(rng, 1, 3);
    x[2] = pick(rng, 1, 4);
    x[3] = pick(rng, 1, 4);
  } else {
    x[1] = pick(rng, 1, 3);
    x[2] = b * pick(rng, 1, 3);
    x[3] = b * pick(rng, 1, 3);
  }
  c.add_tensor("x", t, x, rng, -9, 9);
  auto& n = c.node(op, {"x"});
  attr_int(n, "blocksize", b);
  if (op == "DepthToSpace" && coin(rng)) attr_string(n, "mode", coin(rng) ? "CRD" : "DCR");
  return c;
}

// Trilu, upper or lower, with k (an int64 scalar) beyond the matrix at times.
Case trilu(Rng& rng, const std::string&) {
  Case c(14);
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Int32, DataType::Bool, DataType::Uint8});
  const Shape x = random_shape(rng, 2, 4);
  c.add_tensor("x", t, x, rng, -9, 9);
  std::vector<std::string> in = {"x"};
  if (coin(rng)) in.push_back(c.ints("k", {pick(rng, -7, 7)}, true));
  auto& n = c.node("Trilu", in);
  if (coin(rng)) attr_int(n, "upper", pick(rng, 0, 1));
  return c;
}

// ArgMax, ArgMin: small integer values so that ties happen (select_last_index
// decides them), NaN among the floats.
Case arg_extreme(Rng& rng, const std::string& op) {
  Case c(choose(rng, std::vector<int64_t>{11, 13}));
  const DataType t = choose(rng, std::vector<DataType>{real_type(rng), DataType::Int32, DataType::Int64});
  const Shape x = random_shape(rng, 0, 4);
  c.add_tensor("x", t, x, rng, -3, 3);
  c.note_type(t);
  if (is_real(t) && coin(rng)) {
    Tensor& v = c.inputs.back().second.tensor();
    for (uint64_t i = 0; i < v.element_count(); i += 4) set_real(v, i, NAN);
  }
  auto& n = c.node(op, {"x"});
  const auto rank = static_cast<int64_t>(x.size());
  if (rank > 0 && coin(rng)) attr_int(n, "axis", pick(rng, -rank, rank - 1));
  if (coin(rng)) attr_int(n, "keepdims", 0);
  if (c.opset >= 12 && coin(rng)) attr_int(n, "select_last_index", 1);
  return c;
}

// CumSum (opset 14: float64 too) and CumProd (opset 26), exclusive and
// reverse, the axis an int32 or int64 scalar.
Case cumulative(Rng& rng, const std::string& op) {
  Case c(op == "CumProd" ? 26 : 14);
  const DataType t = choose(rng, std::vector<DataType>{real_type(rng), DataType::Double, DataType::Int32, DataType::Int64});
  Shape x = random_shape(rng, 1, 4);
  if (pick(rng, 0, 7) == 0) x[0] = 0;
  c.add_tensor("x", t, x, rng, op == "CumProd" ? -1.5 : -9, op == "CumProd" ? 1.5 : 9);
  c.note_type(t);
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t axis = pick(rng, -rank, rank - 1);
  std::string a = "axis";
  if (coin(rng)) {
    const auto v = static_cast<int32_t>(axis);
    c.m.initializer(make_tensor_raw(a, DataType::Int32, {}, std::string(reinterpret_cast<const char*>(&v), 4)));
    c.what += " axis=" + std::to_string(axis) + " (int32)";
  } else {
    c.ints(a, {axis}, true);
  }
  auto& n = c.node(op, {"x", a});
  if (coin(rng)) attr_int(n, "exclusive", 1);
  if (coin(rng)) attr_int(n, "reverse", 1);
  return c;
}

// ConvTranspose: groups, strides, dilations, output_padding, asymmetric
// pads, auto_pad, output_shape (larger or smaller than the pads would give).
Case conv_transpose(Rng& rng, const std::string&) {
  Case c(17);
  c.loose = true;
  const int64_t r = pick(rng, 1, 3);
  const int64_t groups = choose(rng, std::vector<int64_t>{1, 1, 2, 3});
  const int64_t cin = pick(rng, 0, 7) == 0 ? 0 : groups * pick(rng, 1, 2), cout_g = pick(rng, 1, 3);
  Shape x = {pick(rng, 1, 2), cin}, w = {cin, cout_g};
  std::vector<int64_t> strides, dil, out_pad, pads(static_cast<size_t>(2 * r));
  const bool dilated = coin(rng);
  for (int64_t d = 0; d < r; ++d) {
    x.push_back(pick(rng, 1, r == 3 ? 3 : 5));
    w.push_back(pick(rng, 1, 3));
    strides.push_back(pick(rng, 1, 3));
    dil.push_back(dilated ? pick(rng, 1, 2) : 1);
    out_pad.push_back(pick(rng, 0, std::max(strides.back(), dil.back()) - 1));
  }
  for (auto& p : pads) p = pick(rng, 0, 2);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, x, rng, -2, 2);
  c.add_tensor("w", t, w, rng, -2, 2);
  std::vector<std::string> in = {"x", "w"};
  if (coin(rng)) in.push_back(c.add_tensor("b", t, {groups * cout_g}, rng, -2, 2));
  c.note_type(t);
  auto& n = c.node("ConvTranspose", in);
  if (groups > 1 || coin(rng)) attr_int(n, "group", groups);
  attr_ints(n, "strides", strides);
  if (dilated) attr_ints(n, "dilations", dil);
  const bool padded_out = coin(rng);
  if (padded_out) attr_ints(n, "output_padding", out_pad);
  switch (pick(rng, 0, 3)) {
    case 0: break;
    case 1:  // asymmetric ones included, leaving one output at least
      for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
        const int64_t full = strides[d] * (x[d + 2] - 1) + (w[d + 2] - 1) * dil[d] + 1 + (padded_out ? out_pad[d] : 0);
        pads[d] = std::min(pads[d], (full - 1) / 2);
        pads[d + static_cast<size_t>(r)] = std::min(pads[d + static_cast<size_t>(r)], (full - 1) / 2);
      }
      attr_ints(n, "pads", pads);
      break;
    case 2: attr_string(n, "auto_pad", choose(rng, std::vector<std::string>{"SAME_UPPER", "SAME_LOWER", "VALID"})); break;
    default: {
      std::vector<int64_t> out_shape;
      for (size_t d = 0; d < static_cast<size_t>(r); ++d) {
        const int64_t full = strides[d] * (x[d + 2] - 1) + (w[d + 2] - 1) * dil[d] + 1 + (padded_out ? out_pad[d] : 0);
        out_shape.push_back(std::max<int64_t>(1, full + pick(rng, -2, 2)));
      }
      attr_ints(n, "output_shape", out_shape);
      break;
    }
  }
  return c;
}

// Resize (opsets 11 to 19) and Upsample (9): nearest (any element width,
// every nearest_mode), linear and cubic (antialias, exclude_outside, cubic
// coefficient), every coordinate mode, scales or sizes (with axes and the
// aspect-ratio policies), tf_crop_and_resize's roi and extrapolation.
Case resize(Rng& rng, const std::string& op) {
  if (op == "Upsample") {
    Case c(9);
    const Shape x = random_shape(rng, 1, 4, 5);
    const bool nearest = coin(rng);
    const DataType t = nearest ? choose(rng, std::vector<DataType>{DataType::Float, DataType::Int64, DataType::Uint8}) : real_type(rng);
    c.add_tensor("x", t, x, rng, -9, 9);
    c.note_type(t);
    c.rounds_apart = !nearest && t != DataType::Float;  // float32 passes, the reference's in double
    std::vector<float> scales;
    for (size_t d = 0; d < x.size(); ++d) scales.push_back(d + 2 < x.size() && !coin(rng) ? 1.f : static_cast<float>(pick(rng, 1, 6)) / 2.f);
    c.float_list("scales", scales);
    attr_string(c.node("Upsample", {"x", "scales"}), "mode", nearest ? "nearest" : choose(rng, std::vector<std::string>{"linear", "bilinear"}));
    return c;
  }
  Case c(choose(rng, std::vector<int64_t>{11, 13, 18, 19, 19}));
  const std::string mode = choose(rng, std::vector<std::string>{"nearest", "linear", "cubic"});
  const Shape x = random_shape(rng, mode == "cubic" ? 2 : 1, 4, 6);
  const DataType t = mode == "nearest" ? choose(rng, std::vector<DataType>{DataType::Float, DataType::Int32, DataType::Int64, DataType::Uint8,
                                                                             DataType::Float16})
                                       : real_type(rng);
  c.add_tensor("x", t, x, rng, -9, 9);
  c.note_type(t);
  c.rounds_apart = mode != "nearest" && t != DataType::Float;  // float32 passes, the reference's in double
  const auto rank = static_cast<int64_t>(x.size());
  // Resize the last one or two dims (all of them at times), through axes at times (opset 18).
  std::vector<int64_t> axes;
  for (int64_t d = std::max<int64_t>(0, rank - pick(rng, 1, 2)); d < rank; ++d) axes.push_back(d);
  if (coin(rng)) {
    axes.clear();
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const bool with_axes = c.opset >= 18 && axes.size() < static_cast<size_t>(rank) && coin(rng);
  std::vector<std::string> coords = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"};
  if (c.opset >= 19) coords.push_back("half_pixel_symmetric");
  const std::string coord = choose(rng, coords);
  std::vector<std::string> in = {"x", "", ""};
  const size_t named = with_axes ? axes.size() : static_cast<size_t>(rank);
  auto axis_of = [&](size_t i) { return with_axes ? axes[i] : static_cast<int64_t>(i); };
  auto resized = [&](int64_t d) { return std::find(axes.begin(), axes.end(), d) != axes.end(); };
  if (coord == "tf_crop_and_resize") {
    std::vector<float> roi(2 * named);
    for (size_t i = 0; i < named; ++i) {
      const bool r = resized(axis_of(i));
      roi[i] = r ? static_cast<float>(pick(rng, -3, 4)) / 10.f : 0.f;  // beyond the input at times
      roi[named + i] = r ? static_cast<float>(pick(rng, 6, 13)) / 10.f : 1.f;
    }
    in[1] = c.float_list("roi", roi);
  }
  if (coin(rng)) {
    std::vector<float> scales;
    for (size_t i = 0; i < named; ++i)
      scales.push_back(resized(axis_of(i)) ? choose(rng, std::vector<float>{0.5f, 0.6f, 0.75f, 1.f, 1.5f, 2.f, 2.5f, 3.f}) : 1.f);
    in[2] = c.float_list("scales", scales);
  } else {
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < named; ++i) {
      const int64_t d = x[static_cast<size_t>(axis_of(i))];
      sizes.push_back(resized(axis_of(i)) ? pick(rng, 1, 2 * d + 2) : d);
    }
    in.push_back(c.ints("sizes", sizes));
  }
  if (c.opset < 13) {  // roi and scales are required inputs there, empty when unused
    for (size_t i : {size_t{1}, size_t{2}}) {
      if (!in[i].empty()) continue;
      in[i] = c.float_list(i == 1 ? "roi" : "scales", {});
    }
  }
  auto& n = c.node("Resize", in);
  c.what += " opset " + std::to_string(c.opset) + " " + mode + " " + coord;
  attr_string(n, "mode", mode);
  attr_string(n, "coordinate_transformation_mode", coord);
  if (with_axes) attr_ints(n, "axes", axes);
  if (mode == "nearest" && coin(rng))
    attr_string(n, "nearest_mode", choose(rng, std::vector<std::string>{"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
  if (mode == "cubic" && coin(rng)) attr_float(n, "cubic_coeff_a", -0.5f);
  if (mode != "nearest" && coin(rng)) attr_int(n, "exclude_outside", 1);
  if (mode != "nearest" && c.opset >= 18 && coin(rng)) attr_int(n, "antialias", 1);
  if (coord == "tf_crop_and_resize" && pick(rng, 0, 3) != 0) attr_float(n, "extrapolation_value", -3.5f);
  if (in.size() == 4 && c.opset >= 18 && coin(rng))
    attr_string(n, "keep_aspect_ratio_policy", choose(rng, std::vector<std::string>{"stretch", "not_larger", "not_smaller"}));
  return c;
}

// Attention (opsets 23 to 25): 3-D (packed heads) or 4-D, grouped query
// heads, a bool or float mask of any rank that broadcasts (covering fewer
// keys than there are at times), is_causal, a key/value cache with the
// present outputs, nonpad_kv_seqlen (padded keys, some rows with none),
// sliding windows, scale, softcap, each qk_matmul_output_mode.
Case attention(Rng& rng, const std::string&) {
  const int64_t opset = choose(rng, std::vector<int64_t>{23, 24, 25});
  Case c(opset);
  c.loose = true;
  const int64_t B = pick(rng, 1, 2), Hkv = pick(rng, 1, 3), group = pick(rng, 1, 3), Hq = Hkv * group;
  const int64_t Sq = pick(rng, 1, 5), Skv = pick(rng, 1, 6), D = pick(rng, 1, 8), Dv = pick(rng, 0, 8);
  const bool packed = coin(rng);
  const bool nonpad = opset >= 24 && pick(rng, 0, 3) == 0;
  const bool past = !nonpad && coin(rng);
  const int64_t P = past ? pick(rng, 1, 3) : 0, T = P + Skv;
  auto heads = [&](int64_t h, int64_t s, int64_t d) { return packed ? Shape{B, s, h * d} : Shape{B, h, s, d}; };
  const DataType t = real_type(rng);
  std::vector<std::string> in = {c.add_tensor("q", t, heads(Hq, Sq, D), rng, -2, 2), c.add_tensor("k", t, heads(Hkv, Skv, D), rng, -2, 2),
                                 c.add_tensor("v", t, heads(Hkv, Skv, Dv), rng, -2, 2), "", "", "", ""};
  c.note_type(t);
  if (pick(rng, 0, 5) == 0) {  // a NaN query: its rows are NaN, or zeros where every key is masked
    Tensor& q = c.inputs[0].second.tensor();
    set_real(q, static_cast<uint64_t>(pick(rng, 0, static_cast<int64_t>(q.element_count()) - 1)), NAN);
    c.what += " (a NaN in q)";
  }
  switch (pick(rng, 0, 2)) {
    case 0: break;
    default: {  // (B, Hq, Sq, Tm), leading dims dropped and some made 1
      const Shape full{B, Hq, Sq, pick(rng, 1, T)};
      Shape m(full.begin() + pick(rng, 0, 3), full.end());
      for (size_t a = 0; a + 1 < m.size(); ++a)
        if (coin(rng)) m[a] = 1;
      if (coin(rng)) {
        in[3] = c.add_tensor("mask", DataType::Bool, m, rng, -1, 3);
        break;
      }
      const DataType mt = coin(rng) ? t : real_type(rng);  // a float32 mask beside float16 Q at times
      in[3] = c.add_tensor("mask", mt, m, rng, -4, 1);
      if (mt != t) c.what += " mask of " + std::string(dtype_name(mt));
      Tensor& mv = c.inputs.back().second.tensor();
      if (coin(rng)) set_real(mv, 0, -7e4f);  // -inf once rounded to float16
    }
  }
  if (past) {
    in[4] = c.add_tensor("past_key", t, {B, Hkv, P, D}, rng, -2, 2);
    in[5] = c.add_tensor("past_value", t, {B, Hkv, P, Dv}, rng, -2, 2);
  }
  if (nonpad) {
    std::vector<int64_t> len;
    for (int64_t b = 0; b < B; ++b) len.push_back(pick(rng, 0, T));
    in[6] = c.index_input("nonpad", DataType::Int64, {B}, len);
  }
  while (in.back().empty()) in.pop_back();
  const bool present = coin(rng), qk = coin(rng);
  std::vector<std::string> out = {"y0", present ? "y1" : "", present ? "y2" : "", qk ? "y3" : ""};
  while (out.back().empty()) out.pop_back();
  for (const std::string& o : out)
    if (!o.empty()) c.m.output_untyped(o);
  auto& n = c.m.node("Attention", in, out, "node");
  if (packed) {
    attr_int(n, "q_num_heads", Hq);
    attr_int(n, "kv_num_heads", Hkv);
  }
  if (coin(rng)) attr_int(n, "is_causal", 1);
  if (coin(rng)) attr_float(n, "scale", static_cast<float>(pick(rng, 1, 10)) / 8.f);
  if (coin(rng)) attr_float(n, "softcap", static_cast<float>(pick(rng, 1, 8)) / 2.f);
  if (qk) attr_int(n, "qk_matmul_output_mode", pick(rng, 0, 3));
  if (opset >= 25 && coin(rng)) attr_int(n, "left_window_size", pick(rng, 0, 3));
  if (opset >= 25 && coin(rng)) attr_int(n, "right_window_size", pick(rng, 0, 3));
  if (coin(rng)) {  // the softmax in float32 (a narrow Q's is in its own type otherwise)
    attr_int(n, "softmax_precision", 1);
    c.what += " softmax_precision 1";
  }
  c.what += " opset " + std::to_string(opset);
  return c;
}

// RotaryEmbedding (opset 23): 3-D (num_heads) or 4-D, a rotary dim below
// the head size at times, interleaved or halves, caches per (batch,
// position) or rows picked by position_ids.
Case rotary(Rng& rng, const std::string&) {
  Case c(23);
  const int64_t B = pick(rng, 1, 2), H = pick(rng, 1, 3), S = pick(rng, 1, 5), D = 2 * pick(rng, 1, 4);
  const bool packed = coin(rng), ids = coin(rng);
  const int64_t rd = coin(rng) ? 0 : 2 * pick(rng, 1, D / 2), half = (rd ? rd : D) / 2;
  const DataType t = real_type(rng);
  std::vector<std::string> in = {c.add_tensor("x", t, packed ? Shape{B, S, H * D} : Shape{B, H, S, D}, rng, -2, 2)};
  const int64_t rows = ids ? pick(rng, 1, 8) : 0;
  const Shape cache = ids ? Shape{rows, half} : Shape{B, S, half};
  in.push_back(c.add_tensor("cos", t, cache, rng, -1, 1));
  in.push_back(c.add_tensor("sin", t, cache, rng, -1, 1));
  c.note_type(t);
  c.rounds_apart = t != DataType::Float;  // x cos - y sin in float32, the reference's in double
  if (ids) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < B * S; ++i) v.push_back(pick(rng, 0, rows - 1));
    in.push_back(c.index_input("pos", DataType::Int64, {B, S}, v));
  }
  auto& n = c.node("RotaryEmbedding", in);
  if (packed) attr_int(n, "num_heads", H);
  if (rd) attr_int(n, "rotary_embedding_dim", rd);
  if (coin(rng)) attr_int(n, "interleaved", 1);
  return c;
}

// DeformConv (opset 19, 2-D): groups and offset groups, strides, pads,
// dilations, offsets of up to 2.5 pixels (taps landing off the plane read
// 0), with and without a bias and a mask.
Case deform_conv(Rng& rng, const std::string&) {
  Case c(19);
  const int64_t group = pick(rng, 1, 2), offset_group = pick(rng, 1, 2);
  const int64_t C = group * offset_group * pick(rng, 1, 2), M = group * pick(rng, 1, 2);
  const int64_t kH = pick(rng, 1, 3), kW = pick(rng, 1, 3), sH = pick(rng, 1, 2), sW = pick(rng, 1, 2);
  const int64_t dH = pick(rng, 1, 2), dW = pick(rng, 1, 2), pH = pick(rng, 0, 1), pW = pick(rng, 0, 1);
  const int64_t H = (kH - 1) * dH + 1 + pick(rng, 0, 4), W = (kW - 1) * dW + 1 + pick(rng, 0, 4), N = pick(rng, 1, 2);
  const int64_t oH = (H + 2 * pH - ((kH - 1) * dH + 1)) / sH + 1, oW = (W + 2 * pW - ((kW - 1) * dW + 1)) / sW + 1;
  const DataType t = real_type(rng);
  c.add_tensor("x", t, {N, C, H, W}, rng, -1, 1);
  c.add_tensor("w", t, {M, C / group, kH, kW}, rng, -1, 1);
  c.add_tensor("offset", t, {N, offset_group * kH * kW * 2, oH, oW}, rng, -2.5, 2.5);
  c.note_type(t);
  std::vector<std::string> in = {"x", "w", "offset"};
  const bool mask = coin(rng), bias = coin(rng);
  if (bias || mask) in.push_back(bias ? c.add_tensor("b", t, {M}, rng, -1, 1) : std::string());
  if (mask) in.push_back(c.add_tensor("mask", t, {N, offset_group * kH * kW, oH, oW}, rng, 0, 1));
  auto& n = c.node("DeformConv", in);
  attr_ints(n, "strides", {sH, sW});
  attr_ints(n, "dilations", {dH, dW});
  attr_ints(n, "pads", {pH, pW, pH, pW});
  if (group > 1) attr_int(n, "group", group);
  if (offset_group > 1) attr_int(n, "offset_group", offset_group);
  if (coin(rng)) attr_ints(n, "kernel_shape", {kH, kW});
  return c;
}

// Det: 1 to 6 rows, batch dims 0 to 2 (one of them 0 at times), a quarter
// singular (a row repeated) and some needing a row swap (a zero pivot).
Case det(Rng& rng, const std::string&) {
  Case c(choose(rng, std::vector<int64_t>{11, 22}));
  const int64_t n = pick(rng, 1, 6);
  Shape s;
  for (int64_t b = pick(rng, 0, 2); b > 0; --b) s.push_back(pick(rng, 0, 3));
  s.push_back(n);
  s.push_back(n);
  const DataType t = real_type(rng);
  c.add_tensor("x", t, s, rng, -1, 1);
  c.note_type(t);
  Tensor& x = c.inputs.back().second.tensor();
  const uint64_t matrices = n ? x.element_count() / static_cast<uint64_t>(n * n) : 0;
  const int64_t form = pick(rng, 0, 3);
  for (uint64_t b = 0; b < matrices && n > 1; ++b) {
    const uint64_t at = b * static_cast<uint64_t>(n * n);
    if (form == 0)  // singular: row 1 repeats row 0
      for (int64_t j = 0; j < n; ++j) set_real(x, at + static_cast<uint64_t>(n + j), static_cast<float>(x.element_as_double(at + j)));
    else if (form == 1)  // a zero first pivot: a row swap to go on
      set_real(x, at, 0.f);
  }
  c.node("Det", {"x"});
  return c;
}

// TopK (opset 1: k an attribute; 10; 11: largest), float32 with NaN and
// ties, int32, int64, uint64 (from opset 11); k from 0 to the whole axis.
Case topk(Rng& rng, const std::string&) {
  Case c(choose(rng, std::vector<int64_t>{1, 10, 11}));
  std::vector<DataType> types = {real_type(rng), DataType::Int32, DataType::Int64};
  if (c.opset >= 11) types.push_back(DataType::Uint64);
  const DataType t = choose(rng, types);
  // A third of the cases: lines past 4096 (the cut-then-select kernels), k
  // up to 1024. Half of those nearly all ties (integers all 0, floats
  // mostly -0 and 0), short enough that over 4095 keys tie with fewer than
  // k left over (a lane's count past 12 bits decides the cut).
  const bool long_lines = pick(rng, 0, 2) == 0, ties = long_lines && coin(rng);
  const int64_t line_length = ties ? pick(rng, 4097, 4600) : pick(rng, 4097, 6000);
  const Shape x = long_lines ? Shape{pick(rng, 1, 2), line_length, pick(rng, 1, 2)} : random_shape(rng, 1, 4, 7);
  c.add_tensor("x", t, x, rng, ties ? 0 : -3, ties ? 0.9 : 3);  // integers from a small range: ties
  c.note_type(t);
  if (ties && is_real(t)) {
    Tensor& v = c.inputs.back().second.tensor();
    for (uint64_t i = 0; i < v.element_count(); ++i)
      if (i % 10) set_real(v, i, i % 2 ? -0.f : 0.f);
  }
  if (is_real(t) && coin(rng)) {
    Tensor& v = c.inputs.back().second.tensor();
    for (uint64_t i = 0; i < v.element_count(); ++i) {
      if (i % 5 == 0) set_real(v, i, NAN);
      else if (i % 3 == 0) set_real(v, i, std::round(static_cast<float>(v.element_as_double(i))));  // ties among floats too (-0 with 0)
    }
  }
  const auto rank = static_cast<int64_t>(x.size());
  const int64_t axis = long_lines ? choose(rng, std::vector<int64_t>{1, -2}) : pick(rng, -rank, rank - 1);
  const int64_t line = x[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  const int64_t k = ties         ? pick(rng, line - 4095, 1024)
                    : long_lines ? choose(rng, std::vector<int64_t>{0, 1, pick(rng, 2, 40), pick(rng, 41, 1024)})
                                 : pick(rng, 0, line);
  std::vector<std::string> in = {"x"};
  if (c.opset >= 10) in.push_back(c.ints("k", {k}));
  auto& n = c.node("TopK", in, 2);
  if (c.opset < 10) attr_int(n, "k", k);
  if (axis != -1 || coin(rng)) attr_int(n, "axis", axis);
  if (c.opset >= 11 && coin(rng)) attr_int(n, "largest", 0);
  return c;
}

}  // namespace

const std::map<std::string, Generator>& generators() {
  static const std::map<std::string, Generator> g = [] {
    std::map<std::string, Generator> m;
    for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Reciprocal", "Floor",
                           "Ceil", "Round", "Sin", "Cos", "Sign", "Softplus", "Softsign", "LeakyRelu", "Elu", "Selu",
                           "HardSigmoid", "HardSwish", "Gelu", "Celu", "ThresholdedRelu", "Mish", "Tan", "Asin", "Acos",
                           "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Swish", "Shrink"})
      m[op] = unary;
    for (const char* op : {"IsNaN", "IsInf", "Not"}) m[op] = predicate;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "PRelu", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
      m[op] = binary;
    m["Where"] = where;
    m["Clip"] = clip;
    m["Cast"] = cast;
    m["CastLike"] = cast_like;
    m["BatchNormalization"] = batchnorm;
    m["LayerNormalization"] = layernorm;
    for (const char* op : {"Softmax", "LogSoftmax"}) m[op] = softmax;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                           "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"})
      m[op] = reduce;
    for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) m[op] = pool;
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) m[op] = global_pool;
    m["Conv"] = conv;
    m["ConvTranspose"] = conv_transpose;
    m["MatMul"] = matmul;
    m["Gemm"] = gemm;
    for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) m[op] = view;
    for (const char* op : {"Transpose", "Slice", "Concat", "Split", "Expand", "Gather", "GatherND"}) m[op] = movement;
    for (const char* op : {"GatherElements", "ScatterElements", "Scatter", "ScatterND"}) m[op] = indexed;
    for (const char* op : {"Pad", "Tile"}) m[op] = pad_tile;
    for (const char* op : {"GroupNormalization", "InstanceNormalization"}) m[op] = group_norm;
    m["RMSNormalization"] = rms_norm;
    for (const char* op : {"DepthToSpace", "SpaceToDepth"}) m[op] = depth_space;
    m["Trilu"] = trilu;
    for (const char* op : {"Resize", "Upsample"}) m[op] = resize;
    for (const char* op : {"ArgMax", "ArgMin"}) m[op] = arg_extreme;
    for (const char* op : {"CumSum", "CumProd"}) m[op] = cumulative;
    m["Attention"] = attention;
    m["RotaryEmbedding"] = rotary;
    m["TopK"] = topk;
    m["Det"] = det;
    m["DeformConv"] = deform_conv;
    add_quantize_generators(m);
    add_einsum_generators(m);
    add_integer_generators(m);
    add_recurrent_generators(m);
    add_value_shaped_generators(m);
    add_integer_math_generators(m);
    add_variadic_generators(m);
    add_view_generators(m);
    add_norm_generators(m);
    add_grid_generators(m);
    add_llm_block_generators(m);
    add_loss_generators(m);
    add_signal_generators(m);
    add_reorder_generators(m);
    return m;
  }();
  return g;
}

int case_weight(const std::string& op) {
  if (op == "Resize" || op == "Attention" || op == "Einsum" || op == "Cast" || op == "GridSample") return 4;
  const bool integer = op == "QLinearConv" || op == "ConvInteger" || op == "QLinearMatMul" || op == "MatMulInteger";
  const bool quantize = op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear";
  const bool any_integer = op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Mod" || op == "Max" ||
                           op == "Min" || op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                           op == "GreaterOrEqual" || op == "BitShift" || op == "BitwiseAnd";  // every integer width
  const bool many_forms = op == "RoiAlign" || op == "TensorScatter" || op == "NegativeLogLikelihoodLoss" ||
                          op == "SoftmaxCrossEntropyLoss" || op == "DFT" || op == "STFT";
  return integer || quantize || any_integer || many_forms || op == "RNN" || op == "GRU" || op == "LSTM" ? 2 : 1;
}

}  // namespace onnxscope::test::cuda_cases
