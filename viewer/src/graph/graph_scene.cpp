#include "graph/graph_scene.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace onnxscope::viewer::graph {

GraphScene::GraphScene(QString graph_path, VisibleGraph vg, const LayoutResult& layout, QObject* parent)
    : QGraphicsScene(parent), path_(std::move(graph_path)), vg_(std::move(vg)) {
  setItemIndexMethod(QGraphicsScene::BspTreeIndex);
  for (size_t k = 0; k < vg_.clusters.size() && k < layout.clusters.size(); ++k) {
    auto* c = new ClusterItem(vg_.clusters[k].scope, layout.clusters[k]);
    addItem(c);
    clusters_.push_back(c);
  }
  boxes_.reserve(vg_.boxes.size());
  for (size_t i = 0; i < vg_.boxes.size(); ++i) {
    auto* b = new BoxItem(static_cast<int>(i), vg_.boxes[i]);
    b->setPos(i < layout.centers.size() ? layout.centers[i] : QPointF());
    addItem(b);
    boxes_.push_back(b);
  }
  edges_.reserve(vg_.edges.size());
  for (size_t k = 0; k < vg_.edges.size(); ++k) {
    auto* e = new EdgeItem(static_cast<int>(k), vg_.edges[k], k < layout.edges.size() ? layout.edges[k] : EdgeGeometry{});
    addItem(e);
    edges_.push_back(e);
    edges_of_tensor_[vg_.edges[k].tensor].push_back(static_cast<int>(k));
  }
  setSceneRect(layout.bounds.adjusted(-40, -40, 40, 40));
}

BoxItem* GraphScene::item_for_node(int node_index) const {
  if (node_index < 0 || node_index >= static_cast<int>(vg_.box_of_node.size())) return nullptr;
  const int b = vg_.box_of_node[node_index];
  return b < 0 ? nullptr : boxes_[b];
}

BoxItem* GraphScene::item_for_io(const QString& tensor) const {
  auto it = vg_.box_of_io.find(tensor);
  return it == vg_.box_of_io.end() ? nullptr : boxes_[it.value()];
}

std::vector<EdgeItem*> GraphScene::items_for_tensor(const QString& tensor) const {
  std::vector<EdgeItem*> out;
  for (int k : edges_of_tensor_.value(tensor)) out.push_back(edges_[k]);
  return out;
}

void GraphScene::set_heat(const QHash<int, double>& values) {
  if (values.isEmpty()) {
    for (auto* b : boxes_) {
      b->set_heat(std::nullopt);
      b->set_dimmed(false);
    }
    return;
  }
  std::vector<double> per_box(boxes_.size(), std::numeric_limits<double>::quiet_NaN());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (auto it = values.begin(); it != values.end(); ++it) {
    const int b = it.key() >= 0 && it.key() < static_cast<int>(vg_.box_of_node.size()) ? vg_.box_of_node[it.key()] : -1;
    if (b < 0) continue;
    const double v = it.value();
    double& slot = per_box[b];
    if (std::isnan(slot) || v > slot || std::isnan(v)) slot = std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  for (size_t i = 0; i < boxes_.size(); ++i) {
    const double v = per_box[i];
    if (std::isnan(v)) {
      boxes_[i]->set_heat(std::nullopt);
      boxes_[i]->set_dimmed(true);
      continue;
    }
    const double t = !std::isfinite(v) ? 1.0 : hi > lo ? (v - lo) / (hi - lo) : 0.0;
    boxes_[i]->set_dimmed(false);
    boxes_[i]->set_heat(heat_color(t));
  }
}

void GraphScene::set_current_node(int node_index) {
  for (auto* b : boxes_)
    if (b->is_current()) b->set_current(false);
  if (BoxItem* b = item_for_node(node_index)) b->set_current(true);
}

void GraphScene::set_breakpoint(int node_index, bool on) {
  BoxItem* b = item_for_node(node_index);
  if (!b) return;
  int& n = breakpoint_count_[b->box()];
  n = std::max(0, n + (on ? 1 : -1));
  b->set_breakpoint(n > 0);
}

}  // namespace onnxscope::viewer::graph
