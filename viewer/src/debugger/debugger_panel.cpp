#include "onnxscope/viewer/debugger_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "onnxscope/dump.h"
#include "onnxscope/engines.h"
#include "onnxscope/viewer/debug_session.h"

namespace onnxscope::viewer {

namespace {
constexpr const char* kNoB = "(none)";
constexpr const char* kDumpB = "HDF5 dump...";
}  // namespace

DebuggerPanel::DebuggerPanel(QWidget* parent) : QWidget(parent), session_(new DebugSession(this)) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  auto* form = new QFormLayout;
  engine_a_ = new QComboBox(this);
  engine_b_ = new QComboBox(this);
  engine_b_->addItem(kNoB);
  for (const auto& n : engine_names()) {
    engine_a_->addItem(QString::fromStdString(n));
    engine_b_->addItem(QString::fromStdString(n));
  }
  engine_b_->addItem(kDumpB);
  form->addRow("Engine A", engine_a_);
  form->addRow("Side B", engine_b_);
  seed_ = new QSpinBox(this);
  seed_->setRange(0, 1 << 30);
  form->addRow("Input seed", seed_);
  dims_ = new QLineEdit(this);
  dims_->setPlaceholderText("symbolic dims: NAME=V, ...");
  form->addRow("Dims", dims_);
  input_files_ = new QLineEdit(this);
  input_files_->setPlaceholderText("inputs.npz, NAME=file.pb|.npy, ... (else seeded random)");
  form->addRow("Input files", input_files_);
  auto* dump_row = new QHBoxLayout;
  inputs_dump_label_ = new QLabel("-", this);
  auto* dump_btn = new QPushButton("From dump...", this);
  dump_row->addWidget(inputs_dump_label_, 1);
  dump_row->addWidget(dump_btn);
  form->addRow("Inputs of a dump", dump_row);
  auto* tol_row = new QHBoxLayout;
  rtol_ = new QDoubleSpinBox(this);
  atol_ = new QDoubleSpinBox(this);
  for (QDoubleSpinBox* s : {rtol_, atol_}) {
    s->setDecimals(8);
    s->setRange(0, 1e6);
    s->setSingleStep(1e-5);
  }
  rtol_->setValue(1e-4);
  atol_->setValue(1e-5);
  for (QDoubleSpinBox* s : {rtol_, atol_})
    s->setToolTip("Every tensor's tolerance but float16 (rtol 4e-3, atol 1e-3) and bfloat16 (rtol 3e-2, atol 1e-2) "
                  "ones; an element agrees when |A-B| <= atol + rtol*|A|, NaN and Inf only with the same value");
  tol_row->addWidget(new QLabel("rtol", this));
  tol_row->addWidget(rtol_);
  tol_row->addWidget(new QLabel("atol", this));
  tol_row->addWidget(atol_);
  form->addRow("Tolerance", tol_row);
  v->addLayout(form);

