// GraphScene: the items for one laid-out VisibleGraph and the lookups the
// view needs (box of a node, edges of a tensor), plus the overlays drawn on
// the boxes (heat colours, current node, breakpoints).
#pragma once

#include <QGraphicsScene>
#include <QHash>
#include <vector>

#include "graph/graph_items.h"
#include "graph/graph_layout.h"
#include "graph/visible_graph.h"

namespace onnxscope::viewer::graph {

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  GraphScene(QString graph_path, VisibleGraph vg, const LayoutResult& layout, QObject* parent = nullptr);

  const QString& graph_path() const { return path_; }
  const VisibleGraph& visible() const { return vg_; }
  const std::vector<BoxItem*>& box_items() const { return boxes_; }
  const std::vector<EdgeItem*>& edge_items() const { return edges_; }
  const std::vector<ClusterItem*>& cluster_items() const { return clusters_; }
  // The box drawing a node (itself or its collapsed group), null when folded.
  BoxItem* item_for_node(int node_index) const;
  BoxItem* item_for_io(const QString& tensor) const;
  // Edges carrying this value (one per consumer box).
  std::vector<EdgeItem*> items_for_tensor(const QString& tensor) const;

  // Heat per node index; groups take their members' maximum. Empty clears.
  void set_heat(const QHash<int, double>& values);
  void set_current_node(int node_index);  // -1 clears
  void set_breakpoint(int node_index, bool on);

 private:
  QString path_;
  VisibleGraph vg_;
  std::vector<BoxItem*> boxes_;
  std::vector<EdgeItem*> edges_;
  std::vector<ClusterItem*> clusters_;
  QHash<QString, std::vector<int>> edges_of_tensor_;
  QHash<int, int> breakpoint_count_;  // box -> breakpoints on its nodes
};

}  // namespace onnxscope::viewer::graph
