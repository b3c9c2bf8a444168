// GraphLayout: positions for a VisibleGraph from the Graphviz C library
// ("dot", in process). One layout at a time in the whole process: Graphviz
// keeps global state that is not safe across threads.
#pragma once

#include <QPainterPath>
#include <QPointF>
#include <QRectF>
#include <QString>
#include <atomic>
#include <vector>

#include "graph/visible_graph.h"

namespace onnxscope::viewer::graph {

struct EdgeGeometry {
  QPainterPath path;             // the spline, tail to where the arrow starts
  QPointF arrow_tip, arrow_base; // arrow head (tip at the consumer)
  QPointF label_pos;             // centre of the label
  bool has_arrow = false;
  bool has_label = false;
};

struct LayoutResult {
  bool ok = false;
  QString error;
  QRectF bounds;                   // scene coordinates (y down)
  std::vector<QPointF> centers;    // per box
  std::vector<EdgeGeometry> edges; // per VisibleGraph edge
  std::vector<QRectF> clusters;    // per VisibleGraph cluster
  double seconds = 0;              // Graphviz time alone
};

class GraphLayout {
 public:
  // Edge labels are placed by Graphviz below this many edges, at the spline's
  // middle above it (label nodes double dot's work on big graphs).
  static constexpr size_t kGraphvizLabelEdges = 600;
  // Above this many boxes dot's iteration limits are lowered for speed.
  static constexpr size_t kQuickAbove = 250;

  // Blocks while another layout runs. `cancel` is polled before the costly
  // steps; a cancelled layout returns ok=false with error "cancelled".
  static LayoutResult run(const VisibleGraph& vg, const std::atomic<bool>* cancel = nullptr);
};

}  // namespace onnxscope::viewer::graph
