#include "graph/graph_search.h"

#include <QSet>

#include "graph/graph_paths.h"

namespace onnxscope::viewer::graph {

void GraphSearch::build(const Model& m) {
  nodes_.clear();
  tensors_.clear();
  add_graph(m, m.graph, "main", 0);
  QSet<QString> seen;
  completions_.clear();
  auto add = [&](const QString& s) {
    if (!s.isEmpty() && !seen.contains(s)) {
      seen.insert(s);
      completions_ << s;
    }
  };
  for (const auto& e : nodes_) {
    add(e.name);
    add(e.op);
  }
  for (const auto& e : tensors_) add(e.tensor);
  completions_.sort(Qt::CaseInsensitive);
}

void GraphSearch::add_graph(const Model& m, const Graph& g, const QString& path, int depth) {
  for (const auto& in : g.inputs) tensors_.push_back({path, -1, {}, {}, QString::fromStdString(in.name)});
  for (const auto& init : g.initializers) tensors_.push_back({path, -1, {}, {}, QString::fromStdString(init.name)});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    nodes_.push_back({path, static_cast<int>(i), QString::fromStdString(n.label(i)), QString::fromStdString(n.op_type), {}});
    for (const auto& o : n.outputs)
      if (!o.empty()) tensors_.push_back({path, static_cast<int>(i), {}, {}, QString::fromStdString(o)});
    if (depth >= 16) continue;
    for (const NestedBody& b : nested_bodies(m, g, path, i)) {
      if (!b.path.contains(':')) continue;  // function bodies: shared by every call, not indexed per call
      if (auto ref = resolve_graph(m, b.path)) add_graph(m, *ref->graph, b.path, depth + 1);
    }
  }
}

std::vector<SearchHit> GraphSearch::find_node(const QString& name) const {
  std::vector<SearchHit> out;
  for (const auto& e : nodes_)
    if (e.name == name) out.push_back({SearchHit::Kind::Node, e.graph_path, e.node_index, {}, e.op + "  " + e.name});
  return out;
}

std::vector<SearchHit> GraphSearch::find(const QString& query, size_t limit) const {
  std::vector<SearchHit> out;
  QString q = query.trimmed();
  if (q.isEmpty()) return out;
  const bool ops_only = q.startsWith("op:", Qt::CaseInsensitive);
  if (ops_only) q = q.mid(3).trimmed();
  QSet<QString> taken;  // "path#index" / "path$tensor"
  auto node_hit = [&](const Entry& e) {
    const QString key = e.graph_path + "#" + QString::number(e.node_index);
    if (taken.contains(key) || out.size() >= limit) return;
    taken.insert(key);
    out.push_back({SearchHit::Kind::Node, e.graph_path, e.node_index, {}, e.op + "  " + e.name + "  (" + e.graph_path + ")"});
  };
  auto tensor_hit = [&](const Entry& e) {
    const QString key = e.graph_path + "$" + e.tensor;
    if (taken.contains(key) || out.size() >= limit) return;
    taken.insert(key);
    out.push_back({SearchHit::Kind::Tensor, e.graph_path, e.node_index, e.tensor, "tensor " + e.tensor + "  (" + e.graph_path + ")"});
  };
  if (!ops_only) {
    for (const auto& e : nodes_)
      if (e.name == q) node_hit(e);
    for (const auto& e : tensors_)
      if (e.tensor == q) tensor_hit(e);
  }
  for (const auto& e : nodes_)
    if (e.op.compare(q, Qt::CaseInsensitive) == 0) node_hit(e);
  if (ops_only) return out;
  for (const auto& e : nodes_)
    if (e.name.contains(q, Qt::CaseInsensitive)) node_hit(e);
  for (const auto& e : tensors_)
    if (e.tensor.contains(q, Qt::CaseInsensitive)) tensor_hit(e);
  return out;
}

}  // namespace onnxscope::viewer::graph
