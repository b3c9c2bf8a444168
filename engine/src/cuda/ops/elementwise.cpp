// Elementwise operators: unary math and activations, IsNaN / IsInf, Clip,
// and broadcast arithmetic and comparisons on float32, float16 and bfloat16
// (computed in float and rounded on store, as the reference does) and on
// every integer width (kernels/integer_math.h, with bitwise logic,
// BitShift, Neg / Abs / Sign / Relu, Clip and Pow); Not, And / Or / Xor; Where (any fixed width); Cast and
// CastLike (kernels/elementwise.h); and the CPU engine's FusedElementwise,
// a chain of the float32 ones in one kernel.
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>

#include "cpu/fused_ops.h"
#include "cuda/ops/op_table.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

bool castable(DataType t) {
  switch (t) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64: case DataType::Bool:
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2: case DataType::Float8E5M2FNUZ:
      return true;
    default: return false;
  }
}

bool fixed_width_integer(DataType t) {
  switch (t) {
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64:
      return true;
    default: return false;
  }
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

namespace {

// The types the float-computed kernels store (kernels/elementwise.h load_real).
bool is_real(DataType t) { return t == DataType::Float || t == DataType::Float16 || t == DataType::BFloat16; }

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
      {"Tan", {UnaryOp::Tan, 0, 0, 0}},
      {"Asin", {UnaryOp::Asin, 0, 0, 0}},
      {"Acos", {UnaryOp::Acos, 0, 0, 0}},
      {"Atan", {UnaryOp::Atan, 0, 0, 0}},
      {"Sinh", {UnaryOp::Sinh, 0, 0, 0}},
      {"Cosh", {UnaryOp::Cosh, 0, 0, 0}},
      {"Asinh", {UnaryOp::Asinh, 0, 0, 0}},
      {"Acosh", {UnaryOp::Acosh, 0, 0, 0}},
      {"Atanh", {UnaryOp::Atanh, 0, 0, 0}},
      {"Swish", {UnaryOp::Swish, 1.f, 0, 0}},
      {"Shrink", {UnaryOp::Shrink, 0.5f, 0, 0}},  // alpha: lambd, beta: bias
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

// The unary operators with integer forms (IntegerUnaryKernel), by their schemas' types.
std::optional<IntUnaryOp> int_unary_op(const std::string& op) {
  if (op == "Neg") return IntUnaryOp::Neg;
  if (op == "Abs") return IntUnaryOp::Abs;
  if (op == "Sign") return IntUnaryOp::Sign;
  if (op == "Relu") return IntUnaryOp::Relu;
  return std::nullopt;
}
bool integer_unary_signed_only(const std::string& op) { return op == "Neg" || op == "Relu"; }

std::optional<std::string> refuse_unary(const Graph& g, const Node& n) {
  if (n.op_type == "Gelu") {
    const Attribute* a = n.attribute("approximate");
    if (a && a->s != "none" && a->s != "tanh") return "Gelu approximate='" + a->s + "'";
  }
  const DataType t = n.inputs.empty() ? DataType::Undefined : declared_type(g, n.inputs[0]);
  if (int_unary_op(n.op_type) && fixed_width_integer(t) && (dtype_info(t).is_signed || !integer_unary_signed_only(n.op_type)))
    return std::nullopt;
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16});
}

