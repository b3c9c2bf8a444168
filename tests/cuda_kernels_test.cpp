// Every operator of the CUDA engine's table against the reference engine, in
// the style of ggml's test-backend-ops: seeded random one-node problems (odd
// sizes, broadcasting, negative axes, zero-sized dims, the opset variants)
// run on both and must agree, and an observer checks that the node ran on
// the device, so an operator that silently falls back fails.
//
// The cuda-sim engine (the table and kernels over the host runtime) runs it
// in every build; on a machine with a GPU the cuda engine runs it too, in
// fp32 and tf32. A table entry without a case generator here fails
// EveryOperatorHasCases, so a new operator cannot go untested.
//
// Tolerance: |got - ref| <= atol + rtol * |ref| with atol 1e-5, rtol 1e-4
// (the reference accumulates in double; the kernels in float, in another
// order). TF32 keeps 10 mantissa bits: rtol and atol 5e-3 there for GEMM and
// convolution outputs; fp16 rounds their inputs and outputs to 11
// significant bits and has a narrower range: 1e-2 there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "cuda/ops/op_table.h"
#include "model_builder.h"
#include "onnxscope/inputs.h"
#include "random_chain.h"
#include "onnxscope/cuda.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

constexpr int kCasesPerOp = 24;
using Rng = std::mt19937;

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
bool coin(Rng& rng) { return pick(rng, 0, 1) == 1; }
template <typename T>
T choose(Rng& rng, const std::vector<T>& v) { return v[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(v.size()) - 1))]; }

uint64_t count(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}

Shape random_shape(Rng& rng, int64_t rank_lo, int64_t rank_hi, int64_t dim_hi = 6) {
  Shape s(static_cast<size_t>(pick(rng, rank_lo, rank_hi)));
  for (auto& d : s) d = pick(rng, 1, dim_hi);
  return s;
}

// s with some dims made 1 and some leading dims dropped: broadcasts against s.
Shape broadcastable(Rng& rng, const Shape& s) {
  Shape b(s.begin() + pick(rng, 0, static_cast<int64_t>(s.size())), s.end());
  for (auto& d : b)
    if (pick(rng, 0, 2) == 0) d = 1;
  return b;
}

// One random problem: a one-node model and its inputs.
struct Case {
  explicit Case(int64_t opset) : m(opset), opset(opset) {}
  ModelBuilder m;
  int64_t opset;
  NamedValues inputs;
  std::string what;
  bool loose = false;  // a GEMM/convolution output: TF32's tolerance applies

  std::string add_tensor(const std::string& name, DataType t, const Shape& s, Rng& rng, double lo, double hi) {
    Tensor v = Tensor::zeros(t, s);
    std::uniform_real_distribution<double> d(lo, hi);
    for (uint64_t i = 0; i < v.element_count(); ++i) {
      const double x = d(rng);
      switch (t) {
        case DataType::Float: v.mutable_data<float>()[i] = static_cast<float>(x); break;
        case DataType::Int32: v.mutable_data<int32_t>()[i] = static_cast<int32_t>(std::floor(x)); break;
        case DataType::Int64: v.mutable_data<int64_t>()[i] = static_cast<int64_t>(std::floor(x)); break;
        case DataType::Bool: v.mutable_data<uint8_t>()[i] = x > 0 ? 1 : 0; break;
        case DataType::Uint8: v.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(std::fabs(x)); break;
        case DataType::Double: v.mutable_data<double>()[i] = x; break;
        default: ADD_FAILURE() << "no random values for " << dtype_name(t);
      }
    }
    m.input(name, t, std::vector<DimSpec>(s.begin(), s.end()));
    inputs.emplace_back(name, Value(std::move(v)));
    what += " " + name + shape_to_string(s);
    return name;
  }
  std::string floats(const std::string& name, const Shape& s, Rng& rng, double lo = -2, double hi = 2) {
    return add_tensor(name, DataType::Float, s, rng, lo, hi);
  }
  // A constant (initializer) of int64 values: shape arguments, axes, indices.
  std::string ints(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
    m.initializer(make_int64_tensor(name, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(v.size())}, v));
    what += " " + name + "=[";
    for (size_t i = 0; i < v.size(); ++i) what += (i ? "," : "") + std::to_string(v[i]);
    what += "]";
    return name;
  }
  // A graph input of indices (int64 or int32), given values: what the
  // device reads and checks itself.
  std::string index_input(const std::string& name, DataType t, const Shape& s, const std::vector<int64_t>& v) {
    Tensor x = Tensor::zeros(t, s);
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DataType::Int32) x.mutable_data<int32_t>()[i] = static_cast<int32_t>(v[i]);
      else x.mutable_data<int64_t>()[i] = v[i];
    }
    m.input(name, t, std::vector<DimSpec>(s.begin(), s.end()));
    inputs.emplace_back(name, Value(std::move(x)));
    what += " " + name + shape_to_string(s) + "=[";
    for (size_t i = 0; i < v.size(); ++i) what += (i ? "," : "") + std::to_string(v[i]);
    what += "]";
    return name;
  }
  std::string float_scalar(const std::string& name, float v) {
    m.initializer(make_float_tensor(name, {}, {v}));
    what += " " + name + "=" + std::to_string(v);
    return name;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, int outputs = 1) {
    std::vector<std::string> out;
    for (int i = 0; i < outputs; ++i) {
      out.push_back("y" + std::to_string(i));
      m.output_untyped(out.back());
    }
    return m.node(op, in, out, "node");
  }
};

