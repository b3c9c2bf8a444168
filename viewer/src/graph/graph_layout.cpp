#include "graph/graph_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <graphviz/types.h>

#include <QElapsedTimer>
#include <cmath>
#include <mutex>
#include <string>
#include <unordered_map>

extern "C" {
extern gvplugin_library_t gvplugin_dot_layout_LTX_library;
}

namespace onnxscope::viewer::graph {

namespace {

std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

// The dot plugin linked in, so no plugin configuration file is needed.
GVC_t* context() {
  static lt_symlist_t builtins[] = {
      {"gvplugin_dot_layout_LTX_library", &gvplugin_dot_layout_LTX_library},
      {nullptr, nullptr},
  };
  static GVC_t* gvc = [] {
    agseterr(AGERR);  // warnings (e.g. about label placement) are not the user's business
    return gvContextPlugins(builtins, 0);
  }();
  return gvc;
}

std::string inches(double points) { return std::to_string(points / 72.0); }

// Graphviz wants char* for names and values it does not modify.
char* cs(const char* s) { return const_cast<char*>(s); }

}  // namespace

LayoutResult GraphLayout::run(const VisibleGraph& vg, const std::atomic<bool>* cancel) {
  LayoutResult out;
  std::lock_guard lock(graphviz_mutex());
  if (cancel && cancel->load()) {
    out.error = "cancelled";
    return out;
  }
  QElapsedTimer timer;
  timer.start();
  GVC_t* gvc = context();
  if (!gvc) {
    out.error = "Graphviz context could not be created";
    return out;
  }
  Agraph_t* g = agopen(cs("g"), Agdirected, nullptr);
  agattr(g, AGRAPH, cs("rankdir"), cs("TB"));
  agattr(g, AGRAPH, cs("nodesep"), cs("0.25"));
  agattr(g, AGRAPH, cs("ranksep"), cs("0.3"));
  agattr(g, AGRAPH, cs("label"), cs(""));
  agattr(g, AGRAPH, cs("margin"), cs("8"));
  if (vg.boxes.size() > kQuickAbove) {
    // Network simplex for x positions dominates on big graphs (BERT-base's
    // 580 boxes: 2.1 s -> 0.4 s with these limits); boxes stay a little less aligned.
    agattr(g, AGRAPH, cs("nslimit"), cs("3"));
    agattr(g, AGRAPH, cs("mclimit"), cs("0.5"));
  }
  Agsym_t* shape = agattr(g, AGNODE, cs("shape"), cs("box"));
  Agsym_t* fixed = agattr(g, AGNODE, cs("fixedsize"), cs("true"));
  Agsym_t* width = agattr(g, AGNODE, cs("width"), cs("1"));
  Agsym_t* height = agattr(g, AGNODE, cs("height"), cs("0.5"));
  agattr(g, AGNODE, cs("label"), cs(""));
  const bool labels = vg.edges.size() <= kGraphvizLabelEdges;
  Agsym_t* elabel = agattr(g, AGEDGE, cs("label"), cs(""));
  // Labels are drawn by EdgeItem, not Graphviz, which only needs their size:
  // a run of 'm' (8.33 pt wide each in Graphviz's Helvetica metrics at 10 pt)
  // as wide as the measured text.
  agattr(g, AGEDGE, cs("fontsize"), cs("10"));
  agattr(g, AGEDGE, cs("fontname"), cs("Helvetica"));
  (void)shape;
  (void)fixed;

  // Clusters: parents come first in vg.clusters.
  std::unordered_map<std::string, Agraph_t*> cluster_graph;
  std::vector<Agraph_t*> clusters(vg.clusters.size(), nullptr);
  for (size_t k = 0; k < vg.clusters.size(); ++k) {
    Agraph_t* parent = g;
    if (!vg.clusters[k].parent.isEmpty())
      if (auto it = cluster_graph.find(vg.clusters[k].parent.toStdString()); it != cluster_graph.end()) parent = it->second;
    const std::string name = "cluster_" + std::to_string(k);
    clusters[k] = agsubg(parent, cs(name.c_str()), 1);
    agsafeset(clusters[k], cs("margin"), cs("10"), cs(""));
    // The label reserves room at the top for the name ClusterItem draws there.
    const QString& scope = vg.clusters[k].scope;
    const std::string title = scope.mid(scope.lastIndexOf('/') + 1).toStdString();
    agsafeset(clusters[k], cs("label"), cs(title.c_str()), cs(""));
    agsafeset(clusters[k], cs("labeljust"), cs("l"), cs(""));
    agsafeset(clusters[k], cs("fontsize"), cs("10"), cs(""));
    cluster_graph[vg.clusters[k].scope.toStdString()] = clusters[k];
  }

  std::vector<Agnode_t*> nodes(vg.boxes.size());
  for (size_t i = 0; i < vg.boxes.size(); ++i) {
    const Box& b = vg.boxes[i];
    Agraph_t* owner = g;
    if (!b.cluster.isEmpty())
      if (auto it = cluster_graph.find(b.cluster.toStdString()); it != cluster_graph.end()) owner = it->second;
    const std::string name = "n" + std::to_string(i);
    nodes[i] = agnode(owner, cs(name.c_str()), 1);
    agxset(nodes[i], width, cs(inches(b.width).c_str()));
    agxset(nodes[i], height, cs(inches(b.height).c_str()));
  }
  std::vector<Agedge_t*> edges(vg.edges.size());
  for (size_t k = 0; k < vg.edges.size(); ++k) {
    const Edge& e = vg.edges[k];
    edges[k] = agedge(g, nodes[e.from], nodes[e.to], nullptr, 1);
    if (labels && !e.label.isEmpty()) {
      const std::string room(static_cast<size_t>(std::ceil((e.label_width + 6) / 8.33)), 'm');
      agxset(edges[k], elabel, cs(room.c_str()));
    }
  }

  if (cancel && cancel->load()) {
    agclose(g);
    out.error = "cancelled";
    return out;
  }
  if (gvLayout(gvc, g, "dot") != 0) {
    agclose(g);
    out.error = "Graphviz could not lay out the graph";
    return out;
  }

  const boxf bb = GD_bb(g);
  const double top = bb.UR.y;
  auto to_scene = [top](pointf p) { return QPointF(p.x, top - p.y); };
  out.bounds = QRectF(QPointF(bb.LL.x, 0), QPointF(bb.UR.x, bb.UR.y - bb.LL.y));
  out.centers.resize(vg.boxes.size());
  for (size_t i = 0; i < vg.boxes.size(); ++i) out.centers[i] = to_scene(ND_coord(nodes[i]));
  out.edges.resize(vg.edges.size());
  for (size_t k = 0; k < vg.edges.size(); ++k) {
    EdgeGeometry& geo = out.edges[k];
    const splines* spl = ED_spl(edges[k]);
    if (spl && spl->size > 0 && spl->list[0].size > 0) {
      const bezier& bz = spl->list[0];
      geo.path.moveTo(to_scene(bz.list[0]));
      for (int p = 1; p + 2 < bz.size; p += 3)
        geo.path.cubicTo(to_scene(bz.list[p]), to_scene(bz.list[p + 1]), to_scene(bz.list[p + 2]));
      if (bz.eflag) {
        geo.has_arrow = true;
        geo.arrow_tip = to_scene(bz.ep);
        geo.arrow_base = to_scene(bz.list[bz.size - 1]);
      }
    } else {  // no spline (should not happen): a straight line between centres
      geo.path.moveTo(out.centers[vg.edges[k].from]);
      geo.path.lineTo(out.centers[vg.edges[k].to]);
    }
    if (!vg.edges[k].label.isEmpty()) {
      geo.has_label = true;
      const textlabel_t* lab = ED_label(edges[k]);
      geo.label_pos = lab && lab->set ? to_scene(lab->pos) : geo.path.pointAtPercent(0.5);
    }
  }
  out.clusters.resize(vg.clusters.size());
  for (size_t k = 0; k < vg.clusters.size(); ++k) {
    const boxf cb = GD_bb(clusters[k]);
    out.clusters[k] = QRectF(to_scene(pointf{cb.LL.x, cb.UR.y}), to_scene(pointf{cb.UR.x, cb.LL.y}));
  }
  gvFreeLayout(gvc, g);
  agclose(g);
  out.seconds = timer.nsecsElapsed() / 1e9;
  out.ok = true;
  return out;
}

}  // namespace onnxscope::viewer::graph