// IntegerUnaryKernel on x (any integer width), output 0 allocated like x.
void run_integer_unary(OpContext& c, IntegerUnaryKernel k) {
  const DeviceTensor& x = c.input(0);
  c.output(0) = c.allocate(x.dtype, x.shape);
  k.type = int_type(x.dtype);
  k.x = x.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

void run_unary(OpContext& c) {
  const std::optional<IntUnaryOp> int_op = int_unary_op(c.node().op_type);
  if (int_op && fixed_width_integer(c.input(0).dtype)) {
    if (integer_unary_signed_only(c.node().op_type) && !dtype_info(c.input(0).dtype).is_signed)
      c.fail(c.node().op_type + " takes signed integers, not " + std::string(dtype_name(c.input(0).dtype)));
    IntegerUnaryKernel k{};
    k.op = *int_op;
    run_integer_unary(c, k);
    return;
  }
  const UnaryInfo& u = unary_ops().at(c.node().op_type);
  UnaryKernel k{};
  k.op = u.op;
  if (u.op == UnaryOp::Gelu && c.attr_string("approximate", "none") == "tanh") k.op = UnaryOp::GeluTanh;
  k.alpha = c.attr_float(u.op == UnaryOp::Shrink ? "lambd" : "alpha", u.alpha);
  k.beta = c.attr_float(u.op == UnaryOp::Shrink ? "bias" : "beta", u.beta);
  k.gamma = c.attr_float("gamma", u.gamma);
  const DeviceTensor& x = c.input(0);
  if (!is_real(x.dtype)) c.fail("no kernel for " + std::string(dtype_name(x.dtype)));
  c.output(0) = c.allocate(x.dtype, x.shape);
  k.type = static_cast<ElemType>(x.dtype);
  k.x = x.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

std::optional<std::string> refuse_predicate(const Graph& g, const Node& n) {
  if (n.op_type == "Not") return require_types(g, n, {DataType::Bool});
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16});
}

void run_predicate(OpContext& c) {
  UnaryPredicateKernel k{};
  const std::string& op = c.node().op_type;
  k.op = op == "IsNaN" ? UnaryOp::IsNaN : op == "IsInf" ? UnaryOp::IsInf : UnaryOp::Not;
  k.negative = c.attr_int("detect_negative", 1) != 0;
  k.positive = c.attr_int("detect_positive", 1) != 0;
  const DeviceTensor& x = c.input(0);
  if (k.op != UnaryOp::Not && !is_real(x.dtype)) c.fail("no kernel for " + std::string(dtype_name(x.dtype)));
  c.output(0) = c.allocate(DataType::Bool, x.shape);
  k.type = static_cast<ElemType>(x.dtype);
  k.x = x.data;
  k.y = static_cast<bool*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
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


// Two inputs of one type: float32, float16, bfloat16 or any integer width (`also`: one more type).
std::optional<std::string> require_float_or_integer(const Graph& g, const Node& n, DataType also = DataType::Undefined) {
  if (n.inputs.size() != 2) return "the CUDA " + n.op_type + " takes two inputs";
  const DataType t = declared_type(g, n.inputs[0]);
  if (!is_real(t) && !fixed_width_integer(t) && (t == DataType::Undefined || t != also))
    return "the CUDA kernel for " + n.op_type + " takes float, float16, bfloat16 or an integer type (input 0 is " +
           (t == DataType::Undefined ? std::string("of an unknown type") : std::string(dtype_name(t))) + ")";
  if (declared_type(g, n.inputs[1]) != t) return "the inputs of " + n.op_type + " differ in type";
  return std::nullopt;
}

std::optional<std::string> refuse_variadic(const Graph& g, const Node& n) {
  if (n.inputs.empty()) return n.op_type + " takes one input or more";
  for (const std::string& in : n.inputs)
    if (in.empty()) return n.op_type + " has an omitted input";
  const DataType t = declared_type(g, n.inputs[0]);
  if (!is_real(t)) return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16});
  for (const std::string& in : n.inputs)
    if (declared_type(g, in) != t) return "the inputs of " + n.op_type + " differ in type";
  return std::nullopt;
}

