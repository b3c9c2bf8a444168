#include "graph/visible_graph.h"

#include <QFont>
#include <QFontMetricsF>
#include <QRegularExpression>
#include <algorithm>
#include <map>
#include <set>

namespace onnxscope::viewer::graph {

namespace {

constexpr int kExpandWholeBelow = 120;  // an expanded group this small opens fully
constexpr int kRunLength = 100;         // unscoped nodes per run group

bool is_folded_constant(const Node& n, const Graph& g) {
  if (n.op_type != "Constant" || !is_default_domain(n.domain)) return false;
  for (const auto& in : n.inputs)
    if (!in.empty()) return false;
  for (const auto& o : n.outputs)
    for (const auto& go : g.outputs)
      if (go.name == o) return false;
  return true;
}

QString last_component(const QString& s) {
  const int k = s.lastIndexOf('/');
  return k < 0 ? s : s.mid(k + 1);
}

// "/features/features.4/Conv" -> "features.4/Conv": exporters end names with
// the op type, so the scope's last part is what tells boxes apart.
QString short_name(const QString& name) {
  const int last = name.lastIndexOf('/');
  if (last <= 0) return name.mid(last + 1);
  const int prev = name.lastIndexOf('/', last - 1);
  return name.mid(prev + 1);
}

bool has_body(const Model& m, const Node& n) {
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return m.function(n.domain, n.op_type, n.overload) != nullptr;
}

QString type_label(const Graph& g, const std::vector<const Graph*>& outer, const std::string& value) {
  auto known = [](const TypeInfo* t) { return t && t->kind != TypeInfo::Kind::Unknown; };
  const TypeInfo* t = g.type_of(value);
  for (auto it = outer.rbegin(); !known(t) && it != outer.rend(); ++it) t = (*it)->type_of(value);
  return known(t) ? QString::fromStdString(t->to_string()) : QString();
}

// Number of nodes under each scope (subtree), and the scopes' parents.
struct ScopeStats {
  QHash<QString, int> subtree;
  QHash<QString, QString> parent;
};

ScopeStats scope_stats(const Graph& g, const GroupingState& s) {
  ScopeStats st;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const QStringList chain = scope_chain(group_scope(s, g, i));
    for (int k = 0; k < chain.size(); ++k) {
      st.subtree[chain[k]] += 1;
      if (k > 0) st.parent[chain[k]] = chain[k - 1];
    }
  }
  return st;
}

}  // namespace

QString node_scope(const std::string& name) {
  const auto k = name.rfind('/');
  if (k == std::string::npos || k == 0) return {};
  return QString::fromStdString(name.substr(0, k));
}

QString node_scope(const Node& n) {
  if (n.name.find('/') != std::string::npos) return node_scope(n.name);
  for (const StringPair& kv : n.metadata) {
    if (kv.key != "pkg.torch.onnx.name_scopes") continue;
    // "['', 'inner', 'inner.encoder', 'inner.encoder.layer.0', 'linear_4']": module
    // paths nest by prefix; the last entry is the traced op, not a module.
    static const QRegularExpression quoted("'([^']*)'");
    QStringList list;
    for (const auto& m : quoted.globalMatch(QString::fromStdString(kv.value))) list << m.captured(1);
    if (list.size() < 2 || !list[0].isEmpty()) return {};
    QString scope, prev;
    for (int i = 1; i + 1 < list.size(); ++i) {
      const QString& e = list[i];
      if (i > 1 && !e.startsWith(prev + ".")) break;
      scope += "/" + (i == 1 ? e : e.mid(prev.size() + 1));
      prev = e;
    }
    return scope;
  }
  return {};
}

QStringList scope_chain(const QString& scope) {
  QStringList out;
  if (scope.isEmpty()) return out;
  int from = scope.startsWith('/') ? 1 : 0;
  while (true) {
    const int k = scope.indexOf('/', from);
    if (k < 0) break;
    out.push_back(scope.left(k));
    from = k + 1;
  }
  out.push_back(scope);
  return out;
}

QString group_scope(const GroupingState& s, const Graph& g, size_t i) {
  if (i < s.run_of_node.size() && !s.run_of_node[i].isEmpty()) return s.run_of_node[i];
  return node_scope(g.nodes[i]);
}

