#include "onnxscope/viewer/tensor_table_model.h"

#include <QBrush>
#include <QColor>
#include <climits>
#include <cmath>

namespace onnxscope::viewer {

namespace {
// Views cannot show more rows than an int holds.
int capped(int64_t n) { return static_cast<int>(std::min<int64_t>(n, INT_MAX)); }
}  // namespace

TensorTableModel::TensorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void TensorTableModel::set_tensor(Tensor t) {
  beginResetModel();
  tensor_ = std::move(t);
  has_ = true;
  slice_ = default_slice(tensor_);
  cells_read_ = 0;
  endResetModel();
  emit slice_changed();
}

void TensorTableModel::clear() {
  beginResetModel();
  tensor_ = Tensor();
  has_ = false;
  slice_ = {};
  cells_read_ = 0;
  endResetModel();
  emit slice_changed();
}

void TensorTableModel::set_slice(const TensorSlice& s) {
  beginResetModel();
  slice_ = clamp_slice(tensor_, s);
  endResetModel();
  emit slice_changed();
}

void TensorTableModel::set_axes(int row_axis, int col_axis) {
  TensorSlice s = slice_;
  s.row_axis = row_axis;
  s.col_axis = col_axis;
  set_slice(s);
}

void TensorTableModel::set_index(int axis, int64_t value) {
  if (axis < 0 || axis >= static_cast<int>(slice_.index.size())) return;
  TensorSlice s = slice_;
  s.index[static_cast<size_t>(axis)] = value;
  set_slice(s);
}

int TensorTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !has_ || tensor_.element_count() == 0) return 0;
  return capped(slice_rows(tensor_, slice_));
}

int TensorTableModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid() || !has_ || tensor_.element_count() == 0) return 0;
  return capped(slice_cols(tensor_, slice_));
}

QVariant TensorTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !has_) return {};
  if (role != Qt::DisplayRole && role != ValueRole && role != Qt::ForegroundRole && role != Qt::ToolTipRole) return {};
  const uint64_t flat = slice_flat_index(tensor_, slice_, index.row(), index.column());
  if (flat >= tensor_.element_count()) return {};
  ++cells_read_;
  if (role == Qt::DisplayRole) return element_text(tensor_, flat);
  if (role == Qt::ToolTipRole) return QString("flat index %1").arg(flat);
  if (tensor_.is_string()) return {};
  const double v = tensor_.element_as_double(flat);
  if (role == ValueRole) return v;
  if (!std::isfinite(v)) return QBrush(QColor(200, 0, 160));  // NaN/Inf stand out
  return {};
}

QVariant TensorTableModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole) return {};
  const int axis = o == Qt::Horizontal ? slice_.col_axis : slice_.row_axis;
  if (axis < 0) return QString();
  return QString::number(section);
}

}  // namespace onnxscope::viewer