std::optional<std::string> refuse_binary(const Graph& g, const Node& n) {
  const BinaryOp op = binary_ops().at(n.op_type);
  if ((op == BinaryOp::Max || op == BinaryOp::Min) && n.inputs.size() != 2) return refuse_variadic(g, n);
  if (n.inputs.size() != 2) return "the CUDA " + n.op_type + " takes two inputs";
  if (op == BinaryOp::And || op == BinaryOp::Or || op == BinaryOp::Xor) return require_types(g, n, {DataType::Bool});
  if (op == BinaryOp::Pow) {  // the exponent may be of any numeric type (opset 12 on)
    if (!fixed_width_integer(declared_type(g, n.inputs[0])))
      if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1)) return r;
    const DataType e = declared_type(g, n.inputs[1]);
    if (e == DataType::Bool || !castable(e) || !(dtype_info(e).is_float || dtype_info(e).is_integer))
      return "the CUDA Pow takes a float or integer exponent (it is " + std::string(dtype_name(e)) + ")";
    return std::nullopt;
  }
  if (op == BinaryOp::PRelu) {
    if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16})) return r;
    if (declared_type(g, n.inputs[1]) != declared_type(g, n.inputs[0])) return "the inputs of " + n.op_type + " differ in type";
    return std::nullopt;
  }
  return require_float_or_integer(g, n, op == BinaryOp::Equal ? DataType::Bool : DataType::Undefined);
}

// The integer form of a BinaryOp (Pow, PRelu and the logic ops have none).
IntOp int_op_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return IntOp::Add;
    case BinaryOp::Sub: return IntOp::Sub;
    case BinaryOp::Mul: return IntOp::Mul;
    case BinaryOp::Div: return IntOp::Div;
    case BinaryOp::Mod: return IntOp::Mod;
    case BinaryOp::FMod: return IntOp::FMod;
    case BinaryOp::Max: return IntOp::Max;
    case BinaryOp::Min: return IntOp::Min;
    case BinaryOp::Equal: return IntOp::Equal;
    case BinaryOp::Less: return IntOp::Less;
    case BinaryOp::Greater: return IntOp::Greater;
    case BinaryOp::LessOrEqual: return IntOp::LessOrEqual;
    case BinaryOp::GreaterOrEqual: return IntOp::GreaterOrEqual;
    default: throw std::logic_error("no integer form of this operator");
  }
}

// Integer inputs 0 and 1 (any width) broadcast by p; output 0 allocated.
void run_integer(OpContext& c, IntOp op, const BroadcastPlan& p) {
  IntegerBinaryKernel k{};
  k.op = op;
  k.type = int_type(c.input(0).dtype);
  k.bc = index_of(p);
  k.a = c.input(0).data;
  k.b = c.input(1).data;
  k.y = c.output(0).data;
  if (op == IntOp::Div || op == IntOp::Mod || op == IntOp::FMod) {
    const FaultLog::Site site = c.fault_site(FaultKind::Divisor);
    k.fault = site.record;
    k.site = site.id;
  }
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out)));
}

// BinaryKernel (results of the inputs' real type) or CompareKernel (bool results).
template <class Kernel>
void run_broadcast(OpContext& c, BinaryOp op, const BroadcastPlan& p) {
  Kernel k{};
  k.op = op;
  k.type = static_cast<ElemType>(c.input(0).dtype);
  k.bc = index_of(p);
  k.a = c.input(0).data;
  k.b = c.input(1).data;
  k.y = static_cast<decltype(k.y)>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out)));
}

// Sum, Mean, and Max / Min of other than two inputs: float32, float16 or
// bfloat16, in groups of up to 4 inputs (kernels/elementwise.h VariadicKernel).
void run_variadic(OpContext& c) {
  const std::string& name = c.node().op_type;
  const BinaryOp op = name == "Max" ? BinaryOp::Max : name == "Min" ? BinaryOp::Min : BinaryOp::Add;
  const size_t n = c.input_count();
  if (n == 0) c.fail("no inputs");
  const DataType t = c.input(0).dtype;
  for (size_t i = 0; i < n; ++i)
    if (c.input(i).dtype != t || !is_real(t)) c.fail("the inputs must be of one type: float, float16 or bfloat16");
  DeviceTensor acc;
  for (size_t first = 0; first < n;) {
    // This group: the previous group's result (when there is one), then inputs from `first`.
    std::vector<const DeviceTensor*> group;
    if (first > 0) group.push_back(&acc);
    while (group.size() < 4 && first < n) group.push_back(&c.input(first++));
    std::vector<Shape> shapes;
    for (const DeviceTensor* t : group) shapes.push_back(t->shape);
    const auto p = broadcast_plan(shapes);
    if (!p) c.fail("the inputs' shapes do not broadcast (or broadcast to more than 8 dims)");
    // A group's result passed to the next stays float32, as the reference's running value.
    const DataType out_type = first == n ? t : DataType::Float;
    DeviceTensor out = c.allocate(out_type, p->out);
    VariadicKernel k{};
    k.op = op;
    k.type = static_cast<ElemType>(t);
    k.lead = group[0] == &acc ? ElemType::Float : k.type;
    k.out = static_cast<ElemType>(out_type);
    k.inputs = static_cast<int>(group.size());
    k.divide = name == "Mean" && first == n;
    k.count = static_cast<float>(n);
    k.bc = index_of(*p);
    for (size_t i = 0; i < group.size(); ++i) k.x[i] = group[i]->data;
    k.y = out.data;
    launch(c.rt(), k, static_cast<int64_t>(elements_of(p->out)));
    acc = std::move(out);
  }
  c.output(0) = std::move(acc);
}

