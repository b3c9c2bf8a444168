// The layer normalization PyTorch exporters emit before opset 17,
//   m = ReduceMean(x, axes); d = Sub(x, m); v = ReduceMean(Pow(d, 2), axes)
//   y = Add(Mul(Div(d, Sqrt(Add(v, eps))), gamma), beta)
// -> LayerNormalization(x, gamma, beta, axis, epsilon): ai.onnx's when the
// default-domain opset is >= 17, else the CPU engine's
// onnxscope.cpu::LayerNormalization (the same contract, fused_ops.h); the
// axes are the trailing ones, x is float32 and gamma/beta broadcast to x. The final Add is optional (LayerNormalization's B is).
// Every intermediate must be private to the pattern (d is read by Pow and Div).
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

bool fuse_layernorm(Model& model, PassContext& ctx) {
  const bool onnx_ln = model.opset_version("") >= 17;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& r1 = g.nodes[i];
    if (!is_op(r1, "ReduceMean") || r1.outputs.size() != 1 || r1.inputs.empty() || remove[i]) continue;
    const std::string& x = r1.inputs[0];
    if (elem_type(g, x) != DataType::Float) continue;
    auto axes = reduce_mean_axes(model, r1);
    if (!axes) continue;
    const int64_t k = trailing_axes_count(*axes, known_rank(g, x));
    if (k == 0) continue;
    const Node* sub = idx.sole_reader(g, r1.outputs[0], "Sub");
    if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != r1.outputs[0]) continue;
    const std::string& d = sub->outputs[0];
    auto dr = idx.readers.find(d);
    if (dr == idx.readers.end() || dr->second.size() != 2 || idx.graph_outputs.count(d) || idx.subgraph_reads.count(d))
      continue;
    const Node* pow = nullptr;
    const Node* div = nullptr;
    for (size_t r : dr->second) {
      const Node& n = g.nodes[r];
      if (is_op(n, "Pow") && n.inputs.size() == 2 && n.inputs[0] == d) pow = &n;
      if (is_op(n, "Div") && n.inputs.size() == 2 && n.inputs[0] == d) div = &n;
    }
    if (!pow || !div || pow->outputs.size() != 1) continue;
    if (auto e = scalar_constant(model, pow->inputs[1]); !e || *e != 2.0) continue;
    const Node* r2 = idx.sole_reader(g, pow->outputs[0], "ReduceMean");
    if (!r2 || r2->inputs[0] != pow->outputs[0]) continue;
    auto axes2 = reduce_mean_axes(model, *r2);
    if (!axes2 || trailing_axes_count(*axes2, known_rank(g, x)) != k) continue;
    const Node* add_eps = idx.sole_reader(g, r2->outputs[0], "Add");
    if (!add_eps) continue;
    auto eps = scalar_constant(model, other_operand(*add_eps, r2->outputs[0]));
    if (!eps) continue;
    const Node* sqrt = idx.sole_reader(g, add_eps->outputs[0], "Sqrt");
    if (!sqrt || idx.sole_reader(g, sqrt->outputs[0], "Div") != div || div->inputs[1] != sqrt->outputs[0]) continue;
    const Node* mul = idx.sole_reader(g, div->outputs[0], "Mul");
    if (!mul) continue;
    const std::string gamma = other_operand(*mul, div->outputs[0]);
    if (gamma.empty() || !broadcasts_to(g, gamma, x)) continue;
    std::vector<const Node*> chain = {&r1, sub, pow, r2, add_eps, sqrt, div, mul};
    std::string beta, y = mul->outputs[0];
    if (const Node* add = idx.sole_reader(g, mul->outputs[0], "Add")) {
      const std::string b = other_operand(*add, mul->outputs[0]);
      if (!b.empty() && broadcasts_to(g, b, x)) {
        beta = b;
        y = add->outputs[0];
        chain.push_back(add);
      }
    }
    Node ln;
    ln.name = unique_node_name(g, (r1.name.empty() ? "LayerNormalization" : r1.name + "_LayerNormalization"));
    ln.op_type = "LayerNormalization";
    if (!onnx_ln) ln.domain = kCpuDomain;
    ln.inputs = {x, gamma};
    if (!beta.empty()) ln.inputs.push_back(beta);
    ln.outputs = {y};
    ln.attributes = {make_attr_int("axis", -k), make_attr_float("epsilon", static_cast<float>(*eps))};
    if (replace_chain(ctx, g, remove, chain, std::move(ln))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused && !onnx_ln) add_cpu_opset(model);
  if (fused) log_pass(ctx, model, "fuse-layernorm: " + std::to_string(fused) + " LayerNormalization");
  return fused > 0;
}

}  // namespace onnxscope::cpu
