#include "reference/shape_values.h"

#include <cstring>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace onnxscope::ref {
namespace {

// ai.onnx operators whose output shapes follow from their inputs' shapes and
// attributes alone.
const std::unordered_set<std::string_view>& shape_from_shapes() {
  static const std::unordered_set<std::string_view> ops = {
      // elementwise (numpy broadcasting of the inputs' shapes)
      "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "BitShift", "BitwiseAnd", "BitwiseNot",
      "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Cos", "Cosh", "Div", "Elu", "Equal", "Erf",
      "Exp", "Floor", "Gelu", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity", "IsInf", "IsNaN",
      "LeakyRelu", "Less", "LessOrEqual", "Log", "Max", "Mean", "Min", "Mish", "Mod", "Mul", "Neg", "Not", "Or", "Pow",
      "PRelu", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign",
      "Sqrt", "Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Where", "Xor", "Swish",
      // products, convolutions, pooling, normalizations
      "MatMul", "Gemm", "Einsum", "Conv", "ConvTranspose", "MatMulInteger", "ConvInteger", "QLinearConv",
      "QLinearMatMul", "MaxPool", "AveragePool", "LpPool", "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool",
      "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization", "RMSNormalization",
      "LRN", "LpNormalization", "MeanVarianceNormalization", "Softmax", "LogSoftmax", "Hardmax",
      "QuantizeLinear", "DequantizeLinear",
      // data movement whose result shape the inputs' shapes give
      "Transpose", "Flatten", "DepthToSpace", "SpaceToDepth", "Concat", "Gather", "GatherElements", "GatherND",
      "ScatterND", "ScatterElements", "ArgMax", "ArgMin", "CumSum", "Trilu", "ReverseSequence"};
  return ops;
}

// ai.onnx operators whose output shapes also depend on the values of these inputs.
const std::unordered_map<std::string_view, std::vector<size_t>>& shape_from_values() {
  static const std::unordered_map<std::string_view, std::vector<size_t>> ops = {
      {"Reshape", {1}},   {"Expand", {1}},         {"Tile", {1}},          {"Slice", {1, 2, 3, 4}},
      {"Split", {1}},     {"Squeeze", {1}},        {"Unsqueeze", {1}},     {"Pad", {1, 3}},
      {"Resize", {1, 2, 3}}, {"Upsample", {1}},    {"TopK", {1}},          {"OneHot", {1}},
      {"ReduceMean", {1}}, {"ReduceSum", {1}},     {"ReduceMax", {1}},     {"ReduceMin", {1}},
      {"ReduceProd", {1}}, {"ReduceL1", {1}},      {"ReduceL2", {1}},      {"ReduceLogSum", {1}},
      {"ReduceLogSumExp", {1}}, {"ReduceSumSquare", {1}}, {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}},
      {"CenterCropPad", {1}}};
  return ops;
}

// Operators whose results are not a function of their inputs alone.
bool random(std::string_view op) {
  return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
         op == "Multinomial" || op == "Bernoulli" || op == "Dropout";
}

bool has_subgraph(const Node& n) {
  for (const Attribute& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

}  // namespace

std::vector<uint8_t> shape_determined_nodes(const Model& m, const std::function<bool(const Node&)>& follows_input_shapes) {
  const Graph& g = m.graph;
  // Values known from the inputs' shapes alone, and values whose shape is.
  std::unordered_set<std::string> determined, shaped;
  std::unordered_set<std::string> inputs;
  for (const auto& i : g.inputs) {
    inputs.insert(i.name);
    shaped.insert(i.name);
  }
  for (const auto& init : g.initializers) {
    shaped.insert(init.name);
    if (!inputs.count(init.name)) determined.insert(init.name);  // an input may override it
  }
  std::vector<uint8_t> out(g.nodes.size(), 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    const bool onnx = is_default_domain(n.domain);
    const bool other = !onnx && follows_input_shapes && follows_input_shapes(n);
    if ((!onnx && !other) || has_subgraph(n) || random(n.op_type)) continue;
    auto all = [&](const std::unordered_set<std::string>& set) {
      for (const auto& v : n.inputs)
        if (!v.empty() && !set.count(v)) return false;
      return true;
    };
    bool det = false;
    if (onnx && (n.op_type == "Shape" || n.op_type == "Size")) det = n.inputs.size() == 1 && shaped.count(n.inputs[0]);
    else det = all(determined);
    bool shape = det;
    if (!shape && all(shaped)) {
      if (other || shape_from_shapes().count(n.op_type)) {
        shape = true;
      } else if (auto it = shape_from_values().find(n.op_type); it != shape_from_values().end()) {
        shape = true;
        for (size_t k : it->second)
          if (k < n.inputs.size() && !n.inputs[k].empty() && !determined.count(n.inputs[k])) shape = false;
      }
    }
    out[i] = det ? 1 : 0;
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      if (det) determined.insert(o);
      if (shape) shaped.insert(o);
    }
  }
  return out;
}

bool ShapeValueCache::begin_run(const std::vector<const Value*>& inputs, size_t nodes) {
  active_ = false;
  std::vector<Key> sig;
  sig.reserve(inputs.size());
  for (const Value* v : inputs) {
    if (!v || !v->is_tensor()) {
      kept_.clear();
      has_.clear();
      signature_.clear();
      return false;
    }
    sig.push_back({v->tensor().dtype(), v->tensor().shape()});
  }
  if (sig != signature_ || has_.size() != nodes) {
    signature_ = std::move(sig);
    kept_.assign(nodes, {});
    has_.assign(nodes, 0);
  }
  active_ = true;
  return true;
}

const std::vector<Value>* ShapeValueCache::find(size_t i) const {
  return active_ && i < has_.size() && has_[i] ? &kept_[i] : nullptr;
}

void ShapeValueCache::keep(size_t i, const std::vector<const Value*>& outputs) {
  if (!active_ || i >= has_.size() || has_[i]) return;
  uint64_t bytes = 0;
  for (const Value* v : outputs) {
    if (!v) continue;
    if (!v->is_tensor() || v->tensor().is_string()) return;
    bytes += v->tensor().byte_size();
  }
  if (bytes > kMaxNodeBytes) return;
  std::vector<Value> copies;
  for (const Value* v : outputs) {
    if (!v) {
      copies.emplace_back();
      continue;
    }
    // A copy in storage of its own: the run's may come from an arena that the next run reuses.
    const Tensor& t = v->tensor();
    Tensor c = Tensor::zeros(t.dtype(), t.shape());
    if (t.byte_size()) std::memcpy(c.mutable_raw(), t.raw(), t.byte_size());
    copies.emplace_back(std::move(c));
  }
  kept_[i] = std::move(copies);
  has_[i] = 1;
}

}  // namespace onnxscope::ref