using Generator = std::function<Case(Rng&, const std::string& op)>;

// --- generators, by family ---

Case unary(Rng& rng, const std::string& op) {
  Case c(20);
  double lo = -3, hi = 3;
  if (op == "Log" || op == "Sqrt") lo = 0.05;
  if (op == "Reciprocal") lo = 0.2;
  c.floats("x", random_shape(rng, 0, 4), rng, lo, hi);
  auto& n = c.node(op, {"x"});
  if (op == "LeakyRelu" || op == "Elu" || op == "Celu" || op == "ThresholdedRelu" || op == "HardSigmoid" || op == "Selu")
    if (coin(rng)) attr_float(n, "alpha", static_cast<float>(pick(rng, 1, 9)) / 10.f);
  if (op == "Gelu" && coin(rng)) attr_string(n, "approximate", "tanh");
  return c;
}

Case predicate(Rng& rng, const std::string& op) {
  Case c(20);
  const Shape s = random_shape(rng, 0, 4);
  if (op == "Not") {
    c.add_tensor("x", DataType::Bool, s, rng, -1, 1);
  } else {
    c.floats("x", s, rng);
    // NaN and infinities where the predicates have something to find.
    Tensor& t = c.inputs.back().second.tensor();
    const float specials[] = {NAN, INFINITY, -INFINITY};
    for (uint64_t i = 0; i < t.element_count(); i += 3) t.mutable_data<float>()[i] = specials[i % 3];
  }
  auto& n = c.node(op, {"x"});
  if (op == "IsInf" && coin(rng)) attr_int(n, coin(rng) ? "detect_negative" : "detect_positive", 0);
  return c;
}