GroupingState default_grouping(const Graph& g, int threshold) {
  GroupingState s;
  if (static_cast<int>(g.nodes.size()) <= threshold) return s;
  std::vector<size_t> unscoped;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (node_scope(g.nodes[i]).isEmpty()) unscoped.push_back(i);
  if (static_cast<int>(unscoped.size()) > threshold / 2) {
    s.run_of_node.assign(g.nodes.size(), QString());
    for (size_t r = 0; r < unscoped.size(); r += kRunLength) {
      const size_t last = std::min(unscoped.size(), r + kRunLength) - 1;
      const QString name = QString("/nodes %1-%2").arg(unscoped[r]).arg(unscoped[last]);
      for (size_t k = r; k <= last; ++k) s.run_of_node[unscoped[k]] = name;
    }
  }
  std::vector<QStringList> chains;
  chains.reserve(g.nodes.size());
  int max_depth = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    chains.push_back(scope_chain(group_scope(s, g, i)));
    max_depth = std::max(max_depth, static_cast<int>(chains.back().size()));
  }
  if (max_depth == 0) return s;
  s.enabled = true;
  int best = 1;
  for (int d = 1; d <= max_depth; ++d) {
    QSet<QString> groups;
    int boxes = 0;
    for (const auto& c : chains) {
      if (c.size() >= d) groups.insert(c[d - 1]);
      else ++boxes;
    }
    if (boxes + groups.size() <= threshold) best = d;
    else break;
  }
  for (const auto& c : chains)
    if (c.size() >= best) s.collapsed.insert(c[best - 1]);
  return s;
}

void expand_scope(const Graph& g, GroupingState& s, const QString& scope) {
  s.collapsed.remove(scope);
  const ScopeStats st = scope_stats(g, s);
  if (st.subtree.value(scope) <= kExpandWholeBelow) return;
  for (auto it = st.parent.begin(); it != st.parent.end(); ++it)
    if (it.value() == scope) s.collapsed.insert(it.key());
}

void collapse_scope(GroupingState& s, const QString& scope) {
  const QString prefix = scope + "/";
  for (auto it = s.collapsed.begin(); it != s.collapsed.end();)
    it = it->startsWith(prefix) ? s.collapsed.erase(it) : std::next(it);
  s.collapsed.insert(scope);
}

QString hiding_group(const GroupingState& s, const Graph& g, size_t node_index) {
  if (!s.enabled || s.collapsed.isEmpty()) return {};
  for (const QString& sc : scope_chain(group_scope(s, g, node_index)))
    if (s.collapsed.contains(sc)) return sc;
  return {};
}

