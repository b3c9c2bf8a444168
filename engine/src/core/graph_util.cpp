#include "core/graph_util.h"

#include <unordered_set>

namespace onnxscope::detail {

const std::set<std::string>& FreeNames::of(const Graph& g) {
  if (auto it = cache_.find(&g); it != cache_.end()) return it->second;
  std::unordered_set<std::string> defined;
  for (const auto& v : g.inputs) defined.insert(v.name);
  for (const auto& i : g.initializers) defined.insert(i.name);
  for (const auto& n : g.sparse_initializer_names) defined.insert(n);
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) defined.insert(o);
  std::set<std::string> free;
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!in.empty() && !defined.count(in)) free.insert(in);
    for (const auto& a : n.attributes) {
      auto add = [&](const std::shared_ptr<Graph>& sg) {
        if (!sg) return;
        for (const auto& name : of(*sg))
          if (!defined.count(name)) free.insert(name);
      };
      add(a.g);
      for (const auto& sg : a.graphs) add(sg);
    }
  }
  for (const auto& o : g.outputs)
    if (!o.name.empty() && !defined.count(o.name)) free.insert(o.name);
  return cache_[&g] = std::move(free);
}

}  // namespace onnxscope::detail