Case binary(Rng& rng, const std::string& op) {
  Case c(20);
  const Shape s = random_shape(rng, 0, 4);
  Shape sa = s, sb = broadcastable(rng, s);
  if (coin(rng)) std::swap(sa, sb);
  const bool logic = op == "And" || op == "Or" || op == "Xor";
  const bool float_only = op == "Pow" || op == "PRelu" || op == "Div" || op == "Mod";
  DataType t = logic ? DataType::Bool : float_only ? DataType::Float : choose(rng, std::vector<DataType>{DataType::Float, DataType::Float, DataType::Int32, DataType::Int64});
  double lo = -4, hi = 4;
  if (op == "Pow") lo = 0.2;
  c.add_tensor("a", t, sa, rng, lo, hi);
  if (op == "Div" || op == "Mod") {
    c.add_tensor("b", t, sb, rng, 0.5, 3);
  } else {
    c.add_tensor("b", t, sb, rng, op == "Pow" ? -2 : lo, op == "Pow" ? 2 : hi);
  }
  if (op == "PRelu") {  // the slope broadcasts to X one way
    c = Case(20);
    c.floats("a", s, rng);
    c.floats("b", broadcastable(rng, s), rng);
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

Case clip(Rng& rng, const std::string&) {
  if (coin(rng)) {  // opset 6: bounds as attributes
    Case c(6);
    c.floats("x", random_shape(rng, 1, 4), rng);
    auto& n = c.node("Clip", {"x"});
    if (coin(rng)) attr_float(n, "min", -0.5f);
    if (coin(rng)) attr_float(n, "max", 0.7f);
    return c;
  }
  Case c(20);
  c.floats("x", random_shape(rng, 0, 4), rng);
  std::vector<std::string> in = {"x"};
  const int form = static_cast<int>(pick(rng, 0, 2));
  in.push_back(form == 1 ? std::string() : c.float_scalar("lo", -0.5f));
  if (form != 2) in.push_back(c.float_scalar("hi", 0.6f));
  c.node("Clip", in);
  return c;
}

Case cast(Rng& rng, const std::string&) {
  Case c(20);
  const std::vector<DataType> from = {DataType::Float, DataType::Int32, DataType::Int64, DataType::Bool, DataType::Uint8, DataType::Double};
  const std::vector<DataType> to = {DataType::Float,   DataType::Double, DataType::Float16, DataType::BFloat16, DataType::Int8,
                                    DataType::Int16,   DataType::Int32,  DataType::Int64,   DataType::Uint8,    DataType::Uint16,
                                    DataType::Uint32,  DataType::Uint64, DataType::Bool};
  const DataType f = choose(rng, from), t = choose(rng, to);
  const bool to_unsigned = t == DataType::Uint8 || t == DataType::Uint16 || t == DataType::Uint32 || t == DataType::Uint64;
  // In range of every target: numpy leaves out-of-range float->int casts to the platform.
  c.add_tensor("x", f, random_shape(rng, 0, 3), rng, to_unsigned ? 0 : -100, 100);
  auto& n = c.node("Cast", {"x"});
  attr_int(n, "to", static_cast<int64_t>(t));
  c.what += std::string(" to ") + std::string(dtype_name(t));
  return c;
}

Case batchnorm(Rng& rng, const std::string&) {
  Case c(15);
  Shape s = random_shape(rng, 2, 4);
  const int64_t ch = s[1];
  c.floats("x", s, rng);
  c.floats("scale", {ch}, rng);
  c.floats("bias", {ch}, rng);
  c.floats("mean", {ch}, rng);
  c.floats("var", {ch}, rng, 0.1, 2);
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
  c.floats("x", s, rng);
  Shape ns(s.begin() + a, s.end());
  c.floats("scale", ns, rng);
  std::vector<std::string> in = {"x", "scale"};
  if (coin(rng)) in.push_back(c.floats("bias", ns, rng));
  const int outputs = static_cast<int>(pick(rng, 1, 3));
  auto& n = c.node("LayerNormalization", in, outputs);
  attr_int(n, "axis", axis);
  return c;
}

Case softmax(Rng& rng, const std::string& op) {
  Case c(coin(rng) ? 13 : 11);  // 11: over the 2-D flattening at axis
  const Shape s = random_shape(rng, 1, 4, 9);
  const int64_t rank = static_cast<int64_t>(s.size());
  c.floats("x", s, rng, -5, 5);
  auto& n = c.node(op, {"x"});
  attr_int(n, "axis", pick(rng, -rank, rank - 1));
  return c;
}

Case reduce(Rng& rng, const std::string& op) {
  const bool modern = coin(rng);
  Case c(modern ? 18 : 13);
  const Shape s = random_shape(rng, 1, 4);
  const int64_t rank = static_cast<int64_t>(s.size());
  double lo = -2, hi = 2;
  if (op == "ReduceLogSum") lo = 0.1;
  if (op == "ReduceProd") lo = 0.5, hi = 1.5;
  c.floats("x", s, rng, lo, hi);
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
  c.floats("x", s, rng);
  auto& n = c.node(op, {"x"});
  attr_ints(n, "kernel_shape", kernel);
  attr_ints(n, "strides", strides);
  if (coin(rng)) attr_ints(n, "pads", pads);
  else if (coin(rng)) attr_string(n, "auto_pad", choose(rng, std::vector<std::string>{"SAME_UPPER", "SAME_LOWER", "VALID"}));
  if (coin(rng)) attr_ints(n, "dilations", dil);
  if (coin(rng)) attr_int(n, "ceil_mode", 1);
  if (op == "AveragePool" && coin(rng)) attr_int(n, "count_include_pad", 1);
  return c;
}

Case global_pool(Rng& rng, const std::string& op) {
  Case c(17);
  c.floats("x", random_shape(rng, 3, 5), rng);
  c.node(op, {"x"});
  return c;
}

Case conv(Rng& rng, const std::string&) {
  Case c(17);
  c.loose = true;
  const int64_t r = pick(rng, 1, 3);
  const int64_t groups = choose(rng, std::vector<int64_t>{1, 1, 2, 3});
  const int64_t cin = groups * pick(rng, 1, 3), cout = groups * pick(rng, 1, 3);
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
  c.floats("x", x, rng);
  c.floats("w", w, rng);
  std::vector<std::string> in = {"x", "w"};
  if (coin(rng)) in.push_back(c.floats("b", {cout}, rng));
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
  const int64_t m = pick(rng, 1, 9), k = pick(rng, 1, 9), n = pick(rng, 1, 9);
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
  c.floats("a", a, rng);
  c.floats("b", b, rng);
  c.node("MatMul", {"a", "b"});
  return c;
}

Case gemm(Rng& rng, const std::string&) {
  Case c(13);
  c.loose = true;
  const int64_t m = pick(rng, 1, 9), k = pick(rng, 1, 9), n = pick(rng, 1, 9);
  const bool ta = coin(rng), tb = coin(rng);
  c.floats("a", ta ? Shape{k, m} : Shape{m, k}, rng);
  c.floats("b", tb ? Shape{n, k} : Shape{k, n}, rng);
  std::vector<std::string> in = {"a", "b"};
  if (coin(rng)) in.push_back(c.floats("c", choose(rng, std::vector<Shape>{{n}, {1, n}, {m, n}, {m, 1}, {}}), rng));
  auto& node = c.node("Gemm", in);
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
      in.push_back(c.add_tensor("x" + std::to_string(i), t, p, rng, -9, 9));
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
    std::vector<int64_t> idx(static_cast<size_t>(cuda::elements_of(is)));
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
    std::vector<int64_t> idx(static_cast<size_t>(cuda::elements_of(is)));
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
  Case c(op == "Pad" && coin(rng) ? 11 : 18);
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
  std::vector<int64_t> pads(2 * axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t dim = s[static_cast<size_t>(axes[i] < 0 ? axes[i] + rank : axes[i])];
    pads[i] = pick(rng, -dim / 2, 3);                 // begin: crop up to half, or grow
    pads[axes.size() + i] = pick(rng, -(dim - dim / 2), 3);  // end
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
  c.node("Pad", in);
  return c;
}

const std::map<std::string, Generator>& generators() {
  static const std::map<std::string, Generator> g = [] {
    std::map<std::string, Generator> m;
    for (const char* op : {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Neg", "Abs", "Erf", "Reciprocal", "Floor",
                           "Ceil", "Round", "Sin", "Cos", "Sign", "Softplus", "Softsign", "LeakyRelu", "Elu", "Selu",
                           "HardSigmoid", "HardSwish", "Gelu", "Celu", "ThresholdedRelu", "Mish"})
      m[op] = unary;
    for (const char* op : {"IsNaN", "IsInf", "Not"}) m[op] = predicate;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "PRelu", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"})
      m[op] = binary;
    m["Where"] = where;
    m["Clip"] = clip;
    m["Cast"] = cast;
    m["BatchNormalization"] = batchnorm;
    m["LayerNormalization"] = layernorm;
    for (const char* op : {"Softmax", "LogSoftmax"}) m[op] = softmax;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                           "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"})
      m[op] = reduce;
    for (const char* op : {"MaxPool", "AveragePool"}) m[op] = pool;
    for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) m[op] = global_pool;
    m["Conv"] = conv;
    m["MatMul"] = matmul;
    m["Gemm"] = gemm;
    for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) m[op] = view;
    for (const char* op : {"Transpose", "Slice", "Concat", "Split", "Expand", "Gather", "GatherND"}) m[op] = movement;
    for (const char* op : {"GatherElements", "ScatterElements", "Scatter", "ScatterND"}) m[op] = indexed;
    for (const char* op : {"Pad", "Tile"}) m[op] = pad_tile;
    return m;
  }();
  return g;
}

