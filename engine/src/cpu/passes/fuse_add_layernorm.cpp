// Add(A, B) -> LayerNormalization(sum, Scale, [Bias]) -> FusedAddLayerNorm(A,
// B, Scale, Bias) (contract in fused_ops.h): a transformer's residual sum
// normalized in the same pass that adds it, so the sum is not written and
// read back. Devices only. Float32; the sum has no other reader and is not a
// graph output; the LayerNormalization has one output (no Mean, InvStdDev);
// A and B have the same shape (no broadcasting: the dims are known numbers
// or the same symbolic names, rank for rank). The fused node takes the
// LayerNormalization's place.
#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// The two values certainly have one shape: every dim a known number or a
// symbolic name on both sides, pairwise equal.
bool same_shape(const Graph& g, const std::string& a, const std::string& b) {
  const auto ta = tensor_type(g, a), tb = tensor_type(g, b);
  if (!ta || !tb || !ta->shape || !tb->shape || ta->shape->size() != tb->shape->size()) return false;
  for (size_t d = 0; d < ta->shape->size(); ++d) {
    const Dim& x = (*ta->shape)[d];
    const Dim& y = (*tb->shape)[d];
    if (!(x.is_known() || x.is_symbolic()) || !(x == y)) return false;
  }
  return true;
}

}  // namespace

bool fuse_add_layernorm(Model& model, PassContext& ctx) {
  if (model.opset_version("") < 17) return false;  // LayerNormalization's first opset
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& ln = g.nodes[i];
    if (remove[i] || !is_op(ln, "LayerNormalization") || ln.inputs.size() < 2 || ln.inputs.size() > 3) continue;
    if (ln.outputs.empty() || ln.outputs[0].empty()) continue;
    bool extra_outputs = false;
    for (size_t k = 1; k < ln.outputs.size(); ++k) extra_outputs = extra_outputs || !ln.outputs[k].empty();
    if (extra_outputs) continue;
    const std::string& sum = ln.inputs[0];
    const int ai = idx.producer_index(sum);
    if (ai < 0 || remove[static_cast<size_t>(ai)] || !idx.only_read_by(sum, i)) continue;
    const Node& add = g.nodes[static_cast<size_t>(ai)];
    if (!is_two_input_add(add) || elem_type(g, sum) != DataType::Float) continue;
    if (!same_shape(g, add.inputs[0], add.inputs[1])) continue;  // then the sum has that shape too
    Node f;
    f.name = unique_node_name(g, (ln.name.empty() ? std::string("LayerNormalization") : ln.name) + "_add");
    f.op_type = kFusedAddLayerNorm;
    f.domain = kCpuDomain;
    f.inputs = {add.inputs[0], add.inputs[1], ln.inputs[1]};
    if (ln.inputs.size() > 2 && !ln.inputs[2].empty()) f.inputs.push_back(ln.inputs[2]);
    f.outputs = {ln.outputs[0]};
    f.attributes = ln.attributes;
    if (!replace_chain(ctx, g, remove, {&add, &ln}, std::move(f))) continue;
    ++fused;
  }
  erase_nodes(g, remove);
  if (fused) {
    add_cpu_opset(model);
    log_pass(ctx, model, "fuse-add-layernorm: " + std::to_string(fused) + " Add + LayerNormalization -> FusedAddLayerNorm");
  }
  return fused > 0;
}

}  // namespace onnxscope::cpu
