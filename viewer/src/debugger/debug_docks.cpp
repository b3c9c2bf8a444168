// The main window's debugging docks (Debugger, Tensor, Divergence) and the
// Conformance window, wired to the graph view. Kept apart from
// main_window.cpp so the window's own file stays about loading and layout.
#include <QDockWidget>
#include <QMenuBar>
#include <QScrollArea>
#include <QStatusBar>

#include "onnxscope/viewer/conformance_browser.h"
#include "onnxscope/viewer/debug_session.h"
#include "onnxscope/viewer/debugger_panel.h"
#include "onnxscope/viewer/divergence_panel.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/main_window.h"
#include "onnxscope/viewer/tensor_view.h"

namespace onnxscope::viewer {

void MainWindow::build_debug_docks() {
  debugger_panel_ = new DebuggerPanel(this);
  tensor_panel_ = new TensorPanel(this);
  divergence_panel_ = new DivergencePanel(debugger_panel_->session(), this);
  auto dock = [this](const QString& title, const QString& name, QWidget* w, Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    addDockWidget(area, d);
    return d;
  };
  // The left column runs the full height; Tensor and Divergence sit under the graph.
  setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
  setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
  QDockWidget* dbg = dock("Debugger", "debugger", debugger_panel_, Qt::LeftDockWidgetArea);
  // A, B and B-A side by side need more width than a small window has: scroll then.
  auto* tensor_scroll = new QScrollArea(this);
  tensor_scroll->setWidget(tensor_panel_);
  tensor_scroll->setWidgetResizable(true);
  tensor_scroll->setFrameShape(QFrame::NoFrame);
  QDockWidget* ten = dock("Tensor", "tensor", tensor_scroll, Qt::BottomDockWidgetArea);
  QDockWidget* div = dock("Divergence", "divergence", divergence_panel_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(ten, div);
  ten->raise();
  resizeDocks({ten}, {height() * 2 / 5}, Qt::Vertical);
  auto* menu = menuBar()->addMenu("&Debug");
  for (QDockWidget* d : {dbg, ten, div}) menu->addAction(d->toggleViewAction());
  menu->addSeparator();
  menu->addAction("&Conformance browser...", this, [this] {
    conformance_browser()->show();
    conformance_browser()->raise();
  });

  GraphView* gv = graph_view();
  connect(gv, &GraphView::node_selected, debugger_panel_, &DebuggerPanel::on_node_selected);
  connect(gv, &GraphView::node_selected, this, [this](const QString& g, int i) {
    if (g == "main") divergence_panel_->select_node(i);
  });
  connect(gv, &GraphView::tensor_selected, this, &MainWindow::show_tensor);
  connect(debugger_panel_, &DebuggerPanel::current_node_changed, gv, &GraphView::set_current_node);
  connect(debugger_panel_, &DebuggerPanel::breakpoint_changed, gv, &GraphView::set_breakpoint_marker);
  connect(debugger_panel_, &DebuggerPanel::tensor_requested, this, &MainWindow::show_tensor);
  // Each step shows the current node's first output.
  connect(debugger_panel_, &DebuggerPanel::current_node_changed, this, [this] {
    if (auto cur = debugger_panel_->session()->current(); cur && !cur->outputs.empty())
      show_tensor(QString::fromStdString(cur->outputs.front().first));
  });
  connect(divergence_panel_, &DivergencePanel::heat_changed, gv, &GraphView::set_node_heat);
  connect(divergence_panel_, &DivergencePanel::heat_cleared, gv, &GraphView::clear_heat);
  connect(divergence_panel_, &DivergencePanel::node_activated, gv, &GraphView::select_node);
  connect(divergence_panel_, &DivergencePanel::export_done, this,
          [this](bool, const QString& msg) { statusBar()->showMessage(msg, 10000); });
  connect(debugger_panel_->session(), &DebugSession::report_ready, this, [div] { div->raise(); });
  // A node that failed (a kernel error, or its engine's worker process dying
  // under it) is shown and outlined; the window and the loaded model stay.
  connect(debugger_panel_->session(), &DebugSession::node_error, this,
          [this, gv](const QString& side, const QString& graph, int node, const QString& message) {
            statusBar()->showMessage("Engine " + side + " failed: " + message, 30000);
            if (node < 0 || graph != "main") return;
            gv->select_node(graph, node);
            gv->set_current_node(graph, node);
          });
  connect(this, &MainWindow::model_loaded, this, [this] {
    debugger_panel_->set_model(model(), loading_path_);
    divergence_panel_->model()->clear();
    graph_view()->clear_heat();
    tensor_panel_->clear();
    if (!pending_inputs_.isEmpty() && model()) {
      // A conformance test's input_K.pb binds to the K-th graph input.
      QStringList spec;
      for (int k = 0; k < pending_inputs_.size() && k < static_cast<int>(model()->graph.inputs.size()); ++k)
        spec << QString::fromStdString(model()->graph.inputs[static_cast<size_t>(k)].name) + "=" + pending_inputs_[k];
      debugger_panel_->set_input_files(spec.join(","));
      pending_inputs_.clear();
    } else {
      debugger_panel_->set_input_files({});
    }
  });
}

ConformanceBrowser* MainWindow::conformance_browser() {
  if (!conformance_) {
    conformance_ = new ConformanceBrowser(this);
    conformance_->setWindowFlag(Qt::Window);
    connect(conformance_, &ConformanceBrowser::open_model_requested, this,
            [this](const QString& path, const QStringList& inputs) {
              pending_inputs_ = inputs;
              open_model(path);
            });
  }
  return conformance_;
}

// A tensor by name: the current step's record when it holds it (so stepping
// back shows the values of that moment), else the run's captured values.
void MainWindow::show_tensor(const QString& name) {
  DebugSession* s = debugger_panel_->session();
  const std::string n = name.toStdString();
  std::optional<Value> a, b;
  if (auto cur = s->current())
    for (size_t k = 0; k < cur->outputs.size(); ++k)
      if (cur->outputs[k].first == n) {
        a = cur->outputs[k].second;
        b = cur->outputs_b[k];
      }
  if (!a) {
    a = s->value_a(n);
    b = s->value_b(n);
  }
  if (!a && !b && model())
    if (const Initializer* init = model()->graph.initializer(n)) a = Value(init->value);
  tensor_panel_->show_values(name, a, s->has_b() ? (b ? b : std::optional<Value>(Value::none())) : std::nullopt,
                             s->name_a().isEmpty() ? "A" : "A: " + s->name_a(),
                             s->name_b().isEmpty() ? "B" : "B: " + s->name_b());
}

}  // namespace onnxscope::viewer