struct Kernels : Observer {
  std::vector<std::string> ran;
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.kernel); }
};

// Compares two values element by element (as doubles; exact for the integer and bool types used here).
void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol, const std::string& where) {
  ASSERT_EQ(got.dtype(), want.dtype()) << where;
  ASSERT_EQ(got.shape(), want.shape()) << where;
  const Tensor& g = got;
  const Tensor& w = want;
  int shown = 0;
  for (uint64_t i = 0; i < g.element_count() && shown < 5; ++i) {
    const double a = g.element_as_double(i), b = w.element_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // equal infinities too
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      ADD_FAILURE() << where << " [" << i << "]: got " << a << ", expected " << b;
      ++shown;
    }
  }
}

// Runs every op's cases on the engine `make` gives, in `precision`.
void check_engine(const std::function<std::unique_ptr<Engine>(const CudaOptions&)>& make, const std::string& precision) {
  CudaOptions options;
  options.precision = precision;
  auto reference = make_reference_engine();
  for (const auto& [op, gen] : generators()) {
    Rng rng(static_cast<uint32_t>(std::hash<std::string>{}(op) & 0xffffffu));
    for (int i = 0; i < kCasesPerOp; ++i) {
      Case c = gen(rng, op);
      const std::string where = op + " case " + std::to_string(i) + ":" + c.what;
      auto loaded = c.m.load();
      ASSERT_TRUE(loaded.ok()) << where << "\n" << dump(loaded);
      std::shared_ptr<const Model> m(std::move(loaded.model));
      NamedValues want;
      try {
        want = reference->prepare(m)->run(c.inputs);
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": the reference refused the case: " << e.what();
        continue;
      }
      Kernels k;
      RunOptions ro;
      ro.observer = &k;
      NamedValues got;
      try {
        got = make(options)->prepare(m)->run(c.inputs, ro);
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": " << e.what();
        continue;
      }
      ASSERT_EQ(k.ran.size(), 1u) << where;
      EXPECT_NE(k.ran[0].rfind("cpu/", 0), 0u) << where << ": ran on the host (" << k.ran[0] << ")";
      ASSERT_EQ(got.size(), want.size()) << where;
      const double tol = !c.loose ? 0 : precision == "tf32" ? 5e-3 : precision == "fp16" ? 1e-2 : 0;
      for (size_t o = 0; o < got.size(); ++o)
        expect_close(got[o].second.tensor(), want[o].second.tensor(), 1e-5 + tol, 1e-4 + tol, where + " output " + want[o].first);
    }
  }
}

