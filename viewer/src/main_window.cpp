#include "onnxscope/viewer/main_window.h"

#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTreeView>
#include <QtConcurrent/QtConcurrentRun>

#include "onnxscope/loader.h"
#include "graph/graph_panel.h"
#include "inspector.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/model_compare.h"
#include "onnxscope/viewer/model_overview.h"
#include "onnxscope/viewer/plugins_menu.h"

namespace onnxscope::viewer {

namespace {
constexpr int kMaxRecent = 10;

LoadedModel load_in_background(const QString& path) {
  LoadedModel out;
  LoadOptions options;
  if (!gui_plugins().empty()) options.plugins = &gui_plugins();  // plugin ops validate and get shapes
  LoadResult r = load_model_file(path.toStdString(), options);
  out.ok = r.ok();
  out.summary = summarize(r.model.get(), r.diagnostics, path.toStdString());
  out.model = std::move(r.model);
  return out;
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("onnxscope");
  setAcceptDrops(true);
  resize(1400, 900);

  graph_panel_ = new GraphPanel(this);
  setCentralWidget(graph_panel_);
  overview_ = new ModelOverview(this);
  tree_ = new QTreeView(this);
  tree_->setModel(overview_);
  tree_->setUniformRowHeights(true);
  // In a dock: a fixed first column, so long tensor names do not push the values out of sight.
  tree_->header()->setSectionResizeMode(0, QHeaderView::Interactive);
  tree_->setColumnWidth(0, 150);
  tree_->setTextElideMode(Qt::ElideMiddle);
  inspector_ = new Inspector(this);

  auto* file = menuBar()->addMenu("&File");
  auto* open = file->addAction("&Open...", this, &MainWindow::choose_file);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu("Open &Recent");
  // Another model of the same network (fp16, quantized, another exporter) side by side.
  file->addAction("&Compare with...", this, [this] {
    if (!model_) {
      status_->setText("Open a model first, then compare it with another");
      return;
    }
    const QString other = QFileDialog::getOpenFileName(this, "Compare with", QFileInfo(loading_path_).absolutePath(),
                                                       "ONNX models (*.onnx);;All files (*)");
    if (other.isEmpty()) return;
    auto* w = new ModelCompareWindow();
    w->setAttribute(Qt::WA_DeleteOnClose);
    w->show();
    w->open(loading_path_, other);
  });
  file->addSeparator();
  auto* quit = file->addAction("&Quit", this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  rebuild_recent_menu();
  build_docks();
  build_debug_docks();
  auto* plugins = new PluginsMenu(this, [this] { return is_loading(); });
  menuBar()->addMenu(plugins);
  connect(plugins, &PluginsMenu::plugins_changed, this, [this] {
    if (model_) open_model(loading_path_);  // reload: its plugin nodes now validate and run
  });

  status_ = new QLabel("Open a model (File > Open, or drop an .onnx file here)", this);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);  // loading has no meaningful fraction: busy indicator
  progress_->setMaximumWidth(160);
  progress_->hide();
  cancel_ = new QPushButton("Cancel", this);
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel_load);
  GraphView* gv = graph_panel_->view();
  connect(gv, &GraphView::layout_started, this, [this] { show_busy(true); });
  connect(gv, &GraphView::layout_progress, this, [this](int percent, const QString& stage) {
    progress_->setRange(0, 100);
    progress_->setValue(percent);
    status_->setText("Graph: " + stage + " ...");
  });
  connect(gv, &GraphView::layout_finished, this, [this](bool, const QString& message) {
    show_busy(false);
    status_->setText(message);
  });
  connect(gv, &GraphView::node_selected, inspector_, &Inspector::show_node);
  connect(gv, &GraphView::tensor_selected, inspector_, &Inspector::show_tensor);
  connect(gv, &GraphView::group_selected, inspector_, &Inspector::show_group);
  connect(inspector_, &Inspector::tensor_clicked, gv, &GraphView::select_tensor);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);

  connect(&watcher_, &QFutureWatcher<LoadedModel>::finished, this, &MainWindow::on_loaded);
}

MainWindow::~MainWindow() { watcher_.waitForFinished(); }

