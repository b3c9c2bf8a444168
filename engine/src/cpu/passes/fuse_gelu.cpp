// The exact GELU PyTorch exporters emit before opset 20,
//   y = x * 0.5 * (1 + Erf(x / sqrt(2)))   (x / sqrt(2) may be x * (1/sqrt(2)),
//   and the three factors may be multiplied in any grouping or order),
// and its tanh approximation (GPT-2's gelu_new),
//   y = x * 0.5 * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
// -> Gelu(x) (approximate "tanh" for the second) when x is float32: ai.onnx Gelu when the default-domain opset is
// >= 20, else the CPU engine's onnxscope.cpu::Gelu (same semantics, fused_ops.h).
// Every intermediate must be private to the pattern.
#include <algorithm>
#include <cmath>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool near(std::optional<double> v, double want) { return v && std::abs(*v - want) <= 1e-6 * std::abs(want); }

// y = x * 0.5 * c with the three factors in any grouping or order, c the
// "1 + f(...)" value: appends the Muls to `chain` and returns y ("" if the
// graph does not say that; every intermediate private to the pattern).
std::string times_half_x(const Model& model, const Graph& g, const GraphIndex& idx, const std::string& c,
                         const std::string& x, std::vector<const Node*>& chain) {
  auto sole = [&](const std::string& value, const char* op) { return idx.sole_reader(g, value, op); };
  const Node* m1 = sole(c, "Mul");
  if (!m1) return {};
  const std::string o1 = other_operand(*m1, c);
  if (o1 == x) {  // (x * c) * 0.5
    const Node* m2 = sole(m1->outputs[0], "Mul");
    if (m2 && near(scalar_constant(model, other_operand(*m2, m1->outputs[0])), 0.5)) {
      chain.push_back(m1);
      chain.push_back(m2);
      return m2->outputs[0];
    }
  } else if (near(scalar_constant(model, o1), 0.5)) {  // (c * 0.5) * x
    const Node* m2 = sole(m1->outputs[0], "Mul");
    if (m2 && other_operand(*m2, m1->outputs[0]) == x) {
      chain.push_back(m1);
      chain.push_back(m2);
      return m2->outputs[0];
    }
  } else if (const Node* h = idx.producer_of(g, o1)) {  // (x * 0.5) * c
    if (is_op(*h, "Mul") && idx.only_read_by(o1, static_cast<size_t>(m1 - g.nodes.data())) && other_operand(*h, x) != "" &&
        near(scalar_constant(model, other_operand(*h, x)), 0.5)) {
      chain.insert(chain.begin(), h);
      chain.push_back(m1);
      return m1->outputs[0];
    }
  }
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
  // Gelu(x) -> y in place of `chain`, named after its Erf or Tanh.
  auto emit = [&](const Node& core, const std::string& x, const std::string& y, const std::vector<const Node*>& chain,
                  bool tanh) {
    Node gelu;
    gelu.name = unique_node_name(g, core.name.empty() ? "Gelu" : core.name + "_Gelu");
    gelu.op_type = "Gelu";
    if (!onnx_gelu) gelu.domain = kCpuDomain;
    gelu.inputs = {x};
    gelu.outputs = {y};
    if (tanh) gelu.attributes.push_back(make_attr_string("approximate", "tanh"));
    if (replace_chain(ctx, g, remove, chain, std::move(gelu))) ++fused;
  };
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
    if (!add || !near(scalar_constant(model, other_operand(*add, erf.outputs[0])), 1.0)) continue;
    const std::string& c = add->outputs[0];  // 1 + erf(...)
    std::vector<const Node*> chain = {scale, &erf, add};
    const std::string y = times_half_x(model, g, idx, c, x, chain);
    if (!y.empty()) emit(erf, x, y, chain, false);
  }
  // The tanh approximation (GPT-2's gelu_new, transformers' "gelu_pytorch_tanh"):
  //   y = x * 0.5 * (1 + Tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
  // with x^3 as Pow(x, 3) or x * x * x, the Add's and Muls' operands in either order.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& tanh = g.nodes[i];
    if (!is_op(tanh, "Tanh") || tanh.inputs.size() != 1 || tanh.outputs.size() != 1 || remove[i]) continue;
    const Node* scale = idx.producer_of(g, tanh.inputs[0]);  // sqrt(2 / pi) * s
    if (!scale || !is_op(*scale, "Mul") || !idx.only_read_by(tanh.inputs[0], i) || scale->inputs.size() != 2) continue;
    std::string s_value;
    for (int k = 0; k < 2 && s_value.empty(); ++k)
      if (near(scalar_constant(model, scale->inputs[static_cast<size_t>(1 - k)]), std::sqrt(2.0 / M_PI)))
        s_value = scale->inputs[static_cast<size_t>(k)];
    const Node* sum = s_value.empty() ? nullptr : idx.producer_of(g, s_value);  // x + 0.044715 * x^3
    if (!sum || !is_op(*sum, "Add") || sum->inputs.size() != 2 ||
        !idx.only_read_by(s_value, static_cast<size_t>(scale - g.nodes.data())))
      continue;
    std::string x;
    const Node* cubic_mul = nullptr;
    std::vector<const Node*> cube_nodes;
    for (int k = 0; k < 2 && x.empty(); ++k) {
      const std::string& cand = sum->inputs[static_cast<size_t>(k)];
      const std::string& q = sum->inputs[static_cast<size_t>(1 - k)];
      const Node* qm = idx.producer_of(g, q);
      if (!qm || !is_op(*qm, "Mul") || !idx.only_read_by(q, static_cast<size_t>(sum - g.nodes.data()))) continue;
      std::string p;
      for (int j = 0; j < 2 && p.empty(); ++j)
        if (near(scalar_constant(model, qm->inputs[static_cast<size_t>(1 - j)]), 0.044715)) p = qm->inputs[static_cast<size_t>(j)];
      const Node* pn = p.empty() ? nullptr : idx.producer_of(g, p);
      if (!pn || !idx.only_read_by(p, static_cast<size_t>(qm - g.nodes.data()))) continue;
      std::vector<const Node*> nodes;
      if (is_op(*pn, "Pow") && pn->inputs.size() == 2 && pn->inputs[0] == cand &&
          near(scalar_constant(model, pn->inputs[1]), 3.0)) {
        nodes = {pn};
      } else if (is_op(*pn, "Mul") && pn->inputs.size() == 2) {  // x * (x * x), in either order
        const std::string& a = pn->inputs[0] == cand ? pn->inputs[1] : pn->inputs[0];
        const Node* sq = (pn->inputs[0] == cand || pn->inputs[1] == cand) ? idx.producer_of(g, a) : nullptr;
        if (sq && is_op(*sq, "Mul") && sq->inputs.size() == 2 && sq->inputs[0] == cand && sq->inputs[1] == cand &&
            idx.only_read_by(a, static_cast<size_t>(pn - g.nodes.data())))
          nodes = {sq, pn};
      }
      if (nodes.empty()) continue;
      x = cand;
      cubic_mul = qm;
      cube_nodes = nodes;
    }
    if (x.empty() || elem_type(g, x) != DataType::Float) continue;
    const Node* add = sole(tanh.outputs[0], "Add");
    if (!add || !near(scalar_constant(model, other_operand(*add, tanh.outputs[0])), 1.0)) continue;
    std::vector<const Node*> chain = cube_nodes;
    chain.insert(chain.end(), {cubic_mul, sum, scale, &tanh, add});
    const std::string y = times_half_x(model, g, idx, add->outputs[0], x, chain);
    if (!y.empty()) emit(tanh, x, y, chain, true);
  }
  erase_nodes(g, remove);
  if (fused && !onnx_gelu) add_cpu_opset(model);
  if (fused) log_pass(ctx, model, "fuse-gelu: " + std::to_string(fused) + " Gelu");
  return fused > 0;
}

}  // namespace onnxscope::cpu