std::string no_gpu_reason() {
  const CudaStatus s = cuda_status();
  return s.devices.empty() ? (s.reason.empty() ? std::string("no CUDA device") : s.reason) : std::string();
}

}  // namespace

// --- the CPU engine's fused operators, made by its passes from unfused patterns ---

struct FusionCase {
  std::string fused;  // "onnxscope.cpu::FusedConv"
  std::function<Case(Rng&)> make;
  int trials = 1;  // random cases drawn
};

// A random chain of elementwise ops (support/random_chain.h) and inputs for it.
Case elementwise_chain(Rng& rng) {
  Case c(22);
  c.m = random_elementwise_chain(rng);
  auto loaded = c.m.load();
  EXPECT_TRUE(loaded.ok()) << dump(loaded);
  if (!loaded.ok()) return c;
  InputSpec spec;
  spec.seed = rng();
  c.inputs = make_inputs(*loaded.model, spec);
  return c;
}

std::string init(Case& c, const std::string& name, const Shape& s, Rng& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(count(s));
  for (auto& x : v) x = d(rng);
  c.m.initializer(make_float_tensor(name, std::vector<int64_t>(s.begin(), s.end()), v));
  return name;
}

const std::vector<FusionCase>& fusion_cases() {
  static const std::vector<FusionCase> cases = {
      {"onnxscope.cpu::FusedConv",
       [](Rng& rng) {  // Conv + BatchNormalization + Clip(0, 6): MobileNetV2's block (BN folded first)
         Case c(11);
         c.floats("x", {2, 3, 9, 9}, rng);
         init(c, "w", {4, 3, 3, 3}, rng);
         init(c, "bias", {4}, rng);
         init(c, "scale", {4}, rng);
         init(c, "shift", {4}, rng);
         init(c, "mean", {4}, rng);
         init(c, "var", {4}, rng, 0.5f, 2.f);
         c.m.node("Conv", {"x", "w", "bias"}, {"conv"}, "conv");
         attr_ints(c.m.graph().mutable_node()->Mutable(0)[0], "pads", {1, 1, 1, 1});
         c.m.node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, {"bn"}, "bn");
         c.m.node("Clip", {"bn", c.float_scalar("lo", 0.f), c.float_scalar("hi", 0.5f)}, {"y0"}, "clip");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedGemm",
       [](Rng& rng) {
         Case c(13);
         c.floats("a", {5, 7}, rng);
         init(c, "b", {6, 7}, rng);
         init(c, "cb", {6}, rng);
         auto& g = c.m.node("Gemm", {"a", "b", "cb"}, {"g"}, "gemm");
         attr_int(g, "transB", 1);
         attr_float(c.m.node("LeakyRelu", {"g"}, {"y0"}, "act"), "alpha", 0.2f);
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedMatMul",
       [](Rng& rng) {  // MatMul of a 3-D activation by a weight, + bias, + Relu
         Case c(17);
         c.floats("a", {2, 5, 8}, rng);
         init(c, "w", {8, 6}, rng);
         init(c, "bias", {6}, rng);
         c.m.node("MatMul", {"a", "w"}, {"mm"}, "mm");
         c.m.node("Add", {"mm", "bias"}, {"add"}, "add");
         c.m.node("Relu", {"add"}, {"y0"}, "relu");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::Gelu",
       [](Rng& rng) {  // x * 0.5 * (1 + erf(x / sqrt(2))), as exporters write it below opset 20
         Case c(17);
         c.floats("x", {3, 10}, rng, -3, 3);
         c.m.node("Div", {"x", c.float_scalar("s2", 1.41421356f)}, {"d"}, "div");
         c.m.node("Erf", {"d"}, {"e"}, "erf");
         c.m.node("Add", {"e", c.float_scalar("one", 1.f)}, {"p"}, "add");
         c.m.node("Mul", {"x", "p"}, {"xp"}, "mul");
         c.m.node("Mul", {"xp", c.float_scalar("half", 0.5f)}, {"y0"}, "mul_half");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedElementwise", elementwise_chain, 40},
      {"LayerNormalization",
       [](Rng& rng) {  // the decomposition exporters write below opset 17, in a model of opset 17
         Case c(17);
         c.floats("x", {2, 4, 16}, rng);
         init(c, "gamma", {16}, rng);
         init(c, "beta", {16}, rng);
         attr_ints(c.m.node("ReduceMean", {"x"}, {"m"}, "mean"), "axes", {-1});
         c.m.node("Sub", {"x", "m"}, {"d"}, "sub");
         c.m.node("Pow", {"d", c.float_scalar("two", 2.f)}, {"sq"}, "pow");
         attr_ints(c.m.node("ReduceMean", {"sq"}, {"v"}, "var"), "axes", {-1});
         c.m.node("Add", {"v", c.float_scalar("eps", 1e-5f)}, {"ve"}, "add_eps");
         c.m.node("Sqrt", {"ve"}, {"sd"}, "sqrt");
         c.m.node("Div", {"d", "sd"}, {"n"}, "div");
         c.m.node("Mul", {"n", "gamma"}, {"g"}, "mul");
         c.m.node("Add", {"g", "beta"}, {"y0"}, "add");
         c.m.output_untyped("y0");
         return c;
       }},
  };
  return cases;
}

struct AsRun : Observer {
  std::vector<std::pair<std::string, std::string>> ran;  // op ("domain::op" outside ai.onnx), kernel
  void on_node(const NodeEvent& e) override {
    const std::string& d = e.node->domain;
    ran.emplace_back((d.empty() || d == "ai.onnx" ? "" : d + "::") + e.node->op_type, std::string(e.kernel));
  }
};

void check_fusions(const std::function<std::unique_ptr<Engine>()>& make) {
  auto reference = make_reference_engine();
  for (const FusionCase& fc : fusion_cases())
    for (int trial = 0; trial < fc.trials; ++trial) {
      SCOPED_TRACE(fc.fused + " case " + std::to_string(trial));
      Rng rng(static_cast<uint32_t>(7 + trial));
      Case c = fc.make(rng);
      auto loaded = c.m.load();
      ASSERT_TRUE(loaded.ok()) << fc.fused << "\n" << dump(loaded);
      std::shared_ptr<const Model> m(std::move(loaded.model));
      const NamedValues want = reference->prepare(m)->run(c.inputs);
      auto prepared = make()->prepare(m);
      AsRun as_run;
      RunOptions ro;
      ro.observer = &as_run;
      ro.capture_original = false;  // the nodes as the engine runs them: fused
      const NamedValues got = prepared->run(c.inputs, ro);
      bool fused = false;
      for (const auto& [op, kernel] : as_run.ran) {
        EXPECT_NE(kernel.rfind("cpu/", 0), 0u) << fc.fused << ": " << op << " ran on the host";
        fused = fused || op == fc.fused;
      }
      EXPECT_TRUE(fused) << fc.fused << " was not made; nodes as run: " << as_run.ran.size();
      ASSERT_EQ(got.size(), want.size());
      expect_close(got[0].second.tensor(), want[0].second.tensor(), 1e-5, 1e-4, fc.fused);
      // A run without an observer (the same plan) agrees too.
      const NamedValues plain = prepared->run(c.inputs);
      expect_close(plain[0].second.tensor(), want[0].second.tensor(), 1e-5, 1e-4, fc.fused + " (no observer)");
    }
}

TEST(CudaKernels, EveryOperatorHasCases) {
  std::set<std::string> fusions;
  for (const auto& f : fusion_cases()) fusions.insert(f.fused);
  for (const std::string& op : cuda::supported_ops())
    EXPECT_TRUE(generators().count(op) || fusions.count(op)) << op << " has no case generator";
  for (const auto& [op, gen] : generators()) EXPECT_TRUE(cuda::find_op(op)) << op << " is not in the CUDA table";
}

TEST(CudaKernels, SimRunsTheCpuEnginesFusions) {
  check_fusions([] { return make_cuda_sim_engine(); });
}

TEST(CudaKernels, SimMatchesTheReference) {
  for (const char* precision : {"fp32", "tf32", "fp16"}) {
    SCOPED_TRACE(precision);
    check_engine([](const CudaOptions& o) { return make_cuda_sim_engine(o); }, precision);
  }
}

// The row kernels (softmax, normalization, reductions, pooling) with each row
// split across a warp of 32 lanes, as on the GPU: host threads in lockstep.
// One lane cannot show a lane that skips its share or a missing reduction.
TEST(CudaKernels, SimWithAWarpPerRowMatchesTheReference) {
  check_engine(
      [](const CudaOptions& o) {
        CudaOptions w = o;
        w.sim_lanes = 32;
        return make_cuda_sim_engine(w);
      },
      "fp32");
}

// fp16 really rounds: a product exact in float32 but not in float16 differs.
TEST(CudaKernels, SimFp16RoundsGemmInputs) {
  ModelBuilder b(17);
  b.input("a", DataType::Float, {int64_t{1}, int64_t{1}});
  b.initializer(make_float_tensor("b", {1, 1}, {1.f}));
  b.node("MatMul", {"a", "b"}, {"y"}, "mm");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{1}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  Tensor a = Tensor::zeros(DataType::Float, {1, 1});
  a.mutable_data<float>()[0] = 1.f + 1.f / 4096;  // float16 keeps 10 fraction bits
  const NamedValues in = {{"a", Value(a)}};
  CudaOptions o;
  EXPECT_EQ(make_cuda_sim_engine(o)->prepare(m)->run(in)[0].second.tensor().data<float>()[0], 1.f + 1.f / 4096);
  o.precision = "fp16";
  EXPECT_EQ(make_cuda_sim_engine(o)->prepare(m)->run(in)[0].second.tensor().data<float>()[0], 1.f);
  o.precision = "fp64";
  EXPECT_THROW(make_cuda_sim_engine(o), Error);
}

TEST(CudaKernels, GpuMatchesTheReference) {
  if (const std::string reason = no_gpu_reason(); !reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  for (const char* precision : {"fp32", "tf32", "fp16"}) {
    SCOPED_TRACE(precision);
    check_engine([](const CudaOptions& o) { return make_cuda_engine(o); }, precision);
  }
  check_fusions([] { return make_cuda_engine(); });
}