// Overview and findings on the left, inspector on the right; the View menu
// toggles them. Further docks (debugger, tensors) go through addDockWidget too.
void MainWindow::build_docks() {
  overview_dock_ = new QDockWidget("Overview", this);
  overview_dock_->setObjectName("overview");
  overview_dock_->setWidget(tree_);
  addDockWidget(Qt::LeftDockWidgetArea, overview_dock_);
  inspector_dock_ = new QDockWidget("Inspector", this);
  inspector_dock_->setObjectName("inspector");
  inspector_dock_->setWidget(inspector_);
  addDockWidget(Qt::RightDockWidgetArea, inspector_dock_);
  resizeDocks({overview_dock_, inspector_dock_}, {300, 360}, Qt::Horizontal);

  view_menu_ = menuBar()->addMenu("&View");
  view_menu_->addAction(overview_dock_->toggleViewAction());
  view_menu_->addAction(inspector_dock_->toggleViewAction());
  view_menu_->addSeparator();
  GraphView* gv = graph_panel_->view();
  view_menu_->addAction("Zoom &in", QKeySequence::ZoomIn, gv, &GraphView::zoom_in);
  view_menu_->addAction("Zoom &out", QKeySequence::ZoomOut, gv, &GraphView::zoom_out);
  view_menu_->addAction("&Fit graph", QKeySequence("Ctrl+0"), gv, &GraphView::fit);
  view_menu_->addAction("&Search...", QKeySequence::Find, this, [this] { graph_panel_->search_box()->setFocus(); });
}

GraphView* MainWindow::graph_view() const { return graph_panel_->view(); }

bool MainWindow::select_node_named(const QString& name) {
  const auto hits = graph_panel_->index().find_node(name);
  if (hits.empty()) return false;
  graph_panel_->view()->select_node(hits.front().graph_path, hits.front().node_index);
  return true;
}

// Until on_loaded has run: the worker may be done before its signal arrives.
bool MainWindow::is_loading() const { return loading_; }

void MainWindow::show_busy(bool on) {
  progress_->setVisible(on);
  cancel_->setVisible(on);
  if (on) progress_->setRange(0, 0);
}

void MainWindow::open_model(const QString& path) {
  if (watcher_.isRunning()) {
    // One load at a time: the previous one is abandoned, its result dropped.
    cancelled_ = true;
    watcher_.waitForFinished();
  }
  cancelled_ = false;
  loading_ = true;
  loading_path_ = path;
  status_->setText("Loading " + path + " ...");
  progress_->show();
  cancel_->show();
  watcher_.setFuture(QtConcurrent::run(load_in_background, path));
}

void MainWindow::cancel_load() {
  // Parsing cannot be interrupted midway; the result is discarded when it arrives.
  cancelled_ = true;
  graph_panel_->view()->cancel_layout();
  status_->setText("Cancelled loading " + loading_path_);
  progress_->hide();
  cancel_->hide();
}

void MainWindow::on_loaded() {
  loading_ = false;
  progress_->hide();
  cancel_->hide();
  if (cancelled_) return;
  LoadedModel m = watcher_.result();
  overview_->set_summary(m.summary);
  tree_->expandToDepth(0);
  model_ = m.model;
  load_errors_.clear();
  for (const Diagnostic& d : m.summary.findings)
    if (d.severity == Severity::Error) load_errors_ << QString::fromStdString(d.to_string());
  inspector_->set_model(model_);
  graph_panel_->set_model(model_);
  setWindowTitle("onnxscope - " + QFileInfo(loading_path_).fileName());
  status_->setText(m.ok ? QString("Loaded %1").arg(loading_path_)
                        : QString("%1: %2 error(s) - see Validation").arg(loading_path_).arg(m.summary.errors));
  if (m.summary.loaded) add_recent(loading_path_);
  emit model_loaded(m.ok);
}

void MainWindow::choose_file() {
  QString path = QFileDialog::getOpenFileName(this, "Open ONNX model", {}, "ONNX models (*.onnx);;All files (*)");
  if (!path.isEmpty()) open_model(path);
}

void MainWindow::add_recent(const QString& path) {
  QSettings settings("onnxscope", "onnxscope");
  QStringList recent = settings.value("recentFiles").toStringList();
  recent.removeAll(path);
  recent.prepend(path);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("recentFiles", recent);
  rebuild_recent_menu();
}

void MainWindow::rebuild_recent_menu() {
  recent_menu_->clear();
  QSettings settings("onnxscope", "onnxscope");
  const QStringList recent = settings.value("recentFiles").toStringList();
  for (const QString& path : recent)
    recent_menu_->addAction(path, this, [this, path] { open_model(path); });
  recent_menu_->setEnabled(!recent.isEmpty());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  const auto urls = e->mimeData()->urls();
  if (!urls.isEmpty() && urls.front().isLocalFile()) open_model(urls.front().toLocalFile());
}

}  // namespace onnxscope::viewer
