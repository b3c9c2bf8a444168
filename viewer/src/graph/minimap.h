// The minimap in the graph view's corner: the whole scene small, the main
// view's visible area as a frame; click or drag to move there.
#pragma once

#include <QGraphicsView>

namespace onnxscope::viewer::graph {

class Minimap : public QGraphicsView {
  Q_OBJECT
 public:
  explicit Minimap(QGraphicsView* main, QWidget* parent);
  void refresh();  // the scene or the main view's visible area changed

 protected:
  void drawForeground(QPainter* p, const QRectF& rect) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;

 private:
  void move_main_to(const QPoint& p);
  QGraphicsView* main_;
};

}  // namespace onnxscope::viewer::graph
