// The stepping debugger's controller. Engine A runs on one worker QThread the
// session owns; an observer records every node's outputs and blocks between
// nodes while paused, so the UI thread only sends requests (run, pause, step,
// run to, cancel) and reads the recorded history. Side B, when chosen, is
// captured first (a second engine run to the end, or an HDF5 dump), so every
// step of A is shown and checked against B's tensor of the same name.
#pragma once

#include <QObject>
#include <QSet>
#include <QString>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnxscope/diff.h"
#include "onnxscope/engine.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reduce.h"

class QThread;

namespace onnxscope::viewer {

// One executed node of engine A, with B's tensors of the same names.
struct StepRecord {
  std::string graph_path;
  size_t node_index = 0;
  std::string node, op_type, kernel;
  int64_t iteration = -1;
  double seconds = 0;
  std::vector<std::pair<std::string, Value>> outputs;  // A's outputs by name
  std::vector<std::optional<Value>> outputs_b;         // same order; nullopt: B has no such tensor
  std::vector<std::optional<TensorDiff>> diffs;        // B against A, when both exist
  std::string stop_reason;  // "breakpoint", "first non-finite value: ...", "divergence ...", "" when not a stop
  // With the NaN breakpoint on: A's first output holding NaN or Inf, the node
  // and every input that fed it, as `run --check-finite` says it; else "".
  std::string nonfinite;
};

enum class SessionState { Idle, Running, Paused, Finished };

class DebugSession : public QObject {
  Q_OBJECT
 public:
  explicit DebugSession(QObject* parent = nullptr);
  ~DebugSession() override;  // cancels a running worker and waits for it

  // ---- configuration: ignored while a run is in progress (running or paused) ----
  void set_model(std::shared_ptr<const Model> model);
  const std::shared_ptr<const Model>& model() const { return model_; }
  // Engines by name ("reference", "cpu"); b_name empty: one engine.
  // False (with last_error()) for an unknown name or while a run is in progress.
  bool set_engines(const std::string& a_name, const std::string& b_name = {});
  // Engines built by the caller (tests plant faults this way).
  bool set_engines(std::unique_ptr<Engine> a, std::unique_ptr<Engine> b = nullptr);
  // Side B read from an HDF5 dump instead of a second engine.
  void set_dump_b(const std::filesystem::path& dump);
  void set_inputs(InputSpec spec) {
    if (!busy()) inputs_ = std::move(spec);
  }
  void set_tolerance(DiffTolerance tol) {
    if (!busy()) tol_ = tol;
  }
  const DiffTolerance& tolerance() const { return tol_; }
  void set_step_into_subgraphs(bool on) {
    if (!busy()) into_subgraphs_ = on;
  }

  // ---- breakpoints (any time) ----
  // A body's graph path may be given as the loader writes it ("main/NODE:ATTR")
  // or as the interpreter reports it ("main/NODE").
  void set_breakpoint(const QString& graph_path, int node_index, bool on);
  bool has_breakpoint(const QString& graph_path, int node_index) const;
  void set_break_on_nan(bool on);
  void set_break_on_divergence(bool on);

  // ---- commands ----
  // Start (or resume) and run until a breakpoint, the end, or pause().
  void run();
  // Execute one more node (starts a run paused after its first node). When
  // the cursor is behind the newest record, moves it forward instead.
  void step();
  // Move the cursor one record back; nothing is re-run. False at the start.
  bool step_back();
  // Run until the given node has executed.
  void run_to(const QString& graph_path, int node_index);
  void pause();
  // Stop the run; the worker ends with finished(false, "cancelled").
  void cancel();
  // Blocks until the worker thread has ended (tests, shutdown).
  bool wait(unsigned long ms);

  // ---- state and results (UI thread) ----
  SessionState state() const;
  bool busy() const;  // running or paused
  QString last_error() const { return last_error_; }
  bool has_b() const;
  QString name_a() const;
  QString name_b() const;
  size_t history_size() const;
  std::optional<StepRecord> record(size_t i) const;
  std::optional<StepRecord> current() const;  // the record at the cursor
  int cursor() const;                          // -1 before the first node
  size_t total_nodes() const;                  // nodes of the main graph
  // A value by name as it stands at the cursor's end of the run: A's
  // captured tensors (inputs and initializers included) and B's.
  std::optional<Value> value_a(const std::string& name) const;
  std::optional<Value> value_b(const std::string& name) const;
  // After a finished two-sided run: per-node diff with blame (when B is an engine).
  std::optional<DiffReport> report() const;
  // Cuts the model down around `node_index` (main graph) into a backend-style
  // test folder with the library's reduce. Needs B to be an engine. Works on
  // a snapshot of the finished run, so a new run may start meanwhile.
  ReduceResult export_repro(size_t node_index, const std::filesystem::path& out_dir, QString* error);

 signals:
  void node_reached(const QString& graph_path, int node_index, const QString& name);
  void paused(const QString& reason);
  void cursor_moved(int cursor);
  void finished(bool ok, const QString& message);
  void progress(int done, int total);
  // A node failed in an engine ("A" or "B"); the run ends with finished(false, ...).
  void node_error(const QString& side, const QString& graph_path, int node_index, const QString& message);
  void report_ready();

 private:
  enum class Mode { Run, Step, RunTo };
  class Recorder;
  friend class Recorder;

  void start(Mode mode);
  void resume(Mode mode);
  void worker_main();
  bool prepare_side_b(const NamedValues& inputs, QString& error);
  // Called by the recorder on the worker thread: true = pause here.
  std::string check_stop(const StepRecord& r);
  void wait_while_paused(std::unique_lock<std::mutex>& lock);

  std::shared_ptr<const Model> model_;
  // Shared so an export on another thread keeps the engine it uses alive.
  std::shared_ptr<Engine> engine_a_, engine_b_;
  std::optional<std::filesystem::path> dump_b_;
  InputSpec inputs_;
  DiffTolerance tol_ = default_tolerance();
  bool into_subgraphs_ = false;
  QString last_error_;
  QThread* worker_ = nullptr;

  // Shared with the worker, under mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  SessionState state_ = SessionState::Idle;
  Mode mode_ = Mode::Run;
  bool pause_requested_ = false, cancel_ = false, go_ = false;
  std::optional<std::pair<std::string, size_t>> run_to_;
  std::set<std::pair<std::string, size_t>> breakpoints_;
  bool break_nan_ = false, break_divergence_ = false;
  std::vector<StepRecord> history_;
  int cursor_ = -1;
  Capture cap_a_, cap_b_;
  bool have_b_ = false;
  std::optional<DiffReport> report_;
};

}  // namespace onnxscope::viewer