VisibleGraph build_visible_graph(const Model& m, const Graph& g, const GroupingState& s,
                                 const std::vector<const Graph*>& outer) {
  VisibleGraph vg;
  vg.box_of_node.assign(g.nodes.size(), -1);
  for (const auto& init : g.initializers) vg.folded_values.insert(QString::fromStdString(init.name));
  for (const auto& name : g.sparse_initializer_names) vg.folded_values.insert(QString::fromStdString(name));

  std::vector<bool> folded_node(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (is_folded_constant(g.nodes[i], g)) {
      folded_node[i] = true;
      for (const auto& o : g.nodes[i].outputs) vg.folded_values.insert(QString::fromStdString(o));
    }

  std::unordered_map<std::string, int> producer;
  auto add_io = [&](Box::Kind kind, const std::string& name, const QString& sub) {
    Box b;
    b.kind = kind;
    b.tensor = QString::fromStdString(name);
    b.title = b.tensor;
    b.subtitle = sub;
    b.category = OpCategory::Io;
    vg.boxes.push_back(std::move(b));
    const int idx = static_cast<int>(vg.boxes.size()) - 1;
    vg.box_of_io.insert(vg.boxes.back().tensor, idx);
    return idx;
  };
  for (const auto& in : g.inputs) {
    if (vg.folded_values.contains(QString::fromStdString(in.name))) continue;
    producer[in.name] = add_io(Box::Kind::Input, in.name, QString::fromStdString(in.type.to_string()));
  }

  // Node and group boxes, with the expanded scopes around them as clusters.
  std::set<QString> cluster_scopes;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (folded_node[i]) continue;
    const Node& n = g.nodes[i];
    const QString scope = s.enabled ? group_scope(s, g, i) : QString();
    const QStringList chain = scope_chain(scope);
    int group_depth = -1;
    for (int k = 0; k < chain.size(); ++k)
      if (s.collapsed.contains(chain[k])) {
        group_depth = k;
        break;
      }
    const int cluster_depth = group_depth < 0 ? static_cast<int>(chain.size()) : group_depth;
    const QString cluster = cluster_depth > 0 ? chain[cluster_depth - 1] : QString();
    for (int k = 0; k < cluster_depth; ++k) cluster_scopes.insert(chain[k]);
    int box;
    if (group_depth >= 0) {
      const QString& gs = chain[group_depth];
      auto it = vg.box_of_group.find(gs);
      if (it == vg.box_of_group.end()) {
        Box b;
        b.kind = Box::Kind::Group;
        b.scope = gs;
        b.title = last_component(gs);
        b.category = OpCategory::Group;
        b.cluster = cluster;
        vg.boxes.push_back(std::move(b));
        it = vg.box_of_group.insert(gs, static_cast<int>(vg.boxes.size()) - 1);
      }
      box = it.value();
      vg.boxes[box].members.push_back(static_cast<int>(i));
    } else {
      Box b;
      b.kind = Box::Kind::Node;
      b.node_index = static_cast<int>(i);
      b.scope = group_scope(s, g, i);
      b.title = QString::fromStdString(n.op_type);
      b.subtitle = n.name.empty() ? QString::fromStdString(n.label(i)) : short_name(QString::fromStdString(n.name));
      b.category = op_category(n.op_type);
      b.cluster = cluster;
      b.has_body = has_body(m, n);
      vg.boxes.push_back(std::move(b));
      box = static_cast<int>(vg.boxes.size()) - 1;
    }
    vg.box_of_node[i] = box;
  }
  for (auto& b : vg.boxes)
    if (b.kind == Box::Kind::Group) b.subtitle = QString("%1 nodes").arg(b.members.size());
  for (const QString& sc : cluster_scopes) {
    const QStringList chain = scope_chain(sc);
    vg.clusters.push_back({sc, chain.size() > 1 ? chain[chain.size() - 2] : QString()});
  }
  std::sort(vg.clusters.begin(), vg.clusters.end(), [](const Cluster& a, const Cluster& b) {
    return a.scope.count('/') != b.scope.count('/') ? a.scope.count('/') < b.scope.count('/') : a.scope < b.scope;
  });

  // Edges, one per pair of boxes (several values between two groups merge).
  std::map<std::pair<int, int>, std::pair<int, std::set<std::string>>> edge_at;
  auto connect = [&](int from, int to, const std::string& value) {
    if (from == to) return;
    auto [it, fresh] = edge_at.try_emplace({from, to});
    if (fresh) {
      it->second.first = static_cast<int>(vg.edges.size());
      vg.edges.push_back({from, to, QString::fromStdString(value), type_label(g, outer, value), 1});
    }
    if (it->second.second.insert(value).second && it->second.second.size() > 1) {
      Edge& e = vg.edges[it->second.first];
      e.count = static_cast<int>(it->second.second.size());
      e.label = QString("%1 tensors").arg(e.count);
    }
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (folded_node[i]) continue;
    const Node& n = g.nodes[i];
    const int box = vg.box_of_node[i];
    for (const auto& in : n.inputs) {
      if (in.empty()) continue;
      const QString qin = QString::fromStdString(in);
      if (vg.folded_values.contains(qin)) {
        if (vg.boxes[box].kind == Box::Kind::Node && !vg.boxes[box].folded.contains(qin)) vg.boxes[box].folded.push_back(qin);
        continue;
      }
      auto p = producer.find(in);
      if (p == producer.end()) {  // a value of the enclosing graph seen from a body, or an error
        const QString where = outer.empty() ? "not defined" : "outer scope";
        p = producer.emplace(in, add_io(Box::Kind::Input, in, (type_label(g, outer, in) + " " + where).trimmed())).first;
      }
      connect(p->second, box, in);
    }
    for (const auto& o : n.outputs)
      if (!o.empty()) producer[o] = box;
  }
  for (const auto& out : g.outputs) {
    const int box = add_io(Box::Kind::Output, out.name, QString::fromStdString(out.type.to_string()));
    vg.box_of_io[QString::fromStdString(out.name)] = box;
    if (auto p = producer.find(out.name); p != producer.end()) connect(p->second, box, out.name);
  }
  return vg;
}

void measure_boxes(VisibleGraph& vg) {
  QFont title_font;
  title_font.setPointSizeF(10);
  title_font.setBold(true);
  QFont sub_font;
  sub_font.setPointSizeF(8);
  const QFontMetricsF tm(title_font), sm(sub_font);
  constexpr double kMaxText = 190;
  for (Box& b : vg.boxes) {
    b.title = tm.elidedText(b.title, Qt::ElideMiddle, kMaxText);
    b.subtitle = sm.elidedText(b.subtitle, Qt::ElideMiddle, kMaxText);
    const double w = std::max(tm.horizontalAdvance(b.title), sm.horizontalAdvance(b.subtitle));
    b.width = std::max(64.0, w + 20);
    b.height = b.subtitle.isEmpty() ? tm.height() + 12 : tm.height() + sm.height() + 12;
    if (b.kind == Box::Kind::Group) b.height += 6;  // room for the stacked look
  }
  QFont label_font;
  label_font.setPointSizeF(7.5);  // as EdgeItem draws it
  const QFontMetricsF lm(label_font);
  for (Edge& e : vg.edges) e.label_width = e.label.isEmpty() ? 0 : lm.horizontalAdvance(e.label) + 4;
}

}  // namespace onnxscope::viewer::graph
