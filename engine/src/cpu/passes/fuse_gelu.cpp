// The exact GELU PyTorch exporters emit before opset 20,
//   y = x * 0.5 * (1 + Erf(x / sqrt(2)))   (x / sqrt(2) may be x * (1/sqrt(2)),
//   and the three factors may be multiplied in any grouping or order)
// -> Gelu(x) when x is float32: ai.onnx Gelu when the default-domain opset is
// >= 20, else the CPU engine's onnxscope.cpu::Gelu (same semantics, fused_ops.h).
// Every intermediate must be private to the pattern.
#include <algorithm>
#include <cmath>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool near(std::optional<double> v, double want) { return v && std::abs(*v - want) <= 1e-6 * std::abs(want); }

// For a binary node reading `value`, its other operand ("" if it reads it twice).
std::string other(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2) return {};
  if (n.inputs[0] == value && n.inputs[1] != value) return n.inputs[1];
  if (n.inputs[1] == value && n.inputs[0] != value) return n.inputs[0];
  return {};
}

}  // namespace

bool fuse_gelu(Model& model, PassContext& ctx) {
  const bool onnx_gelu = model.opset_version("") >= 20;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  auto sole = [&](const std::string& value, const char* op) { return idx.sole_reader(g, value, op); };
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& erf = g.nodes[i];
    if (!is_op(erf, "Erf") || erf.inputs.size() != 1 || erf.outputs.size() != 1) continue;
    const Node* scale = idx.producer_of(g, erf.inputs[0]);
    if (!scale || !idx.only_read_by(erf.inputs[0], i) || scale->inputs.size() != 2) continue;
    std::string x;
    if (is_op(*scale, "Div") && near(scalar_constant(model, scale->inputs[1]), std::sqrt(2.0))) x = scale->inputs[0];
    else if (is_op(*scale, "Mul")) {
      for (int s = 0; s < 2 && x.empty(); ++s)
        if (near(scalar_constant(model, scale->inputs[static_cast<size_t>(1 - s)]), std::sqrt(0.5)))
          x = scale->inputs[static_cast<size_t>(s)];
    }
    if (x.empty() || elem_type(g, x) != DataType::Float) continue;
    const Node* add = sole(erf.outputs[0], "Add");
    if (!add || !near(scalar_constant(model, other(*add, erf.outputs[0])), 1.0)) continue;
    const std::string& c = add->outputs[0];  // 1 + erf(...)
    const Node* m1 = sole(c, "Mul");
    if (!m1) continue;
    const std::string o1 = other(*m1, c);
    std::vector<const Node*> chain = {scale, &erf, add, m1};
    std::string y;
    if (o1 == x) {  // (x * c) * 0.5
      const Node* m2 = sole(m1->outputs[0], "Mul");
      if (m2 && near(scalar_constant(model, other(*m2, m1->outputs[0])), 0.5)) {
        chain.push_back(m2);
        y = m2->outputs[0];
      }
    } else if (near(scalar_constant(model, o1), 0.5)) {  // (c * 0.5) * x
      const Node* m2 = sole(m1->outputs[0], "Mul");
      if (m2 && other(*m2, m1->outputs[0]) == x) {
        chain.push_back(m2);
        y = m2->outputs[0];
      }
    } else if (const Node* h = idx.producer_of(g, o1)) {  // (x * 0.5) * c
      const int hi = idx.producer_index(o1);
      if (is_op(*h, "Mul") && idx.only_read_by(o1, static_cast<size_t>(m1 - g.nodes.data())) &&
          other(*h, x) != "" && near(scalar_constant(model, other(*h, x)), 0.5)) {
        chain.insert(chain.begin(), &g.nodes[static_cast<size_t>(hi)]);
        y = m1->outputs[0];
      }
    }
    if (y.empty()) continue;
    Node gelu;
    gelu.name = unique_node_name(g, erf.name.empty() ? "Gelu" : erf.name + "_Gelu");
    gelu.op_type = "Gelu";
    if (!onnx_gelu) gelu.domain = kCpuDomain;
    gelu.inputs = {x};
    gelu.outputs = {y};
    if (replace_chain(g, remove, chain, std::move(gelu))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused && !onnx_gelu) add_cpu_opset(model);
  if (fused) log_pass(ctx, model, "fuse-gelu: " + std::to_string(fused) + " Gelu");
  return fused > 0;
}

}  // namespace onnxscope::cpu