  auto* buttons = new QGridLayout;
  run_ = new QPushButton("Run", this);
  pause_ = new QPushButton("Pause", this);
  step_ = new QPushButton("Step", this);
  back_ = new QPushButton("Step back", this);
  run_to_ = new QPushButton("Run to selected", this);
  cancel_ = new QPushButton("Cancel", this);
  bp_ = new QPushButton("Toggle breakpoint", this);
  run_->setShortcut(QKeySequence("F5"));
  step_->setShortcut(QKeySequence("F10"));
  back_->setShortcut(QKeySequence("Shift+F10"));
  pause_->setShortcut(QKeySequence("F6"));
  bp_->setShortcut(QKeySequence("F9"));
  buttons->addWidget(run_, 0, 0);
  buttons->addWidget(pause_, 0, 1);
  buttons->addWidget(cancel_, 0, 2);
  buttons->addWidget(step_, 1, 0);
  buttons->addWidget(back_, 1, 1);
  buttons->addWidget(run_to_, 1, 2);
  buttons->addWidget(bp_, 2, 0, 1, 3);
  v->addLayout(buttons);
  break_nan_ = new QCheckBox("Break when a NaN/Inf appears", this);
  break_div_ = new QCheckBox("Break when A and B diverge beyond the tolerance", this);
  into_bodies_ = new QCheckBox("Step into If/Loop/Scan bodies and functions", this);
  v->addWidget(break_nan_);
  v->addWidget(break_div_);
  v->addWidget(into_bodies_);
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1);
  progress_->setValue(0);
  state_ = new QLabel("Open a model, then Run or Step", this);
  state_->setWordWrap(true);
  node_ = new QLabel(this);
  node_->setWordWrap(true);
  node_->setTextFormat(Qt::RichText);
  outputs_ = new QListWidget(this);
  outputs_->setToolTip("Outputs of the current node: click one to view it");
  outputs_->setMinimumHeight(40);
  v->addWidget(progress_);
  v->addWidget(state_);
  v->addWidget(node_);
  v->addWidget(outputs_, 1);

  connect(run_, &QPushButton::clicked, this, &DebuggerPanel::run);
  connect(pause_, &QPushButton::clicked, this, &DebuggerPanel::pause);
  connect(step_, &QPushButton::clicked, this, &DebuggerPanel::step);
  connect(back_, &QPushButton::clicked, this, &DebuggerPanel::step_back);
  connect(run_to_, &QPushButton::clicked, this, &DebuggerPanel::run_to_selected);
  connect(cancel_, &QPushButton::clicked, this, &DebuggerPanel::cancel);
  connect(bp_, &QPushButton::clicked, this, &DebuggerPanel::toggle_breakpoint);
  connect(break_nan_, &QCheckBox::toggled, session_, &DebugSession::set_break_on_nan);
  connect(break_div_, &QCheckBox::toggled, session_, &DebugSession::set_break_on_divergence);
  connect(dump_btn, &QPushButton::clicked, this, [this] {
    const QString p = QFileDialog::getOpenFileName(this, "Dump whose inputs to use", {}, "HDF5 dumps (*.h5);;All files (*)");
    if (!p.isEmpty()) set_inputs_from_dump(p);
  });
  connect(engine_b_, &QComboBox::activated, this, [this](int i) {
    if (engine_b_->itemText(i) != kDumpB) return;
    const QString p = QFileDialog::getOpenFileName(this, "Dump as side B", {}, "HDF5 dumps (*.h5);;All files (*)");
    if (p.isEmpty()) engine_b_->setCurrentIndex(0);
    else choose_dump_b(p);
  });
  connect(outputs_, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* it) { emit tensor_requested(it->data(Qt::UserRole).toString()); });

  connect(session_, &DebugSession::node_reached, this, [this](const QString& g, int i, const QString&) {
    emit current_node_changed(g, i);
    show_current();
  });
  connect(session_, &DebugSession::cursor_moved, this, [this](int) { show_current(); });
  connect(session_, &DebugSession::paused, this, [this](const QString& why) {
    state_->setText("Paused: " + why.toHtmlEscaped());
    update_buttons();
    show_current();
  });
  connect(session_, &DebugSession::progress, this, [this](int done, int total) {
    progress_->setRange(0, std::max(1, total));
    progress_->setValue(done);
  });
  connect(session_, &DebugSession::node_error, this, [this](const QString& side, const QString&, int, const QString& m) {
    state_->setText("<span style='color:#b00'>Error in " + side + ": " + m.toHtmlEscaped() + "</span>");
  });
  connect(session_, &DebugSession::finished, this, [this](bool ok, const QString& m) {
    if (ok) state_->setText("Finished: " + m);
    else if (!state_->text().startsWith("<span")) state_->setText("Stopped: " + m.toHtmlEscaped());
    update_buttons();
    emit run_finished(ok);
  });
  update_buttons();
}

DebuggerPanel::~DebuggerPanel() = default;  // the session (a child) cancels and joins its worker

