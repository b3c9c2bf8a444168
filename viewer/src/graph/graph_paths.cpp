#include "graph/graph_paths.h"

namespace onnxscope::viewer::graph {

namespace {

// A model-local function's body as a Graph, its inputs typed like the caller's.
std::shared_ptr<const Graph> function_graph(const Function& f, const Graph& caller_graph, const Node& caller) {
  auto g = std::make_shared<Graph>();
  g->name = f.name;
  g->doc = f.doc;
  g->nodes = f.nodes;
  g->value_info = f.value_info;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    ValueInfo v{f.inputs[i], {}, {}};
    if (i < caller.inputs.size() && !caller.inputs[i].empty())
      if (const TypeInfo* t = caller_graph.type_of(caller.inputs[i])) v.type = *t;
    g->inputs.push_back(std::move(v));
  }
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    ValueInfo v{f.outputs[i], {}, {}};
    if (i < caller.outputs.size() && !caller.outputs[i].empty())
      if (const TypeInfo* t = caller_graph.type_of(caller.outputs[i])) v.type = *t;
    g->outputs.push_back(std::move(v));
  }
  return g;
}

}  // namespace

std::vector<NestedBody> nested_bodies(const Model& m, const Graph& g, const QString& graph_path, size_t index) {
  std::vector<NestedBody> out;
  if (index >= g.nodes.size()) return out;
  const Node& n = g.nodes[index];
  const QString label = QString::fromStdString(n.label(index));
  for (const Attribute& a : n.attributes) {
    const QString an = QString::fromStdString(a.name);
    if (a.g) out.push_back({an, graph_path + "/" + label + ":" + an});
    for (size_t k = 0; k < a.graphs.size(); ++k) {
      const QString sub = an + "[" + QString::number(k) + "]";
      out.push_back({sub, graph_path + "/" + label + ":" + sub});
    }
  }
  if (out.empty() && m.function(n.domain, n.op_type, n.overload))
    out.push_back({"function " + QString::fromStdString(n.op_type), graph_path + "/" + label});
  return out;
}

std::optional<GraphRef> resolve_graph(const Model& m, const QString& path) {
  if (path != "main" && !path.startsWith("main/")) return std::nullopt;
  GraphRef ref;
  ref.path = "main";
  ref.graph = &m.graph;
  ref.crumbs = {"main"};
  ref.crumb_paths = {"main"};
  QString rest = path.mid(4);  // "" or "/..."
  while (!rest.isEmpty()) {
    rest = rest.mid(1);  // the '/'
    const Graph& g = *ref.graph;
    bool found = false;
    for (size_t i = 0; i < g.nodes.size() && !found; ++i) {
      const QString label = QString::fromStdString(g.nodes[i].label(i));
      if (!rest.startsWith(label)) continue;
      for (const NestedBody& b : nested_bodies(m, g, ref.path, i)) {
        const QString tail = b.path.mid(ref.path.size() + 1);  // "LABEL:attr" or "LABEL"
        if (!rest.startsWith(tail) || (rest.size() > tail.size() && rest[tail.size()] != '/')) continue;
        const Node& n = g.nodes[i];
        if (const Function* f = m.function(n.domain, n.op_type, n.overload); f && !tail.contains(':')) {
          ref.owned = function_graph(*f, g, n);
          ref.graph = ref.owned.get();
          ref.outer.clear();  // a function body sees only its own inputs
        } else {
          const QString attr = tail.mid(label.size() + 1);
          const int bracket = attr.indexOf('[');
          const std::string aname = (bracket < 0 ? attr : attr.left(bracket)).toStdString();
          const Attribute* a = n.attribute(aname);
          if (!a) return std::nullopt;
          const Graph* sub = bracket < 0 ? a->g.get() : nullptr;
          if (bracket >= 0) {
            const size_t k = attr.mid(bracket + 1).chopped(1).toULongLong();
            if (k < a->graphs.size()) sub = a->graphs[k].get();
          }
          if (!sub) return std::nullopt;
          ref.outer.push_back(ref.graph);
          ref.graph = sub;  // shared with the model (also inside a copied function body)
        }
        ref.crumb_paths.push_back(ref.path);
        ref.crumbs.push_back("node " + label);
        ref.path = b.path;
        ref.crumbs.push_back(b.label);
        ref.crumb_paths.push_back(b.path);
        rest = rest.mid(tail.size());
        found = true;
        break;
      }
    }
    if (!found) return std::nullopt;
  }
  return ref;
}

const TypeInfo* find_type(const GraphRef& ref, std::string_view value) {
  auto known = [](const TypeInfo* t) { return t && t->kind != TypeInfo::Kind::Unknown; };
  if (const TypeInfo* t = ref.graph->type_of(value); known(t)) return t;
  for (auto it = ref.outer.rbegin(); it != ref.outer.rend(); ++it)
    if (const TypeInfo* t = (*it)->type_of(value); known(t)) return t;
  return nullptr;
}

}  // namespace onnxscope::viewer::graph
