#include "core/segment_model.h"

#include <algorithm>

#include "core/graph_util.h"

namespace onnxscope {

using detail::for_each_read;

std::shared_ptr<Model> segment_model(const Model& m, size_t begin, size_t end, const std::set<std::string>& outputs) {
  auto s = std::make_shared<Model>();
  s->ir_version = m.ir_version;
  s->opset_imports = m.opset_imports;
  s->functions = m.functions;
  s->producer_name = m.producer_name;
  s->source = m.source;
  s->graph.name = m.graph.name + "_nodes_" + std::to_string(begin) + "_" + std::to_string(end);
  const Graph& g = m.graph;
  end = std::min(end, g.nodes.size());
  std::set<std::string> made, taken;
  detail::FreeNames free;
  for (size_t i = begin; i < end; ++i) {
    const Node& n = g.nodes[i];
    for_each_read(n, free, [&](const std::string& v) {
      if (made.count(v) || !taken.insert(v).second) return;
      if (const Initializer* init = g.initializer(v)) {
        s->graph.initializers.push_back(*init);
      } else {
        const TypeInfo* t = g.type_of(v);
        s->graph.inputs.push_back({v, t ? *t : TypeInfo{}, {}});
      }
    });
    s->graph.nodes.push_back(n);
    if (n.name.empty()) s->graph.nodes.back().name = n.label(i);  // the same label as in the whole model
    for (const auto& o : n.outputs)
      if (!o.empty()) made.insert(o);
  }
  for (size_t i = begin; i < end; ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty() && outputs.count(o)) {
        const TypeInfo* t = g.type_of(o);
        s->graph.outputs.push_back({o, t ? *t : TypeInfo{}, {}});
      }
  for (const auto& vi : g.value_info)
    if (made.count(vi.name)) s->graph.value_info.push_back(vi);
  return s;
}

std::set<std::string> values_read_after(const Model& m, size_t begin, size_t end) {
  const Graph& g = m.graph;
  end = std::min(end, g.nodes.size());
  std::set<std::string> made, out;
  for (size_t i = begin; i < end; ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) made.insert(o);
  detail::FreeNames free;
  for (size_t i = end; i < g.nodes.size(); ++i)
    for_each_read(g.nodes[i], free, [&](const std::string& v) {
      if (made.count(v)) out.insert(v);
    });
  for (const auto& o : g.outputs)
    if (made.count(o.name)) out.insert(o.name);
  return out;
}

}  // namespace onnxscope
