// The onnxscope-gui main window: open a model (File > Open, recent files,
// drag and drop, command line), load and validate it off the UI thread; the
// graph view in the centre, the overview and findings and the inspector in
// docks.
#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <memory>

#include "onnxscope/inspect.h"
#include "onnxscope/ir.h"

class QTreeView;
class QProgressBar;
class QPushButton;
class QLabel;
class QMenu;
class QDockWidget;

namespace onnxscope::viewer {

class ModelOverview;
class GraphPanel;
class GraphView;
class Inspector;
class DebuggerPanel;
class DivergencePanel;
class TensorPanel;
class ConformanceBrowser;

struct LoadedModel {
  ModelSummary summary;
  std::shared_ptr<const Model> model;  // null when the file could not be read as a model
  bool ok = false;
};

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts loading on a worker thread; the window stays responsive.
  void open_model(const QString& path);
  const ModelOverview* overview() const { return overview_; }
  bool is_loading() const;
  std::shared_ptr<const Model> model() const { return model_; }
  GraphPanel* graph_panel() const { return graph_panel_; }
  GraphView* graph_view() const;
  Inspector* inspector() const { return inspector_; }
  // Selects the node with this name (any graph; opens its group or body).
  // False when no node has that name.
  bool select_node_named(const QString& name);
  // Error findings of the last load, one line each ("file: graph main, node ...").
  const QStringList& load_errors() const { return load_errors_; }
  // Debugging docks and the conformance window (debugger/debug_docks.cpp).
  DebuggerPanel* debugger_panel() const { return debugger_panel_; }
  DivergencePanel* divergence_panel() const { return divergence_panel_; }
  TensorPanel* tensor_panel() const { return tensor_panel_; }
  ConformanceBrowser* conformance_browser();  // created on first use
  // The tensor of this name in the tensor dock (A, and B when the run has two sides).
  void show_tensor(const QString& name);

 signals:
  void model_loaded(bool ok);

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void on_loaded();
  void cancel_load();
  void choose_file();
  void add_recent(const QString& path);
  void rebuild_recent_menu();
  void build_docks();
  void show_busy(bool on);
  void build_debug_docks();

  std::shared_ptr<const Model> model_;
  GraphPanel* graph_panel_;
  Inspector* inspector_;
  QDockWidget* overview_dock_;
  QDockWidget* inspector_dock_;
  QMenu* view_menu_;
  QStringList load_errors_;
  ModelOverview* overview_;
  QTreeView* tree_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
  QMenu* recent_menu_;
  QFutureWatcher<LoadedModel> watcher_;
  QString loading_path_;
  bool cancelled_ = false;
  bool loading_ = false;
  DebuggerPanel* debugger_panel_ = nullptr;
  DivergencePanel* divergence_panel_ = nullptr;
  TensorPanel* tensor_panel_ = nullptr;
  ConformanceBrowser* conformance_ = nullptr;
  QStringList pending_inputs_;  // input files of a conformance test being opened
};

}  // namespace onnxscope::viewer
