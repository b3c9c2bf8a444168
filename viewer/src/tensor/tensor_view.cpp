#include "onnxscope/viewer/tensor_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <cmath>

#include "onnxscope/viewer/tensor_table_model.h"

namespace onnxscope::viewer {

namespace {
QString num(double v) { return QString::number(v, 'g', 5); }
}  // namespace

// ---------------------------------------------------------------- histogram

HistogramWidget::HistogramWidget(QWidget* parent) : QWidget(parent) {
  setMinimumHeight(50);
  setMaximumHeight(90);
}

void HistogramWidget::set_histogram(Histogram h) {
  h_ = std::move(h);
  update();
}

void HistogramWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRect area = rect().adjusted(4, 4, -4, -16);
  uint64_t top = 0;
  for (uint64_t c : h_.counts) top = std::max(top, c);
  if (h_.counts.empty() || top == 0) {  // nothing shown yet, or a tensor of NaN/Inf (or no elements)
    p.drawText(rect(), Qt::AlignCenter, h_.counts.empty() ? "no tensor selected" : "no finite values");
    return;
  }
  const double bw = static_cast<double>(area.width()) / static_cast<double>(h_.counts.size());
  p.setPen(Qt::NoPen);
  p.setBrush(QColor(70, 110, 190));
  for (size_t i = 0; i < h_.counts.size(); ++i) {
    // Square root of the count keeps small bins visible beside a dominant one.
    const double f = std::sqrt(static_cast<double>(h_.counts[i]) / static_cast<double>(top));
    const int hgt = static_cast<int>(std::lround(f * area.height()));
    p.drawRect(QRectF(area.left() + i * bw, area.bottom() - hgt, std::max(1.0, bw - 1), hgt));
  }
  p.setPen(palette().color(QPalette::Text));
  const QRect labels(area.left(), area.bottom() + 2, area.width(), 14);
  p.drawText(labels, Qt::AlignLeft, num(h_.lo));
  p.drawText(labels, Qt::AlignRight, num(h_.hi));
  if (h_.non_finite) p.drawText(labels, Qt::AlignHCenter, QString("%1 NaN/Inf").arg(h_.non_finite));
}

// -------------------------------------------------------------- tensor view

TensorView::TensorView(const QString& title, QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(2, 2, 2, 2);
  title_ = new QLabel("<b>" + title + "</b>", this);
  info_ = new QLabel(this);
  stats_ = new QLabel(this);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  stats_->setWordWrap(true);
  hist_ = new HistogramWidget(this);
  auto* controls = new QHBoxLayout;
  row_axis_ = new QComboBox(this);
  col_axis_ = new QComboBox(this);
  controls->addWidget(new QLabel("rows", this));
  controls->addWidget(row_axis_);
  controls->addWidget(new QLabel("cols", this));
  controls->addWidget(col_axis_);
  index_box_ = new QWidget(this);
  index_layout_ = new QHBoxLayout(index_box_);
  index_layout_->setContentsMargins(0, 0, 0, 0);
  controls->addWidget(index_box_, 1);
  model_ = new TensorTableModel(this);
  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->horizontalHeader()->setDefaultSectionSize(72);
  table_->verticalHeader()->setDefaultSectionSize(20);
  image_label_ = new QLabel(this);
  image_label_->setAlignment(Qt::AlignCenter);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(image_label_);
  scroll->setWidgetResizable(true);
  scroll->setMinimumHeight(40);
  table_->setMinimumHeight(40);
  // Table and image share the height the dock has; the user drags the split.
  split_ = new QSplitter(Qt::Vertical, this);
  auto* split = split_;
  split->addWidget(table_);
  split->addWidget(scroll);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  v->addWidget(title_);
  v->addWidget(info_);
  v->addWidget(stats_);
  v->addWidget(hist_);
  v->addLayout(controls);
  v->addWidget(split, 1);
  connect(row_axis_, &QComboBox::currentIndexChanged, this, &TensorView::on_controls_changed);
  connect(col_axis_, &QComboBox::currentIndexChanged, this, &TensorView::on_controls_changed);
}

