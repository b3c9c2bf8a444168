#include "onnxscope/viewer/conformance_browser.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "onnxscope/engines.h"
#include "onnxscope/viewer/conformance_model.h"
#include "onnxscope/viewer/tensor_view.h"

namespace onnxscope::viewer {

namespace fs = std::filesystem;

ConformanceBrowser::ConformanceBrowser(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle("onnxscope - conformance");
  resize(1200, 800);
  model_ = new ConformanceModel(this);
  filter_ = new ConformanceFilter(this);
  filter_->setSourceModel(model_);

  auto* central = new QWidget(this);
  auto* v = new QVBoxLayout(central);
  auto* actions = new QHBoxLayout;
  engine_ = new QComboBox(this);
  for (const auto& n : engine_names()) engine_->addItem(QString::fromStdString(n));
  jobs_ = new QSpinBox(this);
  jobs_->setRange(1, 64);
  jobs_->setValue(2);
  jobs_->setPrefix("jobs ");
  auto* run = new QPushButton("Run suite...", this);
  auto* open = new QPushButton("Open report...", this);
  progress_ = new QProgressBar(this);
  progress_->hide();
  cancel_ = new QPushButton("Cancel", this);
  cancel_->hide();
  actions->addWidget(new QLabel("engine", this));
  actions->addWidget(engine_);
  actions->addWidget(jobs_);
  actions->addWidget(run);
  actions->addWidget(open);
  actions->addWidget(progress_, 1);
  actions->addWidget(cancel_);
  v->addLayout(actions);

  auto* filters = new QHBoxLayout;
  status_filter_ = new QComboBox(this);
  status_filter_->addItem("any status", "");
  for (auto s : {conformance::Status::Pass, conformance::Status::Fail, conformance::Status::Error,
                 conformance::Status::Crash, conformance::Status::Timeout, conformance::Status::Skip})
    status_filter_->addItem(QString::fromUtf8(conformance::status_name(s).data()),
                            QString::fromUtf8(conformance::status_name(s).data()));
  op_filter_ = new QComboBox(this);
  op_filter_->addItem("any operator", "");
  drift_only_ = new QCheckBox("drift only", this);
  search_ = new QLineEdit(this);
  search_->setPlaceholderText("test name contains...");
  filters->addWidget(status_filter_);
  filters->addWidget(op_filter_);
  filters->addWidget(drift_only_);
  filters->addWidget(search_, 1);
  v->addLayout(filters);

  table_ = new QTableView(this);
  table_->setModel(filter_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->horizontalHeader()->setSectionResizeMode(ConformanceModel::Error, QHeaderView::Stretch);
  table_->setColumnWidth(ConformanceModel::Test, 320);

  auto* detail = new QWidget(this);
  auto* dv = new QVBoxLayout(detail);
  dv->setContentsMargins(0, 0, 0, 0);
  auto* dh = new QHBoxLayout;
  case_info_ = new QLabel("Double-click a test to open its model and compare expected and actual outputs", this);
  case_info_->setWordWrap(true);
  output_choice_ = new QComboBox(this);
  output_choice_->hide();
  dh->addWidget(case_info_, 1);
  dh->addWidget(output_choice_);
  dv->addLayout(dh);
  panel_ = new TensorPanel(this);
  dv->addWidget(panel_, 1);

  auto* split = new QSplitter(Qt::Vertical, this);
  split->addWidget(table_);
  split->addWidget(detail);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 1);
  v->addWidget(split, 1);
  setCentralWidget(central);
  totals_ = new QLabel(this);
  statusBar()->addWidget(totals_, 1);

  connect(run, &QPushButton::clicked, this, &ConformanceBrowser::choose_and_run);
  connect(open, &QPushButton::clicked, this, &ConformanceBrowser::choose_and_open);
  connect(cancel_, &QPushButton::clicked, this, &ConformanceBrowser::cancel_run);
  connect(status_filter_, &QComboBox::currentIndexChanged, this,
          [this] { filter_->set_status(status_filter_->currentData().toString()); });
  connect(op_filter_, &QComboBox::currentIndexChanged, this,
          [this] { filter_->set_op(op_filter_->currentData().toString()); });
  connect(drift_only_, &QCheckBox::toggled, filter_, &ConformanceFilter::set_drift_only);
  connect(search_, &QLineEdit::textChanged, filter_, &ConformanceFilter::set_text);
  connect(table_, &QTableView::activated, this,
          [this](const QModelIndex& i) { open_test(filter_->mapToSource(i).row()); });
  connect(output_choice_, &QComboBox::currentIndexChanged, this, &ConformanceBrowser::show_output);
  connect(&run_, &ConformanceRun::progress, this, [this](int done, int total, const QString& key, const QString& st) {
    progress_->setRange(0, total);
    progress_->setValue(done);
    progress_->setFormat(QString("%v/%m  %1: %2").arg(key, st));
  });
  connect(&run_, &ConformanceRun::finished, this, &ConformanceBrowser::on_run_finished);
  connect(&outputs_watcher_, &QFutureWatcher<CaseOutputs>::finished, this, &ConformanceBrowser::on_outputs_ready);
}

ConformanceBrowser::~ConformanceBrowser() {
  run_.cancel();
  outputs_watcher_.waitForFinished();
}

bool ConformanceBrowser::is_running() const { return run_.running(); }

bool ConformanceBrowser::load_expectations_file(const fs::path& path, QString* error) {
  expectations_.reset();
  if (path.empty()) return true;
  try {
    expectations_ = conformance::load_expectations(path);
  } catch (const std::exception& e) {
    if (error) *error = e.what();
    return false;
  }
  return true;
}

bool ConformanceBrowser::open_report(const fs::path& json, const fs::path& suite, const fs::path& expectations,
                                     QString* error) {
  if (!load_expectations_file(expectations, error)) return false;
  if (!model_->load_json_report(json, error)) return false;
  if (expectations_) model_->set_expectations(*expectations_);
  if (!suite.empty()) {
    try {
      model_->set_suite(conformance::discover_suite(suite));
    } catch (const std::exception& e) {
      if (error) *error = QString("cannot read suite %1: %2").arg(QString::fromStdString(suite.string()), e.what());
      return false;
    }
  }
  refresh_op_filter();
  run_engine_ = engine_->currentText().toStdString();  // opened tests run on the chosen engine
  totals_->setText(model_->totals());
  setWindowTitle("onnxscope - conformance - " + QString::fromStdString(json.filename().string()));
  return true;
}

bool ConformanceBrowser::run_suite(const fs::path& suite, const std::string& engine, const fs::path& expectations,
                                   QString* error) {
  if (!load_expectations_file(expectations, error)) return false;
  SuiteRunRequest req;
  req.suite = suite;
  req.engine = engine;
  req.jobs = jobs_->value();
  if (expectations_)
    for (const auto& [key, e] : expectations_->tests) {
      if (e.tolerance) req.extra.tolerances[key] = *e.tolerance;
      if (e.status == conformance::Status::Skip) req.extra.skips[key] = e.reason;
    }
  if (!run_.start(req, error)) return false;
  run_engine_ = engine;
  progress_->setRange(0, static_cast<int>(run_.cases().size()));
  progress_->setValue(0);
  progress_->show();
  cancel_->show();
  totals_->setText(QString("running %1 test(s) on %2...").arg(run_.cases().size()).arg(QString::fromStdString(engine)));
  return true;
}

void ConformanceBrowser::cancel_run() {
  run_.cancel();
  totals_->setText("cancelling after the tests in flight...");
}

void ConformanceBrowser::on_run_finished(bool cancelled) {
  progress_->hide();
  cancel_->hide();
  model_->set_results(run_.results());
  if (expectations_) model_->set_expectations(*expectations_);
  model_->set_suite(run_.cases(), false);
  refresh_op_filter();
  totals_->setText(model_->totals() + (cancelled ? "  (cancelled: partial results)" : ""));
  emit run_finished(cancelled);
}

void ConformanceBrowser::refresh_op_filter() {
  const QString keep = op_filter_->currentData().toString();
  op_filter_->blockSignals(true);
  op_filter_->clear();
  op_filter_->addItem("any operator", "");
  for (const QString& op : model_->all_ops()) op_filter_->addItem(op, op);
  op_filter_->setCurrentIndex(std::max(0, op_filter_->findData(keep)));
  op_filter_->blockSignals(false);
}

void ConformanceBrowser::open_test(int source_row) {
  if (source_row < 0 || source_row >= model_->rowCount()) return;
  const ConformanceRow& r = model_->row(source_row);
  if (!r.test_case) {
    case_info_->setText(QString::fromStdString(r.result.key) +
                        ": its folder is unknown (open the report together with its suite folder)");
    return;
  }
  if (outputs_watcher_.isRunning()) return;  // one at a time; the user can click again
  pending_key_ = QString::fromStdString(r.result.key);
  case_info_->setText("running " + pending_key_ + " on " + QString::fromStdString(run_engine_) + "...");
  conformance::Tolerance tol;
  if (expectations_)
    if (auto it = expectations_->tests.find(r.result.key); it != expectations_->tests.end() && it->second.tolerance)
      tol = *it->second.tolerance;
  outputs_watcher_.setFuture(QtConcurrent::run(run_case_outputs, *r.test_case, run_engine_, tol));
}

void ConformanceBrowser::on_outputs_ready() {
  shown_ = outputs_watcher_.result();
  QStringList inputs;
  for (const auto& f : shown_->input_files) inputs << QString::fromStdString(f);
  emit open_model_requested(QString::fromStdString(shown_->model_path), inputs);
  int mismatches = 0;
  for (const auto& o : shown_->outputs) mismatches += o.mismatch.has_value();
  QString info = QString("<b>%1</b> on %2: ").arg(pending_key_, QString::fromStdString(run_engine_));
  if (!shown_->error.empty()) info += "error: " + QString::fromStdString(shown_->error).toHtmlEscaped();
  else info += QString("%1 output(s), %2 mismatching").arg(shown_->outputs.size()).arg(mismatches);
  case_info_->setText(info);
  output_choice_->blockSignals(true);
  output_choice_->clear();
  for (const auto& o : shown_->outputs)
    output_choice_->addItem(QString::fromStdString(o.name) + (o.mismatch ? "  (mismatch)" : ""));
  output_choice_->blockSignals(false);
  output_choice_->setVisible(!shown_->outputs.empty());
  if (!shown_->outputs.empty()) show_output(0);
  else panel_->clear("no outputs to compare");
  emit case_outputs_shown(pending_key_);
}

void ConformanceBrowser::show_output(int k) {
  if (!shown_ || k < 0 || k >= static_cast<int>(shown_->outputs.size())) return;
  const CaseOutput& o = shown_->outputs[static_cast<size_t>(k)];
  panel_->show_values(QString::fromStdString(o.name) +
                          (o.mismatch ? " - " + QString::fromStdString(*o.mismatch).left(300) : QString(" - match")),
                      o.expected, o.actual ? o.actual : std::optional<Value>(Value::none()), "expected",
                      QString::fromStdString(run_engine_));
}

void ConformanceBrowser::choose_and_run() {
  const QString dir = QFileDialog::getExistingDirectory(this, "Suite folder");
  if (dir.isEmpty()) return;
  const QString exp = QFileDialog::getOpenFileName(this, "Expectations file (optional: cancel to skip)", {},
                                                   "Expectations (*.toml);;All files (*)");
  QString err;
  if (!run_suite(dir.toStdString(), engine_->currentText().toStdString(), exp.toStdString(), &err))
    QMessageBox::warning(this, "Run suite", err);
}

void ConformanceBrowser::choose_and_open() {
  const QString json = QFileDialog::getOpenFileName(this, "Conformance JSON report", {}, "JSON (*.json);;All files (*)");
  if (json.isEmpty()) return;
  const QString dir = QFileDialog::getExistingDirectory(this, "Its suite folder (optional: cancel to skip)");
  const QString exp = QFileDialog::getOpenFileName(this, "Expectations file (optional: cancel to skip)", {},
                                                   "Expectations (*.toml);;All files (*)");
  QString err;
  if (!open_report(json.toStdString(), dir.toStdString(), exp.toStdString(), &err))
    QMessageBox::warning(this, "Open report", err);
}

}  // namespace onnxscope::viewer
