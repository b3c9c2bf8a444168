// Elementwise operators: float32 unary math and activations, IsNaN / IsInf
// / Not, broadcast arithmetic (float32, int32, int64), comparisons and
// logic, Where (any fixed width), Clip and Cast (kernels/elementwise.h);
// and the CPU engine's FusedElementwise, a chain of the float32 ones in one
// kernel.
#include <cfloat>
#include <cstring>
#include <map>

#include "cpu/fused_ops.h"
#include "cuda/ops/op_table.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

bool castable(DataType t) {
  switch (t) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64: case DataType::Bool:
      return true;
    default: return false;
  }
}

namespace {

struct UnaryInfo {
  UnaryOp op;
  float alpha, beta, gamma;  // the attributes' defaults
};

const std::map<std::string, UnaryInfo>& unary_ops() {
  static const std::map<std::string, UnaryInfo> m{
      {"Relu", {UnaryOp::Relu, 0, 0, 0}},
      {"Sigmoid", {UnaryOp::Sigmoid, 0, 0, 0}},
      {"Tanh", {UnaryOp::Tanh, 0, 0, 0}},
      {"Exp", {UnaryOp::Exp, 0, 0, 0}},
      {"Log", {UnaryOp::Log, 0, 0, 0}},
      {"Sqrt", {UnaryOp::Sqrt, 0, 0, 0}},
      {"Neg", {UnaryOp::Neg, 0, 0, 0}},
      {"Abs", {UnaryOp::Abs, 0, 0, 0}},
      {"Erf", {UnaryOp::Erf, 0, 0, 0}},
      {"Reciprocal", {UnaryOp::Reciprocal, 0, 0, 0}},
      {"Floor", {UnaryOp::Floor, 0, 0, 0}},
      {"Ceil", {UnaryOp::Ceil, 0, 0, 0}},
      {"Round", {UnaryOp::Round, 0, 0, 0}},
      {"Sin", {UnaryOp::Sin, 0, 0, 0}},
      {"Cos", {UnaryOp::Cos, 0, 0, 0}},
      {"Sign", {UnaryOp::Sign, 0, 0, 0}},
      {"Softplus", {UnaryOp::Softplus, 0, 0, 0}},
      {"Softsign", {UnaryOp::Softsign, 0, 0, 0}},
      {"LeakyRelu", {UnaryOp::LeakyRelu, 0.01f, 0, 0}},
      {"Elu", {UnaryOp::Elu, 1.f, 0, 0}},
      {"Selu", {UnaryOp::Selu, 1.67326319217681884765625f, 0, 1.05070102214813232421875f}},
      {"HardSigmoid", {UnaryOp::HardSigmoid, 0.2f, 0.5f, 0}},
      {"HardSwish", {UnaryOp::HardSwish, 0, 0, 0}},
      {"Gelu", {UnaryOp::Gelu, 0, 0, 0}},
      {"Celu", {UnaryOp::Celu, 1.f, 0, 0}},
      {"ThresholdedRelu", {UnaryOp::ThresholdedRelu, 1.f, 0, 0}},
      {"Mish", {UnaryOp::Mish, 0, 0, 0}},
  };
  return m;
}

const std::map<std::string, BinaryOp>& binary_ops() {
  static const std::map<std::string, BinaryOp> m{
      {"Add", BinaryOp::Add},       {"Sub", BinaryOp::Sub},         {"Mul", BinaryOp::Mul},
      {"Div", BinaryOp::Div},       {"Pow", BinaryOp::Pow},         {"Max", BinaryOp::Max},
      {"Min", BinaryOp::Min},       {"Mod", BinaryOp::Mod},         {"PRelu", BinaryOp::PRelu},
      {"Equal", BinaryOp::Equal},   {"Less", BinaryOp::Less},       {"Greater", BinaryOp::Greater},
      {"LessOrEqual", BinaryOp::LessOrEqual}, {"GreaterOrEqual", BinaryOp::GreaterOrEqual},
      {"And", BinaryOp::And},       {"Or", BinaryOp::Or},           {"Xor", BinaryOp::Xor}};
  return m;
}

std::optional<std::string> refuse_unary(const Graph& g, const Node& n) {
  if (n.op_type == "Gelu") {
    const Attribute* a = n.attribute("approximate");
    if (a && a->s != "none" && a->s != "tanh") return "Gelu approximate='" + a->s + "'";
  }
  return require_types(g, n, {DataType::Float});
}

void run_unary(OpContext& c) {
  const UnaryInfo& u = unary_ops().at(c.node().op_type);
  UnaryKernel k{};
  k.op = u.op;
  if (u.op == UnaryOp::Gelu && c.attr_string("approximate", "none") == "tanh") k.op = UnaryOp::GeluTanh;
  k.alpha = c.attr_float("alpha", u.alpha);
  k.beta = c.attr_float("beta", u.beta);
  k.gamma = c.attr_float("gamma", u.gamma);
  const DeviceTensor& x = c.input(0);
  c.output(0) = c.allocate(DataType::Float, x.shape);
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

std::optional<std::string> refuse_predicate(const Graph& g, const Node& n) {
  return require_types(g, n, {n.op_type == "Not" ? DataType::Bool : DataType::Float});
}

void run_predicate(OpContext& c) {
  UnaryPredicateKernel k{};
  const std::string& op = c.node().op_type;
  k.op = op == "IsNaN" ? UnaryOp::IsNaN : op == "IsInf" ? UnaryOp::IsInf : UnaryOp::Not;
  k.negative = c.attr_int("detect_negative", 1) != 0;
  k.positive = c.attr_int("detect_positive", 1) != 0;
  const DeviceTensor& x = c.input(0);
  c.output(0) = c.allocate(DataType::Bool, x.shape);
  k.x = x.data;
  k.y = static_cast<bool*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

BroadcastIndex index_of(const BroadcastPlan& p) {
  BroadcastIndex b;
  b.rank = p.rank;
  for (int d = 0; d < p.rank; ++d) {
    b.out[d] = p.dims[static_cast<size_t>(d)];
    for (size_t k = 0; k < p.strides.size(); ++k) b.stride[k][d] = p.strides[k][static_cast<size_t>(d)];
  }
  return b;
}

BroadcastPlan plan_of(OpContext& c, const std::vector<size_t>& inputs) {
  std::vector<Shape> shapes;
  for (size_t i : inputs) shapes.push_back(c.input(i).shape);
  auto p = broadcast_plan(shapes);
  if (!p) {
    std::string s;
    for (const Shape& sh : shapes) s += (s.empty() ? "" : " and ") + shape_to_string(sh);
    c.fail("shapes " + s + " do not broadcast (or broadcast to more than 8 dims)");
  }
  return *p;
}

std::optional<std::string> refuse_binary(const Graph& g, const Node& n) {
  const BinaryOp op = binary_ops().at(n.op_type);
  if (n.inputs.size() != 2) return "the CUDA " + n.op_type + " takes two inputs";
  if (op == BinaryOp::And || op == BinaryOp::Or || op == BinaryOp::Xor) return require_types(g, n, {DataType::Bool});
  if (op == BinaryOp::Pow || op == BinaryOp::PRelu) return require_types(g, n, {DataType::Float});
  if (op == BinaryOp::Mod) {
    // Integer division by zero traps: integer Mod and Div stay with the CPU engine, which checks it.
    return require_types(g, n, {DataType::Float});
  }
  if (op == BinaryOp::Div) return require_types(g, n, {DataType::Float});
  const DataType t = declared_type(g, n.inputs[0]);
  if (auto r = require_types(g, n, {DataType::Float, DataType::Int32, DataType::Int64})) return r;
  if (declared_type(g, n.inputs[1]) != t) return "the inputs of " + n.op_type + " differ in type";
  return std::nullopt;
}

// BinaryKernel<T> (results of the inputs' type) or CompareKernel<T> (bool results).
template <class Kernel>
void run_broadcast(OpContext& c, BinaryOp op, const BroadcastPlan& p) {
  Kernel k{};
  k.op = op;
  k.bc = index_of(p);
  k.a = static_cast<decltype(k.a)>(c.input(0).data);
  k.b = static_cast<decltype(k.b)>(c.input(1).data);
  k.y = static_cast<decltype(k.y)>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out)));
}

