// Scaled dot-product attention as exporters decompose it,
//   Y = MatMul(Softmax(MatMul(Q, Transpose(K, [0,1,3,2])) * scale, axis=-1), V)
//   (or / scale, or no scale at all)
// -> Attention(Q, K, V, scale) when the default-domain opset is >= 23.
// Matched (cpu/passes/sdpa_match.h) only in the exact form Attention
// computes: 4-D float32 Q, K, V with the same batch and head dims, a plain
// Transpose of K, no mask, no NaN guard, at most one positive constant
// scalar scale, on the logits. Every intermediate must be private to the
// pattern. The other forms are fuse-masked-sdpa's, for devices.
#include "cpu/passes/sdpa_match.h"

namespace onnxscope::cpu {

bool fuse_sdpa(Model& model, PassContext& ctx) {
  if (model.opset_version("") < 23) return false;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto m = match_sdpa(model, idx, i);
    // Attention's own form only; the rest is fuse-masked-sdpa's (devices).
    if (!m || !m->mask.empty() || m->nan_guard || m->scale_q != 1 || m->scale_k != 1 || m->reshaped_transpose || m->k_bshd) continue;
    const Node& qk = g.nodes[i];
    Node att;
    att.name = unique_node_name(g, qk.name.empty() ? "Attention" : qk.name + "_Attention");
    att.op_type = "Attention";
    att.inputs = {m->q, m->k, m->v};
    att.outputs = {m->y};
    att.attributes = {make_attr_float("scale", static_cast<float>(m->scale))};
    if (replace_chain(ctx, g, remove, m->chain, std::move(att))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused) log_pass(ctx, model, "fuse-sdpa: " + std::to_string(fused) + " Attention");
  return fused > 0;
}

}  // namespace onnxscope::cpu
