// Transpose(perm [0, 2, 1, 3]) on FusedAttention's Q, K and V, and on its
// output -> FusedAttention reading [B, S, H, D] (bshd_in's bit for that
// input) and writing [B, S, H, Dv] (bshd_out = 1) itself (contract in
// fused_ops.h): exporters' attention moves each of the four between the
// heads-inner layout its projections make and the heads-outer one the
// products want; the device reads and writes the heads-inner layout in place
// instead (BERT-base: 48 Transposes), and so does the CPU engine's kernel
// (kernels/nn/fused_attention.cpp). An input is taken when
// it comes through such a Transpose that nothing else reads; the output
// when such a Transpose alone reads it.
#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool swaps_middle(const Node& n) {
  if (!is_op(n, "Transpose") || n.inputs.size() != 1 || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const Attribute* p = n.attribute("perm");
  return p && p->ints == std::vector<int64_t>{0, 2, 1, 3};
}

}  // namespace

bool fuse_attention_transposes(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t inputs = 0, outputs = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& f = g.nodes[i];
    if (f.domain != kCpuDomain || f.op_type != kFusedAttention || f.inputs.size() < 3 || f.outputs.size() != 1) continue;
    const Attribute* in_attr = f.attribute("bshd_in");
    int64_t bits = in_attr ? in_attr->i : 0;
    std::vector<const Node*> from;
    for (size_t k = 0; k < 3; ++k) {
      if (bits & (int64_t{1} << k)) continue;
      const int t = idx.producer_index(f.inputs[k]);
      if (t < 0 || remove[static_cast<size_t>(t)] || !swaps_middle(g.nodes[static_cast<size_t>(t)]) ||
          !idx.only_read_by(f.inputs[k], i) || !ctx.allow(g.nodes[static_cast<size_t>(t)].name))
        continue;
      const Node& tr = g.nodes[static_cast<size_t>(t)];
      from.push_back(&tr);
      f.inputs[k] = tr.inputs[0];
      remove[static_cast<size_t>(t)] = true;
      bits |= int64_t{1} << k;
    }
    if (!from.empty()) {
      from.push_back(&f);
      set_fused_from(f, from);
      std::erase_if(f.attributes, [](const Attribute& a) { return a.name == "bshd_in"; });
      f.attributes.push_back(make_attr_int("bshd_in", bits));
      inputs += from.size() - 1;
    }
    const Attribute* out_attr = f.attribute("bshd_out");
    const Node* tr = idx.sole_reader(g, f.outputs[0], "Transpose");
    if ((!out_attr || out_attr->i == 0) && tr && swaps_middle(*tr)) {
      const auto at = static_cast<size_t>(tr - g.nodes.data());
      if (remove[at] || !ctx.allow(tr->name)) continue;
      // The Transpose's output is now the attention's; the attention moves
      // to the Transpose's place, after everything it reads.
      Node moved = f;
      moved.outputs = tr->outputs;
      set_fused_from(moved, {&f, tr});
      std::erase_if(moved.attributes, [](const Attribute& a) { return a.name == "bshd_out"; });
      moved.attributes.push_back(make_attr_int("bshd_out", 1));
      g.nodes[at] = std::move(moved);
      remove[i] = true;
      ++outputs;
    }
  }
  erase_nodes(g, remove);
  if (inputs + outputs)
    log_pass(ctx, model, "fuse-attention-transposes: " + std::to_string(inputs) + " inputs read and " + std::to_string(outputs) +
                             " outputs written without a Transpose");
  return inputs + outputs > 0;
}

}  // namespace onnxscope::cpu
