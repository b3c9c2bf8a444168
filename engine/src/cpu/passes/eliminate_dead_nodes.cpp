// Dead-node elimination: nodes none of whose outputs reach a graph output
// (directly, or through a subgraph that reads them) are removed, and so are
// initializers nothing reads any more (folded or fused away), unless the
// caller can feed them (graph inputs).
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

bool eliminate_dead_nodes(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  std::set<std::string> live;
  for (const auto& o : g.outputs) live.insert(o.name);
  std::vector<bool> keep(g.nodes.size(), false);
  // Walk backwards: a node is live if any output is read by a live node.
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    bool used = false;
    for (const auto& o : n.outputs) used = used || (!o.empty() && live.count(o));
    if (!used) continue;
    keep[i] = true;
    for (const auto& in : n.inputs)
      if (!in.empty()) live.insert(in);
    for (const auto& name : names_read_by_subgraphs(n)) live.insert(name);
  }
  size_t removed = 0;
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(g.nodes[i]));
    else ++removed;
  }
  g.nodes = std::move(kept);
  std::set<std::string> inputs;
  for (const auto& v : g.inputs) inputs.insert(v.name);
  const size_t before = g.initializers.size();
  std::erase_if(g.initializers, [&](const Initializer& i) { return !live.count(i.name) && !inputs.count(i.name); });
  const bool pruned = g.initializers.size() != before;
  if (removed && ctx.log)
    ctx.log->info("pass", Location{model.source}, "eliminate-dead-nodes: removed " + std::to_string(removed) + " nodes");
  return removed > 0 || pruned;
}

}  // namespace onnxscope::cpu
