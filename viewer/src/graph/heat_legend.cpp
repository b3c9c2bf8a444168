#include "graph/heat_legend.h"

#include <QLinearGradient>
#include <QPainter>

#include "graph/graph_items.h"

namespace onnxscope::viewer::graph {

HeatLegend::HeatLegend(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_TransparentForMouseEvents);
  resize(sizeHint());
}

void HeatLegend::set_range(const QString& metric, double lo, double hi, int nodes) {
  metric_ = metric;
  lo_ = lo;
  hi_ = hi;
  nodes_ = nodes;
  update();
}

void HeatLegend::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(QColor(0xa0, 0xa0, 0xa0));
  p.setBrush(QColor(255, 255, 255, 235));
  p.drawRoundedRect(rect().adjusted(0, 0, -1, -1), 4, 4);
  QFont f = font();
  f.setPointSizeF(8.5);
  p.setFont(f);
  p.setPen(Qt::black);
  p.drawText(QRect(8, 3, width() - 16, 16), Qt::AlignLeft | Qt::AlignVCenter,
             QString("%1 (%2 nodes)").arg(metric_).arg(nodes_));
  QLinearGradient grad(8, 0, width() - 8, 0);
  for (int k = 0; k <= 10; ++k) grad.setColorAt(k / 10.0, heat_color(k / 10.0));
  p.setPen(Qt::NoPen);
  p.setBrush(grad);
  p.drawRect(QRect(8, 21, width() - 16, 10));
  p.setPen(Qt::black);
  p.drawText(QRect(8, 33, width() / 2, 16), Qt::AlignLeft | Qt::AlignVCenter, QString::number(lo_, 'g', 3));
  p.drawText(QRect(width() / 2, 33, width() / 2 - 8, 16), Qt::AlignRight | Qt::AlignVCenter, QString::number(hi_, 'g', 3));
}

}  // namespace onnxscope::viewer::graph
