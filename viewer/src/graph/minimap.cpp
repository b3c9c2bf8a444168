#include "graph/minimap.h"

#include <QMouseEvent>
#include <QScrollBar>

namespace onnxscope::viewer::graph {

Minimap::Minimap(QGraphicsView* main, QWidget* parent) : QGraphicsView(parent), main_(main) {
  setInteractive(false);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setFrameShape(QFrame::Box);
  setRenderHint(QPainter::Antialiasing, false);
  setBackgroundBrush(QColor(250, 250, 252, 235));
  setCursor(Qt::PointingHandCursor);
  setToolTip("Overview: click or drag to move the view");
}

void Minimap::refresh() {
  if (scene()) fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  viewport()->update();
}

void Minimap::resizeEvent(QResizeEvent* e) {
  QGraphicsView::resizeEvent(e);
  refresh();
}

void Minimap::drawForeground(QPainter* p, const QRectF&) {
  if (!main_->scene()) return;
  const QRectF visible = main_->mapToScene(main_->viewport()->rect()).boundingRect();
  p->setPen(QPen(QColor(0x10, 0x60, 0xff), 0));  // cosmetic: one pixel at any scale
  p->setBrush(QColor(0x10, 0x60, 0xff, 40));
  p->drawRect(visible);
}

void Minimap::move_main_to(const QPoint& pos) { main_->centerOn(mapToScene(pos)); }

void Minimap::mousePressEvent(QMouseEvent* e) { move_main_to(e->pos()); }

void Minimap::mouseMoveEvent(QMouseEvent* e) {
  if (e->buttons() & Qt::LeftButton) move_main_to(e->pos());
}

void Minimap::wheelEvent(QWheelEvent* e) { e->ignore(); }

}  // namespace onnxscope::viewer::graph