void run_binary(OpContext& c);

// Pow with an exponent of another type than the base: the exponent cast to
// float32 and the base widened to it (run_on_float32), as the reference
// takes both in the base's compute type (float) and rounds the power to the
// base's type.
void run_pow_mixed(OpContext& c) {
  const DeviceTensor& e = c.input(1);
  const DeviceTensor ef = c.allocate(DataType::Float, e.shape);
  launch(c.rt(), CastKernel{static_cast<ElemType>(e.dtype), ElemType::Float, e.data, ef.data, true},
         static_cast<int64_t>(elements_of(e.shape)));
  const DeviceTensor* in[] = {&c.input(0), &ef};
  std::vector<DeviceTensor> out(1);
  OpContext f = c.over(in, out);
  run_on_float32(f, run_binary);
  c.output(0) = std::move(out[0]);
}

// Pow of an integer base (IntegerPowKernel), the exponent of any numeric type.
void run_integer_pow(OpContext& c, const BroadcastPlan& p) {
  const DeviceTensor& e = c.input(1);
  if (!castable(e.dtype) || e.dtype == DataType::Bool) c.fail("no kernel for a " + std::string(dtype_name(e.dtype)) + " exponent");
  c.output(0) = c.allocate(c.input(0).dtype, p.out);
  IntegerPowKernel k{};
  k.type = int_type(c.input(0).dtype);
  k.exponent = static_cast<ElemType>(e.dtype);
  k.bc = index_of(p);
  k.a = c.input(0).data;
  k.b = e.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p.out)));
}

void run_binary(OpContext& c) {
  if (c.input_count() != 2) {
    run_variadic(c);
    return;
  }
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
  if (op == BinaryOp::Pow && fixed_width_integer(t)) {
    run_integer_pow(c, p);
    return;
  }
  if (op == BinaryOp::Pow && c.input(1).dtype != t) {
    run_pow_mixed(c);
    return;
  }
  if (c.input(1).dtype != t) c.fail("the inputs differ in type");
  const bool boolean = is_comparison(op);
  c.output(0) = c.allocate(boolean ? DataType::Bool : t, p.out);
  if (is_real(t)) {
    boolean ? run_broadcast<CompareKernel>(c, op, p) : run_broadcast<BinaryKernel>(c, op, p);
  } else if (t == DataType::Bool && boolean) {
    run_broadcast<CompareKernel>(c, op, p);
  } else if (fixed_width_integer(t) && op != BinaryOp::Pow && op != BinaryOp::PRelu && op < BinaryOp::And) {
    run_integer(c, int_op_of(op), p);
  } else {
    c.fail("no kernel for " + std::string(dtype_name(t)));
  }
}