template <class T>
void run_arith(OpContext& c, BinaryOp op, const BroadcastPlan& p) {
  run_broadcast<BinaryKernel<T>>(c, op, p);
}

template <class T>
void run_compare(OpContext& c, BinaryOp op, const BroadcastPlan& p) {
  run_broadcast<CompareKernel<T>>(c, op, p);
}

void run_binary(OpContext& c) {
  BinaryOp op = binary_ops().at(c.node().op_type);
  if (op == BinaryOp::Mod && c.attr_int("fmod", 0) != 0) op = BinaryOp::FMod;
  BroadcastPlan p;
  if (op == BinaryOp::PRelu && c.opset() < 7 && c.input(1).shape.size() == 1 && c.input(0).shape.size() >= 2 &&
      c.input(1).shape[0] == c.input(0).shape[1]) {
    // Before opset 7 a slope of [C] is one per channel (axis 1), as the reference reads it.
    Shape slope(c.input(0).shape.size() - 1, 1);
    slope[0] = c.input(1).shape[0];
    const Shape shapes[2] = {c.input(0).shape, slope};
    p = *broadcast_plan(shapes);
  } else {
    p = plan_of(c, {0, 1});
  }
  const DataType t = c.input(0).dtype;
  const bool boolean = is_comparison(op);
  c.output(0) = c.allocate(boolean ? DataType::Bool : t, p.out);
  switch (t) {
    case DataType::Float: boolean ? run_compare<float>(c, op, p) : run_arith<float>(c, op, p); break;
    case DataType::Int32: boolean ? run_compare<int32_t>(c, op, p) : run_arith<int32_t>(c, op, p); break;
    case DataType::Int64: boolean ? run_compare<int64_t>(c, op, p) : run_arith<int64_t>(c, op, p); break;
    case DataType::Bool: run_compare<uint8_t>(c, op, p); break;
    default: c.fail("no kernel for " + std::string(dtype_name(t)));
  }
}

