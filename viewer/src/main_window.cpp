#include "onnxscope/viewer/main_window.h"

#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTreeView>
#include <QtConcurrent/QtConcurrentRun>

#include "onnxscope/loader.h"
#include "onnxscope/viewer/model_overview.h"

namespace onnxscope::viewer {

namespace {
constexpr int kMaxRecent = 10;

LoadedModel load_in_background(const QString& path) {
  LoadedModel out;
  LoadResult r = load_model_file(path.toStdString());
  out.ok = r.ok();
  out.summary = summarize(r.model.get(), r.diagnostics, path.toStdString());
  return out;
}
}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("onnxscope");
  setAcceptDrops(true);
  resize(1000, 700);

  overview_ = new ModelOverview(this);
  tree_ = new QTreeView(this);
  tree_->setModel(overview_);
  tree_->setUniformRowHeights(true);
  tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  setCentralWidget(tree_);

  auto* file = menuBar()->addMenu("&File");
  auto* open = file->addAction("&Open...", this, &MainWindow::choose_file);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu("Open &Recent");
  file->addSeparator();
  auto* quit = file->addAction("&Quit", this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  rebuild_recent_menu();

  status_ = new QLabel("Open a model (File > Open, or drop an .onnx file here)", this);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);  // loading has no meaningful fraction: busy indicator
  progress_->setMaximumWidth(160);
  progress_->hide();
  cancel_ = new QPushButton("Cancel", this);
  cancel_->hide();
  connect(cancel_, &QPushButton::clicked, this, &MainWindow::cancel_load);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);

  connect(&watcher_, &QFutureWatcher<LoadedModel>::finished, this, &MainWindow::on_loaded);
}

MainWindow::~MainWindow() { watcher_.waitForFinished(); }

bool MainWindow::is_loading() const { return watcher_.isRunning(); }

void MainWindow::open_model(const QString& path) {
  if (watcher_.isRunning()) {
    // One load at a time: the previous one is abandoned, its result dropped.
    cancelled_ = true;
    watcher_.waitForFinished();
  }
  cancelled_ = false;
  loading_path_ = path;
  status_->setText("Loading " + path + " ...");
  progress_->show();
  cancel_->show();
  watcher_.setFuture(QtConcurrent::run(load_in_background, path));
}

void MainWindow::cancel_load() {
  // Parsing cannot be interrupted midway; the result is discarded when it arrives.
  cancelled_ = true;
  status_->setText("Cancelled loading " + loading_path_);
  progress_->hide();
  cancel_->hide();
}

void MainWindow::on_loaded() {
  progress_->hide();
  cancel_->hide();
  if (cancelled_) return;
  LoadedModel m = watcher_.result();
  overview_->set_summary(m.summary);
  tree_->expandToDepth(0);
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
