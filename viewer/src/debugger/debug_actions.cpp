#include "onnxscope/viewer/debug_actions.h"

#include <QEventLoop>
#include <QTimer>

#include "onnxscope/viewer/debug_session.h"
#include "onnxscope/viewer/debugger_panel.h"
#include "onnxscope/viewer/divergence_model.h"
#include "onnxscope/viewer/divergence_panel.h"
#include "onnxscope/viewer/graph_view.h"
#include "onnxscope/viewer/main_window.h"

namespace onnxscope::viewer {

namespace {

// Spins the event loop until the session pauses or finishes (true) or time runs out.
bool wait_stopped(DebugSession* s, int timeout_ms) {
  QEventLoop loop;
  QTimer tick;
  tick.setInterval(5);
  QObject::connect(&tick, &QTimer::timeout, &loop, [&] {
    const SessionState st = s->state();
    if (st == SessionState::Paused || st == SessionState::Finished) loop.exit(0);
  });
  QTimer::singleShot(timeout_ms, &loop, [&] { loop.exit(1); });
  tick.start();
  const int rc = loop.exec();
  QEventLoop drain;  // deliver the signals queued by the worker before it stopped
  drain.processEvents();
  return rc == 0;
}

}  // namespace

QString apply_debug_actions(MainWindow& w, const DebugActions& a, int timeout_ms) {
  DebuggerPanel* panel = w.debugger_panel();
  if (!w.model()) return "no model loaded";
  if (a.engines.size() > 2) return "--engines takes one or two engines";
  if (!a.engines.isEmpty() && !panel->choose_engines(a.engines[0], a.engines.value(1)))
    return "unknown engine in '" + a.engines.join(",") + "'";
  if (!a.inputs.isEmpty()) panel->set_input_files(a.inputs);
  if (!a.dims.isEmpty()) panel->set_dims(a.dims);
  DebugSession* s = panel->session();
  QString error;
  auto on_error = QObject::connect(s, &DebugSession::node_error, &w,
                                   [&](const QString& side, const QString&, int, const QString& m) {
                                     error = "engine " + side + ": " + m;
                                   });
  QString finish_msg;
  bool finish_ok = true;
  auto on_finish = QObject::connect(s, &DebugSession::finished, &w, [&](bool ok, const QString& m) {
    finish_ok = ok;
    finish_msg = m;
  });
  bool timed_out = false;
  if (a.steps >= 0) {
    for (int i = 0; i < a.steps && error.isEmpty(); ++i) {
      panel->step();
      if (s->state() == SessionState::Idle) {
        error = "the debugger did not start: " + panel->status_text();
        break;
      }
      if (!wait_stopped(s, timeout_ms)) timed_out = true;
      if (timed_out || s->state() == SessionState::Finished) break;
    }
  } else {
    panel->run();
    if (s->state() == SessionState::Idle) {  // the dock refused its settings (inputs, dims, engines)
      QObject::disconnect(on_error);
      QObject::disconnect(on_finish);
      return "the debugger did not start: " + panel->status_text();
    }
    // Breakpoints set in the dock may pause it: keep going to the end.
    while (!timed_out && s->state() != SessionState::Finished) {
      if (!wait_stopped(s, timeout_ms)) timed_out = true;
      else if (s->state() == SessionState::Paused) s->run();
    }
    // Show where A and B part ways: the first divergent node, else the most blamed one.
    const DivergenceModel* dm = w.divergence_panel()->model();
    int focus = dm->first_divergence_row() >= 0 ? dm->node_index_of_row(dm->first_divergence_row()) : -1;
    if (focus < 0 && !dm->top_blamed(1).empty()) focus = dm->top_blamed(1).front();
    if (focus >= 0) {
      w.divergence_panel()->select_node(focus);
      w.graph_view()->select_node("main", focus);
      const auto& outs = dm->report()->nodes[static_cast<size_t>(focus)].outputs;
      if (!outs.empty()) w.show_tensor(QString::fromStdString(outs.front().first));
    } else if (auto last = s->current(); last && !last->outputs.empty()) {
      w.show_tensor(QString::fromStdString(last->outputs.front().first));
    }
  }
  QObject::disconnect(on_error);
  QObject::disconnect(on_finish);
  if (timed_out) {
    s->cancel();
    s->wait(10000);
    return "the debugger did not stop in time";
  }
  if (!error.isEmpty()) return error;
  if (!finish_ok && finish_msg != "cancelled") return finish_msg;
  return {};
}

}  // namespace onnxscope::viewer
