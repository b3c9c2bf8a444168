// The Divergence dock: after a two-sided run, the per-node metrics table
// (DivergenceModel), the first divergent node, the top blamed nodes, a metric
// choice that colours the graph, and "Export repro..." for a selected node.
#pragma once

#include <QFutureWatcher>
#include <QHash>
#include <QString>
#include <QWidget>

#include "onnxscope/reduce.h"
#include "onnxscope/viewer/divergence_model.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace onnxscope::viewer {

class DebugSession;

class DivergencePanel : public QWidget {
  Q_OBJECT
 public:
  explicit DivergencePanel(DebugSession* session, QWidget* parent = nullptr);
  ~DivergencePanel() override;

  DivergenceModel* model() const { return model_; }
  DivergenceModel::Metric metric() const;
  void set_metric(DivergenceModel::Metric m);
  // Main-graph node index of the selected row, or -1.
  int selected_node() const;
  QString summary_text() const;
  void select_node(int node_index);
  // Runs the library's reduce from the node on a worker thread; export_done reports.
  void export_repro(int node_index, const QString& out_dir);
  bool exporting() const { return watcher_.isRunning(); }

 signals:
  void heat_changed(QHash<int, double> values, QString metric);
  void heat_cleared();
  void node_activated(QString graph_path, int node_index);
  void export_done(bool ok, QString message);

 private:
  void on_report();
  void emit_heat();
  void choose_export();

  DebugSession* session_;
  DivergenceModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QComboBox* metric_;
  QLabel* summary_;
  QListWidget* blamed_;
  QPushButton *first_, *export_;
  QFutureWatcher<std::pair<ReduceResult, QString>> watcher_;
  QString export_dir_;
};

}  // namespace onnxscope::viewer