void DebuggerPanel::set_model(std::shared_ptr<const Model> model, const QString& path) {
  session_->cancel();
  session_->wait(10000);
  model_ = std::move(model);
  model_path_ = path;
  selected_node_ = -1;
  // Every symbolic input dim gets 1 until the user says otherwise.
  QStringList dims;
  if (model_)
    for (const auto& in : model_->graph.inputs)
      if (in.type.shape)
        for (const Dim& d : *in.type.shape)
          if (d.is_symbolic() && !dims.contains(QString::fromStdString(d.param) + "=1"))
            dims << QString::fromStdString(d.param) + "=1";
  dims_->setText(dims.join(", "));
  outputs_->clear();
  node_->clear();
  state_->setText(model_ ? "Ready: Run or Step" : "Open a model, then Run or Step");
  update_buttons();
}

bool DebuggerPanel::choose_engines(const QString& a, const QString& b) {
  const int ia = engine_a_->findText(a);
  const int ib = b.isEmpty() ? 0 : engine_b_->findText(b);
  if (ia < 0 || ib < 0) return false;
  engine_a_->setCurrentIndex(ia);
  engine_b_->setCurrentIndex(ib);
  dump_b_.clear();
  return true;
}

void DebuggerPanel::choose_dump_b(const QString& path) {
  dump_b_ = path;
  const int i = engine_b_->findText(kDumpB);
  engine_b_->setItemText(i, kDumpB);
  engine_b_->setCurrentIndex(i);
  engine_b_->setToolTip(path);
}

void DebuggerPanel::set_seed(int seed) { seed_->setValue(seed); }
void DebuggerPanel::set_dims(const QString& spec) { dims_->setText(spec); }
void DebuggerPanel::set_input_files(const QString& spec) { input_files_->setText(spec); }
QString DebuggerPanel::input_files() const { return input_files_->text(); }
QString DebuggerPanel::status_text() const { return state_->text(); }

void DebuggerPanel::set_inputs_from_dump(const QString& path) {
  inputs_dump_ = path;
  inputs_dump_label_->setText(QFileInfo(path).fileName());
  inputs_dump_label_->setToolTip(path);
}

bool DebuggerPanel::configure() {
  if (!model_) {
    state_->setText("Open a model first");
    return false;
  }
  session_->set_model(model_);
  const QString b = engine_b_->currentText();
  if (b == kDumpB && !dump_b_.isEmpty()) {
    if (!session_->set_engines(engine_a_->currentText().toStdString())) return false;
    session_->set_dump_b(dump_b_.toStdString());
  } else if (!session_->set_engines(engine_a_->currentText().toStdString(), b == kNoB || b == kDumpB ? std::string()
                                                                                                      : b.toStdString())) {
    state_->setText(session_->last_error());
    return false;
  }
  InputSpec spec;
  spec.seed = static_cast<uint64_t>(seed_->value());
  for (const QString& part : dims_->text().split(',', Qt::SkipEmptyParts)) {
    const int eq = part.indexOf('=');
    bool ok = false;
    const qlonglong v = eq > 0 ? part.mid(eq + 1).trimmed().toLongLong(&ok) : 0;
    if (!ok || v < 0) {
      state_->setText("Dims: expected NAME=V with V >= 0, got '" + part.trimmed() + "'");
      return false;
    }
    spec.dims[part.left(eq).trimmed().toStdString()] = v;
  }
  for (const QString& part : input_files_->text().split(',', Qt::SkipEmptyParts)) {
    const int eq = part.indexOf('=');
    if (eq < 0 && part.trimmed().endsWith(".npz")) {  // an archive: its arrays by input name
      spec.archives.emplace_back(part.trimmed().toStdString());
      continue;
    }
    if (eq <= 0) {
      state_->setText("Input files: expected NAME=FILE, got '" + part.trimmed() + "'");
      return false;
    }
    spec.files[part.left(eq).trimmed().toStdString()] = part.mid(eq + 1).trimmed().toStdString();
  }
  if (!inputs_dump_.isEmpty()) {
    try {
      DumpFile d = read_dump(inputs_dump_.toStdString());
      for (auto& e : d.inputs)
        if (e.data) spec.from_dump[e.name] = *e.data;
      spec.dump_must_cover = spec.files.empty() && spec.archives.empty();
    } catch (const std::exception& e) {
      state_->setText(QString("Inputs of a dump: ") + e.what());
      return false;
    }
  }
  session_->set_inputs(std::move(spec));
  // The boxes set the global tolerance; float16 and bfloat16 keep their looser defaults.
  DiffTolerance tol = default_tolerance();
  tol.rtol = rtol_->value();
  tol.atol = atol_->value();
  session_->set_tolerance(tol);
  session_->set_step_into_subgraphs(into_bodies_->isChecked());
  return true;
}

