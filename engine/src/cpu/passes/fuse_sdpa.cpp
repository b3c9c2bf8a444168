// Scaled dot-product attention as exporters decompose it,
//   Y = MatMul(Softmax(MatMul(Q, Transpose(K, [0,1,3,2])) * scale, axis=-1), V)
//   (or / scale, or no scale at all)
// -> Attention(Q, K, V, scale) when the default-domain opset is >= 23. Matched
// only in the exact form Attention computes: 4-D float32 Q, K, V (ranks known)
// whose batch and head dims are the same (no MatMul broadcasting, no grouped
// heads), no mask, a positive constant scalar scale. Every intermediate must
// be private to the pattern.
#include <algorithm>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// Leading dims [0, n) of a and b are the same (known and equal, or the same symbol).
bool same_leading_dims(const Graph& g, const std::string& a, const std::string& b, size_t n) {
  auto ta = tensor_type(g, a), tb = tensor_type(g, b);
  if (!ta || !tb || !ta->shape || !tb->shape || ta->shape->size() < n || tb->shape->size() < n) return false;
  for (size_t i = 0; i < n; ++i) {
    const Dim& x = (*ta->shape)[i];
    const Dim& y = (*tb->shape)[i];
    if (!((x.is_known() && x == y) || (x.is_symbolic() && x == y))) return false;
  }
  return true;
}

bool float_rank4(const Graph& g, const std::string& v) {
  return elem_type(g, v) == DataType::Float && known_rank(g, v) == size_t{4};
}

}  // namespace

bool fuse_sdpa(Model& model, PassContext& ctx) {
  if (model.opset_version("") < 23) return false;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  auto sole = [&](const std::string& value, const char* op) { return idx.sole_reader(g, value, op); };
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& qk = g.nodes[i];
    if (!is_op(qk, "MatMul") || qk.inputs.size() != 2 || qk.outputs.size() != 1) continue;
    const std::string& q = qk.inputs[0];
    const Node* tr = idx.producer_of(g, qk.inputs[1]);
    if (!tr || !is_op(*tr, "Transpose") || !idx.only_read_by(qk.inputs[1], i) || tr->inputs.size() != 1) continue;
    const Attribute* perm = tr->attribute("perm");
    if (!perm || perm->ints != std::vector<int64_t>{0, 1, 3, 2}) continue;
    const std::string& k = tr->inputs[0];
    std::vector<const Node*> chain = {tr, &qk};
    // Optional scaling of the logits by a positive constant.
    double scale = 1.0;
    std::string logits = qk.outputs[0];
    auto it = idx.readers.find(logits);
    if (it == idx.readers.end() || it->second.size() != 1) continue;
    const Node& after = g.nodes[it->second[0]];
    if ((is_op(after, "Mul") || is_op(after, "Div")) && after.inputs.size() == 2 && after.outputs.size() == 1) {
      const bool div = is_op(after, "Div");
      const size_t at = after.inputs[0] == logits ? 1 : 0;
      if (after.inputs[1 - at] != logits || (div && at != 1)) continue;
      auto c = scalar_constant(model, after.inputs[at]);
      if (!c || *c <= 0 || elem_type(g, after.inputs[at]) != DataType::Float) continue;
      scale = div ? 1.0 / *c : *c;
      if (!idx.only_read_by(logits, it->second[0])) continue;
      chain.push_back(&after);
      logits = after.outputs[0];
    }
    const Node* sm = sole(logits, "Softmax");
    if (!sm || sm->inputs.size() != 1) continue;
    if (const Attribute* ax = sm->attribute("axis"); ax && ax->i != -1 && ax->i != 3) continue;
    const Node* pv = sole(sm->outputs[0], "MatMul");
    if (!pv || pv->inputs.size() != 2 || pv->inputs[0] != sm->outputs[0]) continue;
    const std::string& v = pv->inputs[1];
    chain.push_back(sm);
    chain.push_back(pv);
    if (!float_rank4(g, q) || !float_rank4(g, k) || !float_rank4(g, v)) continue;
    if (!same_leading_dims(g, q, k, 2) || !same_leading_dims(g, q, v, 2)) continue;
    Node att;
    att.name = unique_node_name(g, qk.name.empty() ? "Attention" : qk.name + "_Attention");
    att.op_type = "Attention";
    att.inputs = {q, k, v};
    att.outputs = {pv->outputs[0]};
    att.attributes = {make_attr_float("scale", static_cast<float>(scale))};
    if (replace_chain(g, remove, chain, std::move(att))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused) log_pass(ctx, model, "fuse-sdpa: " + std::to_string(fused) + " Attention");
  return fused > 0;
}

}  // namespace onnxscope::cpu
