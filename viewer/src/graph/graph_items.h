// The QGraphicsItems of the graph view: node and group boxes, edges with
// their dtype[shape] labels, and the frames of expanded scope groups.
// Text is left out when zoomed far out (level of detail).
#pragma once

#include <QGraphicsItem>
#include <QPainterPath>
#include <optional>

#include "graph/graph_layout.h"
#include "graph/visible_graph.h"

namespace onnxscope::viewer::graph {

enum ItemKind { kBoxItem = QGraphicsItem::UserType + 1, kEdgeItem, kClusterItem };

class BoxItem : public QGraphicsItem {
 public:
  BoxItem(int box, const Box& b);
  int type() const override { return kBoxItem; }
  int box() const { return box_; }
  const Box& data() const { return b_; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget* w) override;

  void set_heat(std::optional<QColor> c);  // nullopt: category colour
  void set_dimmed(bool on);                // heat shown, no value for this box
  void set_current(bool on);
  void set_breakpoint(bool on);
  bool is_current() const { return current_; }
  bool has_breakpoint() const { return breakpoint_; }
  bool is_dimmed() const { return dimmed_; }
  QColor fill_color() const;

 private:
  int box_;
  Box b_;
  QRectF rect_;
  std::optional<QColor> heat_;
  bool dimmed_ = false, current_ = false, breakpoint_ = false;
};

class EdgeItem : public QGraphicsItem {
 public:
  EdgeItem(int edge, const Edge& e, const EdgeGeometry& geo);
  int type() const override { return kEdgeItem; }
  int edge() const { return edge_; }
  const QString& tensor() const { return tensor_; }
  const QString& label() const { return label_; }
  QRectF boundingRect() const override { return bounds_; }
  QPainterPath shape() const override { return hit_; }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget* w) override;

 private:
  int edge_;
  QString tensor_, label_;
  QPainterPath path_, hit_;
  QPolygonF arrow_;
  QRectF label_rect_, bounds_;
};

class ClusterItem : public QGraphicsItem {
 public:
  ClusterItem(const QString& scope, const QRectF& r);
  int type() const override { return kClusterItem; }
  const QString& scope() const { return scope_; }
  // The strip along the top holding the name (double-click there collapses).
  bool in_title(const QPointF& scene_pos) const;
  QRectF boundingRect() const override { return rect_.adjusted(-1, -1, 1, 1); }
  void paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget* w) override;

 private:
  QString scope_;
  QRectF rect_;
};

// Blue -> yellow -> red for t in [0, 1].
QColor heat_color(double t);

}  // namespace onnxscope::viewer::graph