std::optional<std::string> refuse_where(const Graph& g, const Node& n) {
  if (n.inputs.size() != 3) return std::string("Where takes three inputs");
  if (auto r = require_types(g, n, {DataType::Bool}, 0, 1)) return r;
  const DataType t = declared_type(g, n.inputs[1]);
  if (!movable(t) || declared_type(g, n.inputs[2]) != t) return std::string("the CUDA Where takes X and Y of one fixed-width type");
  return std::nullopt;
}

template <class T>
void run_where_of(OpContext& c, const BroadcastPlan& p) {
  WhereKernel<T> k{};
  k.bc = index_of(p);
  k.cond = static_cast<const bool*>(c.input(0).data);
  k.a = static_cast<const T*>(c.input(1).data);
  k.b = static_cast<const T*>(c.input(2).data);
  k.y = static_cast<T*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out)));
}

void run_where(OpContext& c) {
  const BroadcastPlan p = plan_of(c, {0, 1, 2});
  const DataType t = c.input(1).dtype;
  c.output(0) = c.allocate(t, p.out);
  with_element_width(t, [&](auto w) { run_where_of<decltype(w)>(c, p); });
}

// Clip's bounds: inputs 1 and 2 since opset 11 (read on the host), attributes before.
bool clip_reads_on_host(const Node&, size_t i) { return i == 1 || i == 2; }

std::optional<std::string> refuse_clip(const Graph& g, const Node& n) { return require_types(g, n, {DataType::Float}); }

