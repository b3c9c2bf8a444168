// Identity elimination: y = Identity(x) is dropped and readers of y read x.
// Kept when y is a graph output (its name is part of the model's interface)
// or when x is not a tensor-producing value we can rename safely.
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

bool eliminate_identity(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  std::set<std::string> outputs;
  for (const auto& o : g.outputs) outputs.insert(o.name);
  bool changed = false;
  for (size_t i = 0; i < g.nodes.size();) {
    Node& n = g.nodes[i];
    if (n.op_type != "Identity" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        n.inputs[0].empty() || outputs.count(n.outputs[0]) || !ctx.allow(n.name)) {
      ++i;
      continue;
    }
    const std::string from = n.outputs[0], to = n.inputs[0];
    g.nodes.erase(g.nodes.begin() + static_cast<long>(i));
    rename_uses(g, from, to);
    changed = true;
  }
  if (changed && ctx.log) ctx.log->info("pass", Location{model.source}, "eliminate-identity: removed Identity nodes");
  return changed;
}

}  // namespace onnxscope::cpu
