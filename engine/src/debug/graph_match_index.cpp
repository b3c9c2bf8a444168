#include "debug/graph_match_index.h"

#include <algorithm>

namespace onnxscope::match {
namespace {

bool float_type(DataType t) {
  return t == DataType::Float || t == DataType::Float16 || t == DataType::BFloat16 || t == DataType::Double;
}

bool has_subgraph(const Node& n) {
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

bool quantize_op(const Node& n) {
  return n.op_type == "QuantizeLinear" && (n.domain.empty() || n.domain == "ai.onnx" || n.domain == "com.microsoft");
}
bool dequantize_op(const Node& n) {
  return n.op_type == "DequantizeLinear" && (n.domain.empty() || n.domain == "ai.onnx" || n.domain == "com.microsoft");
}

}  // namespace

bool commutative(const std::string& op) {
  return op == "Add" || op == "Mul" || op == "Sum" || op == "Max" || op == "Min" || op == "Mean" || op == "And" ||
         op == "Or" || op == "Xor" || op == "Equal" || op == "BitwiseAnd" || op == "BitwiseOr" || op == "BitwiseXor";
}

GraphIndex::GraphIndex(const Model& m, const Capture* v) : model(m), g(m.graph), values(v) {
  for (const auto& init : g.initializers) statics.insert(init.name);
  for (const auto& in : g.inputs)
    if (!statics.count(in.name)) {
      root[in.name] = in.name;
      data_tensors.push_back(in.name);
    }
  for (const auto& out : g.outputs) graph_outputs.insert(out.name);
  const auto count = static_cast<int>(g.nodes.size());
  data_node.assign(size_t(count), false);
  alias_node.assign(size_t(count), false);
  for (int i = 0; i < count; ++i) {
    const Node& n = g.nodes[size_t(i)];
    bool any_data = false;
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      consumers[in].push_back(i);
      any_data = any_data || root.count(in);
    }
    for (const auto& out : n.outputs)
      if (!out.empty()) producer[out] = i;
    // Shape and Size read only a shape: their outputs are plumbing, not data.
    const bool shape_only = n.op_type == "Shape" || n.op_type == "Size";
    const bool data = !shape_only && n.op_type != "Constant" && (any_data || has_subgraph(n));
    data_node[size_t(i)] = data;
    if (!data) {
      for (const auto& out : n.outputs)
        if (!out.empty()) statics.insert(out);
      continue;
    }
    // Value-preserving nodes: their first output is an alias of the first input.
    std::string alias_of;
    const std::string first = n.inputs.empty() ? std::string() : n.inputs[0];
    if (!first.empty() && root.count(first)) {
      if (n.op_type == "Identity" || n.op_type == "Dropout") {
        alias_of = first;
      } else if (n.op_type == "Cast") {
        const Attribute* to = n.attribute("to");
        bool ok = to && float_type(static_cast<DataType>(to->i));
        if (ok && values)
          if (auto it = values->values.find(first); it != values->values.end() && it->second.is_tensor())
            ok = float_type(it->second.tensor().dtype());
        if (ok) alias_of = first;
      } else if (quantize_op(n)) {
        alias_of = first;  // the same value in quantization steps; compared through its float root
      } else if (dequantize_op(n)) {
        if (auto p = producer.find(first); p != producer.end()) {
          const Node& q = g.nodes[size_t(p->second)];
          if (quantize_op(q)) alias_of = first;  // Q's output is itself an alias of Q's input
        }
      }
    }
    alias_node[size_t(i)] = !alias_of.empty();
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const std::string& out = n.outputs[k];
      if (out.empty()) continue;
      root[out] = (k == 0 && !alias_of.empty()) ? root.at(alias_of) : out;
      data_tensors.push_back(out);
    }
  }
  for (const auto& t : data_tensors) {
    auto& list = members[root.at(t)];
    if (t == root.at(t)) list.insert(list.begin(), t);
    else list.push_back(t);
  }
}

std::vector<std::string> GraphIndex::data_input_roots(int n) const {
  std::vector<std::string> out;
  for (const auto& in : g.nodes[size_t(n)].inputs)
    if (is_data(in)) out.push_back(root_of(in));
  return out;
}

const Tensor* GraphIndex::static_value(const std::string& t) const {
  if (values)
    if (auto it = values->values.find(t); it != values->values.end() && it->second.is_tensor()) return &it->second.tensor();
  if (const Initializer* init = g.initializer(t)) return &init->value;
  if (auto p = producer.find(t); p != producer.end()) {
    const Node& n = g.nodes[size_t(p->second)];
    if (n.op_type == "Constant")
      if (const Attribute* a = n.attribute("value"); a && !a->t.empty()) return &a->t;
  }
  return nullptr;
}

std::vector<int> GraphIndex::readers(const std::string& r) const {
  std::vector<int> out;
  auto m = members.find(r);
  if (m == members.end()) return out;
  for (const auto& t : m->second) {
    auto c = consumers.find(t);
    if (c == consumers.end()) continue;
    for (int n : c->second)
      if (!alias_node[size_t(n)] && data_node[size_t(n)]) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace onnxscope::match
