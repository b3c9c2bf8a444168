// ONNX Runtime's fused GELUs, as its transformers optimizer and its saved
// optimized models write them (com.microsoft BiasGelu(A, B) = Gelu(A + B),
// FastGelu(X[, B]) = the tanh approximation of Gelu(X + B), Gelu(X) the
// exact one, QuickGelu(X) = X * Sigmoid(alpha X): its rewrite of SiLU), on
// float32:
//   -> Add(A, B) and Gelu (ai.onnx Gelu from opset 20, else onnxscope.cpu::Gelu;
//      approximate "tanh" for FastGelu)
//   QuickGelu -> [Mul(X, alpha)] Sigmoid, Mul(X, .) (alpha 1.702 when absent): at alpha 1 the SiLU the
//      exporters write, which fuse-conv-activation takes into the Conv before
// so that the MatMul before them and its bias fuse into one FusedMatMul with
// a Gelu activation (fuse-matmul-bias-activation), as the exporter's own
// MatMul, Add and GELU chain does. The bias B is 1-D along A's last axis
// (its size checked where both are known): Add broadcasts it the same way.
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// B is 1-D and not known to differ from A's last dim: a bias of another size
// (both known) reaches the reference kernel, which names it.
bool bias_fits(const Graph& g, const std::string& a, const std::string& b) {
  const std::optional<size_t> rank = known_rank(g, b);
  if (rank != size_t{1}) return false;
  const std::optional<Shape> bs = static_shape(g, b);
  const std::optional<TypeInfo> at = tensor_type(g, a);
  if (!bs || !at || !at->shape || at->shape->empty() || !at->shape->back().is_known()) return true;
  return at->shape->back().value == (*bs)[0];
}

}  // namespace

bool expand_contrib_gelu(Model& model, PassContext& ctx) {
  const bool onnx_gelu = model.opset_version("") >= 20;
  Graph& g = model.graph;
  std::vector<Node> out;
  out.reserve(g.nodes.size());
  size_t expanded = 0;
  for (Node& n : g.nodes) {
    if (n.domain == "com.microsoft" && n.op_type == "QuickGelu" && n.inputs.size() == 1 && n.outputs.size() == 1 &&
        !n.inputs[0].empty() && elem_type(g, n.inputs[0]) == DataType::Float && ctx.allow(n.name)) {
      const Attribute* a = n.attribute("alpha");
      const float alpha = a && a->type == AttrType::Float ? a->f : 1.702f;  // the operator's default
      const std::string base = n.name.empty() ? n.op_type : n.name;
      std::string arg = n.inputs[0];
      if (alpha != 1.0f) {
        arg = unique_value_name(g, n.outputs[0] + "_scaled");
        out.push_back(scale_node(g, base, n.inputs[0], alpha, arg));
      }
      Node sig;
      sig.name = unique_node_name(g, base + "_Sigmoid");
      sig.op_type = "Sigmoid";
      sig.inputs = {arg};
      sig.outputs = {unique_value_name(g, n.outputs[0] + "_sigmoid")};
      Node mul;
      mul.name = unique_node_name(g, base + "_Mul");
      mul.op_type = "Mul";
      mul.inputs = {n.inputs[0], sig.outputs[0]};
      mul.outputs = n.outputs;
      out.push_back(std::move(sig));
      out.push_back(std::move(mul));
      ++expanded;
      continue;
    }
    const bool exact_gelu = n.domain == "com.microsoft" && n.op_type == "Gelu" && n.inputs.size() == 1;
    const bool bias_gelu = n.domain == "com.microsoft" && n.op_type == "BiasGelu" && n.inputs.size() == 2;
    const bool fast_gelu = n.domain == "com.microsoft" && n.op_type == "FastGelu" && !n.inputs.empty() &&
                           n.inputs.size() <= 2;
    const bool ok = (bias_gelu || fast_gelu || exact_gelu) && n.outputs.size() == 1 && !n.inputs[0].empty() &&
                    elem_type(g, n.inputs[0]) == DataType::Float &&
                    (n.inputs.size() < 2 || n.inputs[1].empty() ||
                     (elem_type(g, n.inputs[1]) == DataType::Float && bias_fits(g, n.inputs[0], n.inputs[1])));
    if (!ok || !ctx.allow(n.name)) {
      out.push_back(std::move(n));
      continue;
    }
    std::string x = n.inputs[0];
    if (n.inputs.size() == 2 && !n.inputs[1].empty()) {
      Node add;
      add.name = unique_node_name(g, (n.name.empty() ? n.op_type : n.name) + "_Add");
      add.op_type = "Add";
      add.inputs = {n.inputs[0], n.inputs[1]};
      x = unique_value_name(g, n.outputs[0] + "_biased");
      add.outputs = {x};
      out.push_back(std::move(add));
    }
    Node gelu;
    gelu.name = unique_node_name(g, (n.name.empty() ? n.op_type : n.name) + "_Gelu");
    gelu.op_type = "Gelu";
    if (!onnx_gelu) gelu.domain = kCpuDomain;
    gelu.inputs = {x};
    gelu.outputs = n.outputs;
    if (fast_gelu) gelu.attributes.push_back(make_attr_string("approximate", "tanh"));
    out.push_back(std::move(gelu));
    ++expanded;
  }
  g.nodes = std::move(out);  // (every node was moved into out, expanded or not)
  if (!expanded) return false;
  if (!onnx_gelu) add_cpu_opset(model);
  log_pass(ctx, model, "expand-contrib-gelu: " + std::to_string(expanded) +
                           " BiasGelu/FastGelu/Gelu/QuickGelu -> [Add +] Gelu, [Mul +] Sigmoid + Mul");
  return true;
}

}  // namespace onnxscope::cpu