void run_clip(OpContext& c) {
  ClipKernel k{};
  k.lo = -FLT_MAX;
  k.hi = FLT_MAX;
  if (c.opset() < 11) {
    k.lo = c.attr_float("min", -FLT_MAX);
    k.hi = c.attr_float("max", FLT_MAX);
  } else {
    auto bound = [&](size_t i, float& v) {
      const Tensor* t = c.host(i);
      if (!t) return;
      if (t->element_count() != 1) c.fail("the bound at input " + std::to_string(i) + " is not a scalar");
      v = t->data<float>()[0];
    };
    bound(1, k.lo);
    bound(2, k.hi);
  }
  const DeviceTensor& x = c.input(0);
  c.output(0) = c.allocate(DataType::Float, x.shape);
  k.x = static_cast<const float*>(x.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

std::optional<std::string> refuse_cast(const Graph& g, const Node& n) {
  const DataType from = declared_type(g, n.inputs.empty() ? std::string() : n.inputs[0]);
  const Attribute* to = n.attribute("to");
  if (!castable(from)) return "the CUDA Cast does not read " + std::string(from == DataType::Undefined ? "an unknown type" : dtype_name(from));
  if (!to || !is_known_dtype(static_cast<int32_t>(to->i)) || !castable(static_cast<DataType>(to->i)))
    return std::string("the CUDA Cast does not write that type");
  return std::nullopt;
}

void run_cast(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto to = static_cast<DataType>(c.attr_int("to", 0));
  c.output(0) = c.allocate(to, x.shape);
  CastKernel k{static_cast<ElemType>(x.dtype), static_cast<ElemType>(to), x.data, c.output(0).data};
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

// --- FusedElementwise (cpu/fused_ops.h) ---

// The chain's steps as the kernel runs them, or why the device cannot.
std::optional<std::string> chain_steps(const Node& n, size_t inputs, ElementwiseChainKernel* k) {
  const Attribute* ops = n.attribute("ops");
  const Attribute* operands = n.attribute("operands");
  const Attribute* params = n.attribute("params");
  if (!ops || !operands || !params) return std::string("FusedElementwise needs ops, operands and params");
  const size_t steps = ops->strings.size();
  if (steps == 0 || steps > static_cast<size_t>(kChainOps) || operands->ints.size() != 2 * steps ||
      params->floats.size() != 3 * steps)
    return "a chain of 1 to " + std::to_string(kChainOps) + " ops, two operands and three params each";
  if (inputs == 0 || inputs > static_cast<size_t>(kChainInputs))
    return "a chain of 1 to " + std::to_string(kChainInputs) + " inputs";
  for (size_t s = 0; s < steps; ++s) {
    const std::string& name = ops->strings[s];
    const cpu::ChainOp* def = cpu::chain_op(name);
    if (!def) return "'" + name + "' cannot be chained";
    ChainStep st{};
    for (int a = 0; a < 2; ++a) {
      const int64_t v = operands->ints[2 * s + static_cast<size_t>(a)];
      if (a < def->arity && (v < 0 || v >= static_cast<int64_t>(inputs + s)))
        return "operand " + std::to_string(v) + " of op " + std::to_string(s) + " names no input or earlier result";
      (a == 0 ? st.a : st.b) = a < def->arity ? static_cast<int>(v) : 0;
    }
    const float* p = &params->floats[3 * s];
    if (def->arity == 2) {
      st.binary = true;
      st.op = static_cast<int>(binary_ops().at(name));
    } else {
      const UnaryInfo& u = unary_ops().at(name);
      st.op = static_cast<int>(name == "Gelu" && p[0] != 0.f ? UnaryOp::GeluTanh : u.op);
      for (int a = 0; a < 3; ++a) {
        if (!def->attrs[a]) continue;
        const std::string attr = def->attrs[a];
        (attr == "alpha" ? st.alpha : attr == "beta" ? st.beta : st.gamma) = p[a];
      }
    }
    if (k) k->step[s] = st;
  }
  if (k) k->steps = static_cast<int>(steps);
  return std::nullopt;
}

std::optional<std::string> refuse_chain(const Graph& g, const Node& n) {
  if (auto r = require_types(g, n, {DataType::Float})) return r;
  return chain_steps(n, n.inputs.size(), nullptr);
}

void run_chain(OpContext& c) {
  ElementwiseChainKernel k{};
  const size_t inputs = c.input_count();
  if (auto why = chain_steps(c.node(), inputs, &k)) c.fail(*why);
  std::vector<size_t> all(inputs);
  for (size_t i = 0; i < inputs; ++i) all[i] = i;
  const BroadcastPlan p = plan_of(c, all);
  c.output(0) = c.allocate(DataType::Float, p.out);
  k.inputs = static_cast<int>(inputs);
  k.bc = index_of(p);
  for (size_t i = 0; i < inputs; ++i) k.x[i] = static_cast<const float*>(c.input(i).data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out)));
}

}  // namespace

void add_elementwise_ops(std::vector<OpDef>& t) {
  for (const auto& [name, info] : unary_ops()) t.push_back({name.c_str(), refuse_unary, run_unary});
  for (const char* name : {"IsNaN", "IsInf", "Not"}) t.push_back({name, refuse_predicate, run_predicate});
  for (const auto& [name, op] : binary_ops()) t.push_back({name.c_str(), refuse_binary, run_binary});
  t.push_back({"Where", refuse_where, run_where});
  t.push_back({"Clip", refuse_clip, run_clip, OpBackend::Kernel, clip_reads_on_host});
  t.push_back({"Cast", refuse_cast, run_cast});
  t.push_back({"FusedElementwise", refuse_chain, run_chain, OpBackend::Kernel, nullptr, "onnxscope.cpu"});
}

}  // namespace onnxscope::cuda
