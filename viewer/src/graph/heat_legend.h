// The legend of the heat overlay: metric name and the colour scale from the
// smallest to the largest value, in the graph view's top-left corner.
#pragma once

#include <QWidget>

namespace onnxscope::viewer::graph {

class HeatLegend : public QWidget {
  Q_OBJECT
 public:
  explicit HeatLegend(QWidget* parent);
  void set_range(const QString& metric, double lo, double hi, int nodes);
  QSize sizeHint() const override { return {230, 54}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  QString metric_;
  double lo_ = 0, hi_ = 0;
  int nodes_ = 0;
};

}  // namespace onnxscope::viewer::graph