void DebuggerPanel::run() {
  const SessionState s = session_->state();
  if ((s == SessionState::Idle || s == SessionState::Finished) && !configure()) return;
  state_->setText("Running...");
  session_->run();
  update_buttons();
}

void DebuggerPanel::pause() { session_->pause(); }

void DebuggerPanel::step() {
  const SessionState s = session_->state();
  const bool fresh = s == SessionState::Idle ||
                     (s == SessionState::Finished && session_->cursor() + 1 >= static_cast<int>(session_->history_size()));
  if (fresh && !configure()) return;
  session_->step();
  update_buttons();
}

void DebuggerPanel::step_back() { session_->step_back(); }

void DebuggerPanel::run_to_selected() {
  if (selected_node_ < 0) {
    state_->setText("Select a node in the graph first");
    return;
  }
  const SessionState s = session_->state();
  if ((s == SessionState::Idle || s == SessionState::Finished) && !configure()) return;
  session_->run_to(selected_graph_, selected_node_);
  update_buttons();
}

void DebuggerPanel::cancel() { session_->cancel(); }

void DebuggerPanel::toggle_breakpoint() {
  if (selected_node_ < 0) {
    state_->setText("Select a node in the graph first");
    return;
  }
  const bool on = !session_->has_breakpoint(selected_graph_, selected_node_);
  session_->set_breakpoint(selected_graph_, selected_node_, on);
  if (selected_graph_ == "main") emit breakpoint_changed(selected_node_, on);
  state_->setText(QString("Breakpoint %1 on node #%2").arg(on ? "set" : "cleared").arg(selected_node_));
}

void DebuggerPanel::on_node_selected(const QString& graph_path, int node_index) {
  selected_graph_ = graph_path;
  selected_node_ = node_index;
}

void DebuggerPanel::show_current() {
  auto cur = session_->current();
  outputs_->clear();
  if (!cur) {
    node_->clear();
    return;
  }
  node_->setText(QString("<b>%1</b> (%2) in %3, kernel %4<br>step %5 of %6 recorded%7")
                     .arg(QString::fromStdString(cur->node).toHtmlEscaped(), QString::fromStdString(cur->op_type),
                          QString::fromStdString(cur->graph_path), QString::fromStdString(cur->kernel))
                     .arg(session_->cursor() + 1)
                     .arg(session_->history_size())
                     .arg(cur->iteration >= 0 ? QString(", iteration %1").arg(cur->iteration) : QString()));
  for (size_t k = 0; k < cur->outputs.size(); ++k) {
    const auto& [name, v] = cur->outputs[k];
    QString text = QString::fromStdString(name) + "  " + QString::fromStdString(v.describe());
    if (cur->diffs[k])
      text += cur->diffs[k]->within() ? "  (A = B)" : QString("  max|A-B| %1").arg(cur->diffs[k]->max_abs, 0, 'g', 3);
    auto* item = new QListWidgetItem(text, outputs_);
    item->setData(Qt::UserRole, QString::fromStdString(name));
    if (cur->diffs[k] && !cur->diffs[k]->within()) item->setForeground(QColor(190, 30, 30));
  }
  update_buttons();
}

void DebuggerPanel::update_buttons() {
  const SessionState s = session_->state();
  const bool running = s == SessionState::Running;
  run_->setEnabled(model_ && !running);
  step_->setEnabled(model_ != nullptr);
  pause_->setEnabled(running);
  cancel_->setEnabled(running || s == SessionState::Paused);
  back_->setEnabled(!running && session_->cursor() > 0);
  run_to_->setEnabled(model_ && !running);
  bp_->setEnabled(model_ != nullptr);
}

}  // namespace onnxscope::viewer
