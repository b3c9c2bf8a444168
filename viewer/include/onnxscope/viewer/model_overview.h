// Item model adapting an engine ModelSummary for a QTreeView: sections for
// the model header, inputs, outputs, operators, subgraphs, functions and
// validation findings. Views never touch engine types directly.
#pragma once

#include <QAbstractItemModel>
#include <QString>
#include <memory>
#include <vector>

#include "onnxscope/inspect.h"

namespace onnxscope::viewer {

class ModelOverview : public QAbstractItemModel {
  Q_OBJECT
 public:
  explicit ModelOverview(QObject* parent = nullptr);
  void set_summary(const ModelSummary& s);
  void clear();

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  struct Item {
    QString key, value;
    int severity = -1;  // for findings: 0 info, 1 warning, 2 error
    Item* parent = nullptr;
    std::vector<std::unique_ptr<Item>> children;
    int row = 0;
    Item* add(QString k, QString v = {}, int sev = -1);
  };
  Item root_;
};

}  // namespace onnxscope::viewer
