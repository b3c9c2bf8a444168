// The onnxscope-gui main window: open a model (File > Open, recent files,
// drag and drop, command line), load and validate it off the UI thread, show
// its overview and findings.
#pragma once

#include <QFutureWatcher>
#include <QMainWindow>
#include <memory>

#include "onnxscope/inspect.h"

class QTreeView;
class QProgressBar;
class QPushButton;
class QLabel;
class QMenu;

namespace onnxscope::viewer {

class ModelOverview;

struct LoadedModel {
  ModelSummary summary;
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

  ModelOverview* overview_;
  QTreeView* tree_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
  QMenu* recent_menu_;
  QFutureWatcher<LoadedModel> watcher_;
  QString loading_path_;
  bool cancelled_ = false;
};

}  // namespace onnxscope::viewer