// BitwiseAnd / BitwiseOr / BitwiseXor (opset 18) and BitShift: integers of one type.
std::optional<std::string> refuse_bitwise(const Graph& g, const Node& n) {
  if (n.op_type == "BitShift") {
    const std::string dir = n.attribute("direction") ? n.attribute("direction")->s : std::string();
    if (dir != "LEFT" && dir != "RIGHT") return "BitShift direction '" + dir + "'";
  }
  if (n.inputs.size() != 2) return "the CUDA " + n.op_type + " takes two inputs";
  const DataType t = declared_type(g, n.inputs[0]);
  if (!fixed_width_integer(t) || declared_type(g, n.inputs[1]) != t)
    return "the CUDA " + n.op_type + " takes two inputs of one integer type";
  return std::nullopt;
}

void run_bitwise(OpContext& c) {
  const std::string& name = c.node().op_type;
  const IntOp op = name == "BitwiseAnd"  ? IntOp::BitAnd
                   : name == "BitwiseOr" ? IntOp::BitOr
                   : name == "BitwiseXor" ? IntOp::BitXor
                   : c.attr_string("direction", "") == "LEFT" ? IntOp::ShiftLeft
                                                              : IntOp::ShiftRight;
  const DataType t = c.input(0).dtype;
  if (!fixed_width_integer(t) || c.input(1).dtype != t) c.fail("the inputs must be of one integer type");
  const BroadcastPlan p = plan_of(c, {0, 1});
  c.output(0) = c.allocate(t, p.out);
  run_integer(c, op, p);
}

std::optional<std::string> refuse_bitwise_not(const Graph& g, const Node& n) {
  const DataType t = n.inputs.empty() ? DataType::Undefined : declared_type(g, n.inputs[0]);
  if (!fixed_width_integer(t)) return std::string("the CUDA BitwiseNot takes an integer type");
  return std::nullopt;
}

void run_bitwise_not(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (!fixed_width_integer(x.dtype)) c.fail("the input must be of an integer type");
  c.output(0) = c.allocate(x.dtype, x.shape);
  BitwiseNotKernel k{int_type(x.dtype), x.data, c.output(0).data};
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
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
  k.cond = static_cast<const uint8_t*>(c.input(0).data);
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

// Integer types from opset 11 on (the bounds inputs of x's type); floats in every version.
std::optional<std::string> refuse_clip(const Graph& g, const Node& n, int64_t opset) {
  const DataType t = n.inputs.empty() ? DataType::Undefined : declared_type(g, n.inputs[0]);
  if (opset >= 11 && fixed_width_integer(t)) return std::nullopt;
  return require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16});
}
// Used only without an opset (refuse_in_opset takes the model's): the newest form.
std::optional<std::string> refuse_clip_any(const Graph& g, const Node& n) { return refuse_clip(g, n, INT64_MAX); }

// The bounds as the integer kernel compares them (sign- or zero-extended).
void run_integer_clip(OpContext& c) {
  IntegerUnaryKernel k{};
  k.op = IntUnaryOp::Clip;
  const DataType t = c.input(0).dtype;
  auto bound = [&](size_t i, bool& has, uint64_t& v) {
    const Tensor* b = c.host(i);
    if (!b) return;
    if (b->element_count() != 1 || b->dtype() != t)
      c.fail("min and max must be scalars of the input's element type, got " + std::string(dtype_name(b->dtype())) +
             shape_to_string(b->shape()));
    has = true;
    v = int_load(int_type(t), b->raw(), 0);
  };
  bound(1, k.has_lo, k.lo);
  bound(2, k.has_hi, k.hi);
  run_integer_unary(c, k);
}

void run_clip(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  if (fixed_width_integer(x.dtype) && c.opset() >= 11) {
    run_integer_clip(c);
    return;
  }
  if (!is_real(x.dtype)) c.fail("no kernel for " + std::string(dtype_name(x.dtype)));
  ClipKernel k{};
  k.lo = -INFINITY;  // no bound: -inf and +inf pass as they are
  k.hi = INFINITY;
  if (c.opset() < 11) {
    if (c.node().attribute("min")) k.lo = c.attr_float("min", 0.f);
    if (c.node().attribute("max")) k.hi = c.attr_float("max", 0.f);
  } else {
    auto bound = [&](size_t i, float& v) {
      const Tensor* t = c.host(i);
      if (!t) return;
      if (t->element_count() != 1 || t->dtype() != x.dtype)
        c.fail("min and max must be scalars of the input's element type, got " + std::string(dtype_name(t->dtype())) +
               shape_to_string(t->shape()));
      v = static_cast<float>(t->element_as_double(0));  // exact: a float, float16 or bfloat16
    };
    bound(1, k.lo);
    bound(2, k.hi);
  }
  c.output(0) = c.allocate(x.dtype, x.shape);
  k.type = static_cast<ElemType>(x.dtype);
  k.x = x.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
}