void TensorView::set_message(const QString& text) {
  model_->clear();
  info_->setText(text);
  stats_->clear();
  hist_->set_histogram({});
  image_ = QImage();
  image_label_->clear();
  updating_ = true;
  row_axis_->clear();
  col_axis_->clear();
  updating_ = false;
  rebuild_slice_controls();
}

void TensorView::set_tensor(const Tensor& t) {
  model_->set_tensor(t);
  info_->setText(describe(t) + QString("  (%1 elements)").arg(t.element_count()));
  if (t.is_string()) {
    stats_->setText("strings: no statistics");
    hist_->set_histogram({});
  } else {
    TensorStats s = summarize(t);
    stats_->setText(QString("min %1  max %2  mean %3  std %4  NaN %5  Inf %6")
                        .arg(num(s.min), num(s.max), num(s.mean), num(s.stddev))
                        .arg(s.nan_count)
                        .arg(s.inf_count));
    hist_->set_histogram(histogram(t, 40));
  }
  updating_ = true;
  row_axis_->clear();
  col_axis_->clear();
  for (QComboBox* box : {row_axis_, col_axis_}) {
    box->addItem("-", -1);
    for (int a = 0; a < static_cast<int>(t.rank()); ++a)
      box->addItem(QString("axis %1 (%2)").arg(a).arg(t.shape()[static_cast<size_t>(a)]), a);
  }
  updating_ = false;
  set_slice(model_->slice());
}

void TensorView::set_slice(const TensorSlice& s) {
  if (!model_->has_tensor()) return;
  updating_ = true;
  model_->set_slice(s);
  const TensorSlice& c = model_->slice();
  row_axis_->setCurrentIndex(row_axis_->findData(c.row_axis));
  col_axis_->setCurrentIndex(col_axis_->findData(c.col_axis));
  updating_ = false;
  rebuild_slice_controls();
  refresh_image();
}

void TensorView::set_split(Qt::Orientation o) {
  if (split_->orientation() == o) return;
  split_->setOrientation(o);
  split_->setSizes({1000, 1000});  // half and half
}

void TensorView::set_title(const QString& title) { title_->setText("<b>" + title.toHtmlEscaped() + "</b>"); }

QString TensorView::stats_text() const { return stats_->text(); }
QString TensorView::title_text() const { return title_->text(); }

void TensorView::rebuild_slice_controls() {
  for (QSpinBox* sp : index_spins_) sp->deleteLater();
  index_spins_.clear();
  while (QLayoutItem* it = index_layout_->takeAt(0)) {
    if (it->widget()) it->widget()->deleteLater();
    delete it;
  }
  if (!model_->has_tensor()) return;
  const TensorSlice& s = model_->slice();
  const Tensor& t = model_->tensor();
  for (int a = 0; a < static_cast<int>(t.rank()); ++a) {
    if (a == s.row_axis || a == s.col_axis) continue;
    auto* label = new QLabel(QString("[%1]").arg(a), index_box_);
    auto* sp = new QSpinBox(index_box_);
    sp->setRange(0, static_cast<int>(std::max<int64_t>(t.shape()[static_cast<size_t>(a)] - 1, 0)));
    sp->setValue(static_cast<int>(s.index[static_cast<size_t>(a)]));
    sp->setProperty("axis", a);
    connect(sp, &QSpinBox::valueChanged, this, &TensorView::on_controls_changed);
    index_layout_->addWidget(label);
    index_layout_->addWidget(sp);
    index_spins_.push_back(sp);
  }
  index_layout_->addStretch();
}

void TensorView::on_controls_changed() {
  if (updating_ || !model_->has_tensor()) return;
  TensorSlice s = model_->slice();
  s.row_axis = row_axis_->currentData().toInt();
  s.col_axis = col_axis_->currentData().toInt();
  for (QSpinBox* sp : index_spins_) s.index[static_cast<size_t>(sp->property("axis").toInt())] = sp->value();
  const bool axes_changed = s.row_axis != model_->slice().row_axis || s.col_axis != model_->slice().col_axis;
  model_->set_slice(s);
  if (axes_changed) rebuild_slice_controls();
  refresh_image();
  emit slice_edited(model_->slice());
}

