// A 2-D window onto an N-d tensor for a QTableView: the caller picks the two
// displayed axes and the index of every other axis (TensorSlice). Cells are
// read from the tensor only when a view asks for them, so a tensor of any
// size costs nothing beyond its visible cells.
#pragma once

#include <QAbstractTableModel>
#include <atomic>

#include "onnxscope/viewer/tensor_data.h"

namespace onnxscope::viewer {

class TensorTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // The raw element value (double) for numeric tensors, for tests and sorting.
  static constexpr int ValueRole = Qt::UserRole + 1;

  explicit TensorTableModel(QObject* parent = nullptr);

  void set_tensor(Tensor t);  // resets the slice to default_slice
  void clear();
  const Tensor& tensor() const { return tensor_; }
  bool has_tensor() const { return has_; }

  void set_slice(const TensorSlice& s);
  const TensorSlice& slice() const { return slice_; }
  void set_axes(int row_axis, int col_axis);
  void set_index(int axis, int64_t value);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

  // How many cells data() has read from the tensor since the last reset.
  uint64_t cells_read() const { return cells_read_; }

 signals:
  void slice_changed();

 private:
  Tensor tensor_;
  bool has_ = false;
  TensorSlice slice_;
  mutable std::atomic<uint64_t> cells_read_{0};
};

}  // namespace onnxscope::viewer