// The packed types Cast also takes (PackedCastKernel): int4, uint4, int2, uint2, float4e2m1.
bool packed_castable(DataType t) {
  return t == DataType::Int4 || t == DataType::Uint4 || t == DataType::Int2 || t == DataType::Uint2 || t == DataType::Float4E2M1;
}

std::optional<std::string> refuse_cast(const Graph& g, const Node& n) {
  const DataType from = declared_type(g, n.inputs.empty() ? std::string() : n.inputs[0]);
  const Attribute* to = n.attribute("to");
  if (!castable(from) && !packed_castable(from))
    return "the CUDA Cast does not read " + std::string(from == DataType::Undefined ? "an unknown type" : dtype_name(from));
  if (!to || !is_known_dtype(static_cast<int32_t>(to->i)))
    return std::string("the CUDA Cast does not write that type");
  if (const auto t = static_cast<DataType>(to->i); !castable(t) && !packed_castable(t))
    return "the CUDA Cast does not write " + std::string(dtype_name(t));
  return std::nullopt;
}

// CastLike (opset 15): Cast to input 1's type, whose values are not read.
std::optional<std::string> refuse_cast_like(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("CastLike takes two inputs");
  const DataType from = declared_type(g, n.inputs[0]), to = declared_type(g, n.inputs[1]);
  if (!castable(from) && !packed_castable(from))
    return "the CUDA CastLike does not read " + std::string(from == DataType::Undefined ? "an unknown type" : dtype_name(from));
  if (!castable(to) && !packed_castable(to))
    return "the CUDA CastLike does not write " + std::string(to == DataType::Undefined ? "an unknown type" : dtype_name(to));
  return std::nullopt;
}

void run_cast(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const auto to = c.node().op_type == "CastLike" ? c.input(1).dtype : static_cast<DataType>(c.attr_int("to", 0));
  c.output(0) = c.allocate(to, x.shape);
  const bool saturate = c.attr_int("saturate", 1) != 0;
  const auto n = static_cast<int64_t>(elements_of(x.shape));
  if (!packed_castable(x.dtype) && !packed_castable(to)) {
    launch(c.rt(), CastKernel{static_cast<ElemType>(x.dtype), static_cast<ElemType>(to), x.data, c.output(0).data, saturate}, n);
    return;
  }
  const PackedCastKernel k{static_cast<ElemType>(x.dtype), static_cast<ElemType>(to), n, x.data, c.output(0).data, saturate};
  const int w = packed_bits(k.to);
  launch(c.rt(), k, w ? (n + 8 / w - 1) / (8 / w) : n);
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
  for (const char* name : {"Sum", "Mean"}) t.push_back({name, refuse_variadic, run_variadic});
  for (const char* name : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift"}) t.push_back({name, refuse_bitwise, run_bitwise});
  t.push_back({"BitwiseNot", refuse_bitwise_not, run_bitwise_not});
  t.push_back({"Where", refuse_where, run_where});
  t.push_back({"Clip", refuse_clip_any, run_clip, OpBackend::Kernel, clip_reads_on_host, "", refuse_clip});
  t.push_back({"Cast", refuse_cast, run_cast});
  t.push_back({"CastLike", refuse_cast_like, run_cast});
  t.push_back({"FusedElementwise", refuse_chain, run_chain, OpBackend::Kernel, nullptr, "onnxscope.cpu"});
}

}  // namespace onnxscope::cuda
