// Tensor viewer widgets: a histogram, one tensor's view (dtype, shape,
// statistics, histogram, sliced table, heatmap or per-channel grid), and the
// panel that shows A, B and A-B side by side with one shared slice.
#pragma once

#include <QString>
#include <QWidget>
#include <optional>
#include <vector>

#include "onnxscope/value.h"
#include "onnxscope/viewer/tensor_data.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QTableView;
class QHBoxLayout;
class QScrollArea;
class QSplitter;

namespace onnxscope::viewer {

class TensorTableModel;

class HistogramWidget : public QWidget {
  Q_OBJECT
 public:
  explicit HistogramWidget(QWidget* parent = nullptr);
  void set_histogram(Histogram h);
  const Histogram& histogram() const { return h_; }
  QSize sizeHint() const override { return {240, 90}; }

 protected:
  void paintEvent(QPaintEvent* e) override;

 private:
  Histogram h_;
};

class TensorView : public QWidget {
  Q_OBJECT
 public:
  explicit TensorView(const QString& title, QWidget* parent = nullptr);
  void set_tensor(const Tensor& t);
  void set_title(const QString& title);
  void set_split(Qt::Orientation o);  // table and image: stacked or side by side
  // Shows a message instead of a tensor ("not computed yet", a sequence...).
  void set_message(const QString& text);
  void set_slice(const TensorSlice& s);  // keeps the table and image in step
  TensorTableModel* table_model() const { return model_; }
  QString stats_text() const;
  QString title_text() const;
  const QImage& image() const { return image_; }

 signals:
  void slice_edited(const TensorSlice& s);  // the user changed axes or indices

 private:
  void rebuild_slice_controls();
  void refresh_image();
  void on_controls_changed();

  QLabel *title_, *info_, *stats_, *image_label_;
  HistogramWidget* hist_;
  QComboBox *row_axis_, *col_axis_;
  QWidget* index_box_;
  QHBoxLayout* index_layout_;
  std::vector<QSpinBox*> index_spins_;
  QTableView* table_;
  QSplitter* split_;
  TensorTableModel* model_;
  QImage image_;
  bool updating_ = false;
};

class TensorPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TensorPanel(QWidget* parent = nullptr);
  // A alone, or A and B with their difference. Non-tensor values show as text.
  void show_values(const QString& name, const std::optional<Value>& a, const std::optional<Value>& b,
                   const QString& label_a = "A", const QString& label_b = "B");
  void clear(const QString& message = {});
  QString current_name() const { return name_; }
  TensorView* view_a() const { return a_; }
  TensorView* view_b() const { return b_; }
  TensorView* view_diff() const { return d_; }

 private:
  void share_slice(const TensorSlice& s);

  QLabel* header_;
  TensorView *a_, *b_, *d_;
  QString name_;
};

}  // namespace onnxscope::viewer
