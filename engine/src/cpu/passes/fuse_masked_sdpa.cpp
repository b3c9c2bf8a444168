// Decomposed attention in the forms ai.onnx Attention does not compute
// exactly -> onnxscope.cpu FusedAttention (cpu/fused_ops.h), for devices
// only: any opset (below 23 there is no Attention), Q and K^T each scaled
// (torch.onnx scales both by sqrt(scale)), K^T as torch.onnx's
// Reshape/Transpose/Reshape, an additive float mask, and the NaN guard
// Where(IsNaN(P), 0, P), which keeps rows with every key masked at 0 where
// the softmax gives NaN. The match is cpu/passes/sdpa_match.h's; what
// fuse-sdpa takes (it runs first) is left to it.
//
// A device runs it as one node: one GEMM for the scores, one row kernel, one
// GEMM for Y. The CPU engine runs it where the CPU has AVX-512, or AVX2 and
// FMA (kernels/nn/fused_attention.cpp: the scores of a block of rows stay
// in cache); elsewhere its only kernel is the unfused steps on reference
// kernels, so there the pass leaves the MatMuls to oneDNN.
#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/passes/sdpa_match.h"

namespace onnxscope::cpu {

bool fuse_masked_sdpa(Model& model, PassContext& ctx) {
  static const bool kernel = ONNXSCOPE_CPU_AVX512("avx512f") ||
                             (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  if (!ctx.device_fusions && !kernel) return false;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    // The CPU engine takes unknown dims on trust: its kernels check the
    // shapes at run time and run the unfused steps where they do not fit.
    // A device's kernel refuses such shapes, so a device's plan does not.
    auto m = match_sdpa(model, idx, i, /*unknown_dims=*/!ctx.device_fusions);
    if (!m) continue;
    const Node& qk = g.nodes[i];
    Node att;
    att.name = unique_node_name(g, qk.name.empty() ? "FusedAttention" : qk.name + "_Attention");
    att.op_type = kFusedAttention;
    att.domain = kCpuDomain;
    att.inputs = {m->q, m->k, m->v};
    if (!m->mask.empty()) att.inputs.push_back(m->mask);
    att.outputs = {m->y};
    att.attributes = {make_attr_float("scale_q", static_cast<float>(m->scale_q)),
                      make_attr_float("scale_k", static_cast<float>(m->scale_k)),
                      make_attr_float("scale", static_cast<float>(m->scale)), make_attr_int("nan_to_zero", m->nan_guard)};
    if (m->k_bshd) att.attributes.push_back(make_attr_int("bshd_in", 2));  // K in [B, T, H, D]
    if (m->unchecked_shapes) att.attributes.push_back(make_attr_int("unchecked_shapes", 1));
    if (replace_chain(ctx, g, remove, m->chain, std::move(att))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused) {
    add_cpu_opset(model);
    log_pass(ctx, model, "fuse-masked-sdpa: " + std::to_string(fused) + " FusedAttention");
  }
  return fused > 0;
}

}  // namespace onnxscope::cpu