void TensorView::refresh_image() {
  const Tensor& t = model_->tensor();
  const TensorSlice& s = model_->slice();
  // 4-D activations showing H x W: every channel of the chosen sample at once.
  if (t.rank() == 4 && s.row_axis == 2 && s.col_axis == 3 && t.shape()[1] > 1)
    image_ = channel_grid(t, s.index[0]);
  else
    image_ = heatmap(t, s);
  if (image_.isNull()) {
    image_label_->setText(t.is_string() ? "" : "(no image)");
    return;
  }
  QImage shown = image_;
  if (shown.width() < 200 && shown.height() < 200) {
    const int f = std::max(1, 200 / std::max(shown.width(), shown.height()));
    shown = shown.scaled(shown.width() * f, shown.height() * f, Qt::KeepAspectRatio, Qt::FastTransformation);
  }
  image_label_->setPixmap(QPixmap::fromImage(shown));
}

// ------------------------------------------------------------- tensor panel

TensorPanel::TensorPanel(QWidget* parent) : QWidget(parent) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(2, 2, 2, 2);
  header_ = new QLabel("Select a tensor (an edge in the graph, or an output of the current node)", this);
  v->addWidget(header_);
  auto* row = new QHBoxLayout;
  a_ = new TensorView("A", this);
  b_ = new TensorView("B", this);
  d_ = new TensorView("B - A", this);
  row->addWidget(a_);
  row->addWidget(b_);
  row->addWidget(d_);
  v->addLayout(row, 1);
  b_->hide();
  d_->hide();
  for (TensorView* tv : {a_, b_, d_}) connect(tv, &TensorView::slice_edited, this, &TensorPanel::share_slice);
}

void TensorPanel::clear(const QString& message) {
  name_.clear();
  header_->setText(message.isEmpty() ? "No tensor" : message);
  a_->set_message({});
  b_->hide();
  d_->hide();
}

void TensorPanel::show_values(const QString& name, const std::optional<Value>& a, const std::optional<Value>& b,
                              const QString& label_a, const QString& label_b) {
  name_ = name;
  header_->setText("<b>" + name.toHtmlEscaped() + "</b>");
  a_->set_title(label_a);
  b_->set_title(label_b);
  d_->set_title(label_b + " - " + label_a);
  auto show = [](TensorView* view, const std::optional<Value>& v) {
    if (!v) view->set_message("not computed (yet)");
    else if (!v->is_tensor()) view->set_message(QString::fromStdString(v->describe()));
    else view->set_tensor(v->tensor());
  };
  show(a_, a);
  const bool pair = b.has_value();
  // One tensor: table and image side by side; three: each stacks them.
  a_->set_split(pair ? Qt::Vertical : Qt::Horizontal);
  b_->setVisible(pair);
  d_->setVisible(pair);
  if (!pair) return;
  show(b_, b);
  QString why;
  std::optional<Tensor> diff;
  if (a && a->is_tensor() && b->is_tensor()) diff = difference(a->tensor(), b->tensor(), &why);
  else why = "no tensor on both sides";
  if (diff) {
    d_->set_tensor(*diff);
    if (!why.isEmpty()) d_->set_title(label_b + " - " + label_a + " (" + why + ")");
  } else {
    d_->set_message("no difference: " + why);
  }
  share_slice(a_->table_model()->slice());
}

void TensorPanel::share_slice(const TensorSlice& s) {
  auto same = [](const TensorSlice& x, const TensorSlice& y) {
    return x.row_axis == y.row_axis && x.col_axis == y.col_axis && x.index == y.index;
  };
  for (TensorView* tv : {a_, b_, d_})
    if (tv->isVisibleTo(this) && tv->table_model()->has_tensor() && !same(tv->table_model()->slice(), s))
      tv->set_slice(s);
}

}  // namespace onnxscope::viewer
