#include "core/graph_util.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

namespace {
void rename_in_graph(Graph& g, const std::string& from, const std::string& to) {
  // A subgraph that defines `from` itself shadows the outer name: stop there.
  for (const auto& v : g.inputs)
    if (v.name == from) return;
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == from) in = to;
    for (auto& a : n.attributes) {
      if (a.g) rename_in_graph(*a.g, from, to);
      for (auto& sg : a.graphs)
        if (sg) rename_in_graph(*sg, from, to);
    }
  }
  for (auto& o : g.outputs)
    if (o.name == from) o.name = to;
}
}  // namespace

void rename_uses(Graph& g, const std::string& from, const std::string& to) {
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == from) in = to;
    for (auto& a : n.attributes) {
      if (a.g) rename_in_graph(*a.g, from, to);
      for (auto& sg : a.graphs)
        if (sg) rename_in_graph(*sg, from, to);
    }
  }
}

std::set<std::string> names_read_by_subgraphs(const Node& n) {
  detail::FreeNames free;
  std::set<std::string> out;
  for (const auto& a : n.attributes) {
    if (a.g)
      for (const auto& name : free.of(*a.g)) out.insert(name);
    for (const auto& sg : a.graphs)
      if (sg)
        for (const auto& name : free.of(*sg)) out.insert(name);
  }
  return out;
}

size_t use_count(const Graph& g, const std::string& name) {
  size_t c = 0;
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs) c += in == name;
    if (names_read_by_subgraphs(n).count(name)) ++c;
  }
  for (const auto& o : g.outputs) c += o.name == name;
  return c;
}

}  // namespace onnxscope::cpu
