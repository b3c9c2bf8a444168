#include "cpu/optimizer.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace onnxscope::cpu {

void set_fused_from(Node& node, const std::vector<const Node*>& from) {
  std::vector<std::string> names;
  for (const Node* n : from) {
    auto inner = fused_from(*n);
    if (inner.empty()) names.push_back(n->name);
    else names.insert(names.end(), inner.begin(), inner.end());
  }
  std::string joined;
  for (const auto& s : names) joined += (joined.empty() ? "" : ";") + s;
  for (auto& kv : node.metadata)
    if (kv.key == kFusedFrom) {
      kv.value = joined;
      return;
    }
  node.metadata.push_back({kFusedFrom, joined});
}

std::vector<std::string> fused_from(const Node& node) {
  for (const auto& kv : node.metadata)
    if (kv.key == kFusedFrom) {
      std::vector<std::string> out;
      size_t p = 0;
      while (p <= kv.value.size()) {
        size_t q = kv.value.find(';', p);
        if (q == std::string::npos) q = kv.value.size();
        out.push_back(kv.value.substr(p, q - p));
        p = q + 1;
      }
      return out;
    }
  return {};
}

namespace {
std::mutex replaced_mutex;
std::map<std::string, PassFn>& replaced() {
  static std::map<std::string, PassFn> m;
  return m;
}
}  // namespace

void replace_pass_for_testing(const std::string& name, PassFn fn) {
  std::lock_guard<std::mutex> lock(replaced_mutex);
  if (fn) replaced()[name] = fn;
  else replaced().erase(name);
}

OptimizeResult optimize(Model& model, const CpuOptions& options, bool capture, Diagnostics& log,
                        std::vector<RewriteSite>* sites) {
  OptimizeResult result;
  PassContext ctx{&log};
  ctx.budget = options.rewrite_budget;
  ctx.sites = sites;
  ctx.device_fusions = options.device_fusions;
  std::map<std::string, PassFn> swapped;
  {
    std::lock_guard<std::mutex> lock(replaced_mutex);
    swapped = replaced();
  }
  auto run = [&](const Pass& p) {
    ctx.pass = p.info.name.c_str();
    auto it = swapped.find(p.info.name);
    return (it != swapped.end() ? it->second : p.run)(model, ctx);
  };
  // A Gradient node differentiates the graph as it runs: a fused node on
  // its path has no derivative rule, so such a graph keeps its nodes.
  bool differentiated = false;
  for (const Node& n : model.graph.nodes)
    differentiated = differentiated || (n.op_type == "Gradient" && n.domain == "ai.onnx.preview.training");
  auto wanted = [&](const Pass& p) {
    return p.info.level <= options.opt_level && !options.disabled_passes.count(p.info.name) &&
           (!p.info.device_only || options.device_fusions) && !((capture || differentiated) && p.info.fuses);
  };
  // Unnamed nodes are known by their label in the original graph ("Conv#3");
  // name them so: a rewritten node keeps that name (and lists it in its
  // provenance), so errors, --explain and --profile name the user's node,
  // not a position in the rewritten graph.
  for (size_t i = 0; i < model.graph.nodes.size(); ++i)
    if (model.graph.nodes[i].name.empty()) model.graph.nodes[i].name = model.graph.nodes[i].label(i);
  // A few rounds let one rewrite expose another (folding after fusion...).
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (const Pass& p : pass_table()) {
      if (p.last || !wanted(p)) continue;
      if (run(p)) {
        changed = true;
        if (std::find(result.applied.begin(), result.applied.end(), p.info.name) == result.applied.end())
          result.applied.push_back(p.info.name);
      }
    }
    if (!changed) break;
  }
  for (const Pass& p : pass_table()) {
    if (!p.last || !wanted(p)) continue;
    if (run(p)) result.applied.push_back(p.info.name);
  }
  return result;
}

}  // namespace onnxscope::cpu
