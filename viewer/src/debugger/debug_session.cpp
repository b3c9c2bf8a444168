#include "onnxscope/viewer/debug_session.h"

#include <QThread>
#include <climits>
#include <cmath>

#include "onnxscope/diagnostics.h"
#include "onnxscope/dump.h"
#include "onnxscope/engines.h"
#include "onnxscope/finite_check.h"
#include "onnxscope/viewer/gui_engines.h"

namespace onnxscope::viewer {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

// Why the NaN breakpoint stops here, or "": side A's report (the node and
// the inputs that fed it, finite or not: finite_check.h), else the first
// output of side B holding NaN or Inf.
std::string first_non_finite(const StepRecord& r) {
  if (!r.nonfinite.empty()) return "first non-finite value (A): " + r.nonfinite;
  for (size_t k = 0; k < r.outputs.size(); ++k)
    if (r.outputs_b[k] && !count_finite(*r.outputs_b[k]).finite())
      return "first non-finite value (B): output '" + r.outputs[k].first + "' holds " + count_finite(*r.outputs_b[k]).text();
  return {};
}

// Graph paths name a body "main/NODE:ATTR" in the loader and the graph view,
// and "main/NODE" in the interpreter's events: compare them without ":ATTR".
std::string body_key(std::string path) {
  const size_t colon = path.rfind(':'), slash = path.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) path.erase(colon);
  return path;
}

std::string short_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// Records B's main-graph tensors and lets a cancel stop B's run.
struct CaptureB : Observer {
  Capture* out;
  std::function<bool()> stop;
  std::function<void()> tick;
  void on_node(const NodeEvent& e) override {
    if (e.graph_path != "main") return;
    for (size_t k = 0; k < e.outputs.size() && k < e.node->outputs.size(); ++k)
      if (!e.node->outputs[k].empty()) {
        out->values[e.node->outputs[k]] = e.outputs[k];
        out->kernel_of[e.node->outputs[k]] = std::string(e.kernel);
      }
    tick();
  }
  bool should_stop() override { return stop(); }
};

}  // namespace

// Engine A's observer: records a step, then blocks while the session is paused.
class DebugSession::Recorder : public Observer {
 public:
  explicit Recorder(DebugSession* s) : s_(s) {}
  void on_node(const NodeEvent& e) override;
  bool should_stop() override {
    std::lock_guard lock(s_->mu_);
    return s_->cancel_;
  }
  int main_done = 0;

 private:
  DebugSession* s_;
};

void DebugSession::Recorder::on_node(const NodeEvent& e) {
  StepRecord r;
  r.graph_path = std::string(e.graph_path);
  r.node_index = e.node_index;
  r.node = e.node->label(e.node_index);
  r.op_type = e.node->op_type;
  r.kernel = std::string(e.kernel);
  r.iteration = e.iteration;
  r.seconds = e.seconds;
  const bool main = e.graph_path == "main";
  for (size_t k = 0; k < e.outputs.size() && k < e.node->outputs.size(); ++k) {
    const std::string& name = e.node->outputs[k];
    if (name.empty()) continue;
    r.outputs.emplace_back(name, e.outputs[k]);
    std::optional<Value> b;
    std::optional<TensorDiff> d;
    // B's capture holds main-graph names only; body tensors may reuse them.
    if (main && s_->have_b_) {
      auto it = s_->cap_b_.values.find(name);
      if (it != s_->cap_b_.values.end()) {
        b = it->second;
        d = diff_values(e.outputs[k], it->second, s_->tol_, name);
      }
    }
    r.outputs_b.push_back(std::move(b));
    r.diffs.push_back(std::move(d));
  }
  if (main) ++main_done;
  bool break_nan = false;
  {
    std::lock_guard lock(s_->mu_);
    break_nan = s_->break_nan_;
  }
  if (break_nan) {
    FiniteCheck check(/*stop=*/false);
    check.on_node(e);
    if (check.found()) r.nonfinite = check.found()->text();
  }
  std::string reason;
  {
    std::unique_lock lock(s_->mu_);
    if (main)
      for (const auto& [name, v] : r.outputs) {
        s_->cap_a_.values[name] = v;
        s_->cap_a_.kernel_of[name] = r.kernel;
      }
    reason = s_->check_stop(r);
    if (!reason.empty()) s_->pause_requested_ = false;  // one stop answers a pending pause too
    r.stop_reason = reason;
    s_->history_.push_back(std::move(r));
    s_->cursor_ = static_cast<int>(s_->history_.size()) - 1;
    if (!reason.empty()) {
      s_->state_ = SessionState::Paused;
      s_->go_ = false;
    }
  }
  const StepRecord& last = s_->history_.back();  // only this thread appends
  emit s_->node_reached(qs(last.graph_path), static_cast<int>(last.node_index), qs(last.node));
  emit s_->progress(main_done + (s_->engine_b_ ? static_cast<int>(s_->total_nodes()) : 0),
                    static_cast<int>(s_->total_nodes()) * (s_->engine_b_ ? 2 : 1));
  if (reason.empty()) return;
  emit s_->paused(qs(reason));
  std::unique_lock lock(s_->mu_);
  s_->wait_while_paused(lock);
}

DebugSession::DebugSession(QObject* parent) : QObject(parent) {}

DebugSession::~DebugSession() {
  cancel();
  wait(ULONG_MAX);
  delete worker_;
}

bool DebugSession::busy() const {
  const SessionState s = state();
  return s == SessionState::Running || s == SessionState::Paused;
}

void DebugSession::set_model(std::shared_ptr<const Model> model) {
  if (!busy()) model_ = std::move(model);
}

bool DebugSession::set_engines(const std::string& a_name, const std::string& b_name) {
  auto a = make_gui_engine(a_name);
  if (!a) {
    last_error_ = "unknown engine '" + qs(a_name) + "'";
    return false;
  }
  std::unique_ptr<Engine> b;
  if (!b_name.empty() && !(b = make_gui_engine(b_name))) {
    last_error_ = "unknown engine '" + qs(b_name) + "'";
    return false;
  }
  return set_engines(std::move(a), std::move(b));
}

bool DebugSession::set_engines(std::unique_ptr<Engine> a, std::unique_ptr<Engine> b) {
  if (busy()) {
    last_error_ = "a run is in progress: cancel it first";
    return false;
  }
  std::lock_guard lock(mu_);  // export_repro snapshots engine_b_ under the lock
  engine_a_ = std::move(a);
  engine_b_ = std::move(b);
  dump_b_.reset();
  return true;
}

void DebugSession::set_dump_b(const std::filesystem::path& dump) {
  if (busy()) return;
  std::lock_guard lock(mu_);
  dump_b_ = dump;
  engine_b_.reset();
}

void DebugSession::set_breakpoint(const QString& graph_path, int node_index, bool on) {
  std::lock_guard lock(mu_);
  auto key = std::make_pair(body_key(graph_path.toStdString()), static_cast<size_t>(node_index));
  if (on) breakpoints_.insert(key);
  else breakpoints_.erase(key);
}

bool DebugSession::has_breakpoint(const QString& graph_path, int node_index) const {
  std::lock_guard lock(mu_);
  return breakpoints_.count({body_key(graph_path.toStdString()), static_cast<size_t>(node_index)}) > 0;
}

void DebugSession::set_break_on_nan(bool on) {
  std::lock_guard lock(mu_);
  break_nan_ = on;
}

void DebugSession::set_break_on_divergence(bool on) {
  std::lock_guard lock(mu_);
  break_divergence_ = on;
}

std::string DebugSession::check_stop(const StepRecord& r) {
  if (cancel_) return {};
  if (breakpoints_.count({body_key(r.graph_path), r.node_index})) return "breakpoint at '" + r.node + "'";
  if (break_nan_)
    if (std::string why = first_non_finite(r); !why.empty()) return why;
  if (break_divergence_)
    for (size_t k = 0; k < r.diffs.size(); ++k)
      if (r.diffs[k] && !r.diffs[k]->within()) {
        const TensorDiff& d = *r.diffs[k];
        return "divergence in '" + r.outputs[k].first + "': " +
               (!d.comparable ? d.problem
                : d.nonfinite_mismatches() ? nonfinite_mismatch_text(d)
                                           : std::to_string(d.out_of_tolerance) + " element(s) out of tolerance, max|A-B| " +
                                                 short_num(d.max_abs));
      }
  if (run_to_ && mode_ == Mode::RunTo && run_to_->first == body_key(r.graph_path) && run_to_->second == r.node_index) {
    run_to_.reset();
    return "reached '" + r.node + "'";
  }
  if (mode_ == Mode::Step) return "step";
  if (pause_requested_) {
    pause_requested_ = false;
    return "paused";
  }
  return {};
}

void DebugSession::wait_while_paused(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return go_ || cancel_; });
  go_ = false;
  if (!cancel_) state_ = SessionState::Running;
}

SessionState DebugSession::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

bool DebugSession::has_b() const { return engine_b_ != nullptr || dump_b_.has_value(); }
QString DebugSession::name_a() const { return engine_a_ ? qs(engine_a_->name()) : QString(); }
QString DebugSession::name_b() const {
  if (engine_b_) return qs(engine_b_->name());
  if (dump_b_) return QString::fromStdString(dump_b_->filename().string());
  return {};
}

size_t DebugSession::history_size() const {
  std::lock_guard lock(mu_);
  return history_.size();
}

std::optional<StepRecord> DebugSession::record(size_t i) const {
  std::lock_guard lock(mu_);
  if (i >= history_.size()) return std::nullopt;
  return history_[i];
}

std::optional<StepRecord> DebugSession::current() const {
  std::lock_guard lock(mu_);
  if (cursor_ < 0 || static_cast<size_t>(cursor_) >= history_.size()) return std::nullopt;
  return history_[static_cast<size_t>(cursor_)];
}

int DebugSession::cursor() const {
  std::lock_guard lock(mu_);
  return cursor_;
}

size_t DebugSession::total_nodes() const { return model_ ? model_->graph.nodes.size() : 0; }

std::optional<Value> DebugSession::value_a(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = cap_a_.values.find(name);
  if (it == cap_a_.values.end()) return std::nullopt;
  return it->second;
}

std::optional<Value> DebugSession::value_b(const std::string& name) const {
  std::lock_guard lock(mu_);
  if (!have_b_) return std::nullopt;
  auto it = cap_b_.values.find(name);
  if (it == cap_b_.values.end()) return std::nullopt;
  return it->second;
}

std::optional<DiffReport> DebugSession::report() const {
  std::lock_guard lock(mu_);
  return report_;
}

void DebugSession::start(Mode mode) {
  if (!model_ || !engine_a_) {
    last_error_ = !model_ ? "no model loaded" : "no engine chosen";
    emit finished(false, last_error_);
    return;
  }
  if (worker_) {
    worker_->wait();
    delete worker_;
    worker_ = nullptr;
  }
  {
    std::lock_guard lock(mu_);
    history_.clear();
    cursor_ = -1;
    cap_a_ = Capture{};
    cap_b_ = Capture{};
    have_b_ = false;
    report_.reset();
    cancel_ = pause_requested_ = go_ = false;
    mode_ = mode;
    state_ = SessionState::Running;
  }
  emit cursor_moved(-1);
  worker_ = QThread::create([this] { worker_main(); });
  worker_->setObjectName("onnxscope-debug");
  worker_->start();
}

void DebugSession::resume(Mode mode) {
  std::lock_guard lock(mu_);
  if (state_ != SessionState::Paused) return;
  cursor_ = static_cast<int>(history_.size()) - 1;  // leave any replay position
  mode_ = mode;
  go_ = true;
  state_ = SessionState::Running;
  cv_.notify_all();
}

void DebugSession::run() {
  SessionState s = state();
  if (s == SessionState::Paused) resume(Mode::Run);
  else if (s != SessionState::Running) start(Mode::Run);
}

void DebugSession::step() {
  std::optional<StepRecord> replay;
  int at = -1;
  SessionState s;
  {
    std::lock_guard lock(mu_);
    s = state_;
    if (cursor_ + 1 < static_cast<int>(history_.size()) && s != SessionState::Running) {
      at = ++cursor_;
      replay = history_[static_cast<size_t>(at)];
    }
  }
  if (replay) {
    emit cursor_moved(at);
    emit node_reached(qs(replay->graph_path), static_cast<int>(replay->node_index), qs(replay->node));
    return;
  }
  if (s == SessionState::Paused) resume(Mode::Step);
  else if (s == SessionState::Running) pause();  // a step while running stops at the next node
  else start(Mode::Step);  // idle, or finished at the newest record: a new run, paused after its first node
}

bool DebugSession::step_back() {
  std::optional<StepRecord> r;
  int at;
  {
    std::lock_guard lock(mu_);
    if (cursor_ <= 0 || state_ == SessionState::Running) return false;
    at = --cursor_;
    r = history_[static_cast<size_t>(at)];
  }
  emit cursor_moved(at);
  emit node_reached(qs(r->graph_path), static_cast<int>(r->node_index), qs(r->node));
  return true;
}

void DebugSession::run_to(const QString& graph_path, int node_index) {
  const std::string g = body_key(graph_path.toStdString());
  std::optional<StepRecord> replay;
  int at = -1;
  SessionState s;
  {
    std::lock_guard lock(mu_);
    s = state_;
    // Already recorded ahead of the cursor: move there without running.
    if (s != SessionState::Running)
      for (size_t i = static_cast<size_t>(cursor_ + 1); i < history_.size(); ++i)
        if (body_key(history_[i].graph_path) == g && history_[i].node_index == static_cast<size_t>(node_index)) {
          at = cursor_ = static_cast<int>(i);
          replay = history_[i];
          break;
        }
    if (!replay) run_to_ = std::make_pair(g, static_cast<size_t>(node_index));
  }
  if (replay) {
    emit cursor_moved(at);
    emit node_reached(qs(replay->graph_path), static_cast<int>(replay->node_index), qs(replay->node));
    return;
  }
  if (s == SessionState::Paused) resume(Mode::RunTo);
  else if (s == SessionState::Running) {
    std::lock_guard lock(mu_);
    mode_ = Mode::RunTo;
  } else {
    start(Mode::RunTo);
  }
}

void DebugSession::pause() {
  std::lock_guard lock(mu_);
  if (state_ == SessionState::Running) pause_requested_ = true;
}

void DebugSession::cancel() {
  std::lock_guard lock(mu_);
  if (state_ != SessionState::Running && state_ != SessionState::Paused) return;
  cancel_ = true;
  cv_.notify_all();
}

bool DebugSession::wait(unsigned long ms) { return !worker_ || worker_->wait(ms); }

bool DebugSession::prepare_side_b(const NamedValues& inputs, QString& error) {
  Capture b;
  if (dump_b_) {
    try {
      DumpFile d = read_dump(*dump_b_);
      b.source = dump_b_->filename().string();
      for (auto& e : d.inputs)
        if (e.data) b.values[e.name] = Value(std::move(*e.data));
      for (auto& e : d.tensors)
        if (e.data) {
          b.values[e.name] = Value(std::move(*e.data));
          b.kernel_of[e.name] = d.header.engine;
        }
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
      emit node_error("B", {}, -1, error);
      return false;
    }
  } else {
    b.source = std::string(engine_b_->name());
    for (const auto& init : model_->graph.initializers) b.values[init.name] = Value(init.value);
    for (const auto& [name, v] : inputs) b.values[name] = v;
    CaptureB obs;
    obs.out = &b;
    obs.stop = [this] {
      std::lock_guard lock(mu_);
      return cancel_;
    };
    int done = 0;
    const int total = static_cast<int>(total_nodes()) * 2;
    obs.tick = [&] { emit progress(++done, total); };
    RunOptions ro;
    ro.observer = &obs;
    ro.observe_subgraphs = false;
    try {
      NamedValues outs = engine_b_->prepare(model_)->run(inputs, ro);
      for (auto& [name, v] : outs) b.values[name] = std::move(v);
    } catch (const Error& e) {
      error = QString::fromStdString(e.what());
      const Location& at = e.diagnostic().where;
      if (!obs.stop()) emit node_error("B", qs(at.graph), static_cast<int>(at.node_index), error);
      return false;
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
      if (!obs.stop()) emit node_error("B", {}, -1, error);
      return false;
    }
  }
  std::lock_guard lock(mu_);
  cap_b_ = std::move(b);
  have_b_ = true;
  return true;
}

void DebugSession::worker_main() {
  auto finish = [this](bool ok, const QString& message) {
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      state_ = SessionState::Finished;
      cancelled = cancel_;
    }
    emit finished(ok && !cancelled, cancelled ? QString("cancelled") : message);
  };
  NamedValues inputs;
  try {
    inputs = make_inputs(*model_, inputs_);
  } catch (const std::exception& e) {
    finish(false, QString::fromStdString(e.what()));
    return;
  }
  {
    std::lock_guard lock(mu_);
    cap_a_.source = std::string(engine_a_->name());
    for (const auto& init : model_->graph.initializers) cap_a_.values[init.name] = Value(init.value);
    for (const auto& [name, v] : inputs) cap_a_.values[name] = v;
  }
  if (has_b()) {
    QString error;
    if (!prepare_side_b(inputs, error)) {
      finish(false, "side B: " + error);
      return;
    }
  }
  Recorder rec(this);
  RunOptions ro;
  ro.observer = &rec;
  ro.capture_original = true;
  ro.observe_subgraphs = into_subgraphs_;
  try {
    NamedValues outs = engine_a_->prepare(model_)->run(inputs, ro);
    std::lock_guard lock(mu_);
    for (auto& [name, v] : outs) cap_a_.values[name] = std::move(v);
  } catch (const std::exception& e) {
    QString msg = QString::fromStdString(e.what());
    bool cancelled;
    {
      std::lock_guard lock(mu_);
      cancelled = cancel_;
    }
    if (!cancelled) {
      if (auto* err = dynamic_cast<const Error*>(&e)) {
        const Location& at = err->diagnostic().where;
        emit node_error("A", qs(at.graph), static_cast<int>(at.node_index), msg);
      } else {
        emit node_error("A", {}, -1, msg);
      }
    }
    finish(false, msg);
    return;
  }
  if (have_b_) {
    try {
      DiffReport rep = diff_captures(*model_, cap_a_, cap_b_, tol_);
      // Blame re-runs every node alone: on a big model that takes a while, so a cancel stops it too.
      if (engine_b_ && !blame_nodes(*model_, cap_a_, *engine_b_, tol_, rep, [this] {
            std::lock_guard lock(mu_);
            return cancel_;
          })) {
        finish(false, "cancelled");
        return;
      }
      std::lock_guard lock(mu_);
      report_ = std::move(rep);
    } catch (const std::exception& e) {
      finish(false, "diff: " + QString::fromStdString(e.what()));
      return;
    }
    emit report_ready();
  }
  finish(true, QString("ran %1 node(s)").arg(history_size()));
}

ReduceResult DebugSession::export_repro(size_t node_index, const std::filesystem::path& out_dir, QString* error) {
  // A snapshot of the finished run (values are shared, not copied).
  std::shared_ptr<Engine> engine_b;
  std::shared_ptr<const Model> model;
  std::optional<DiffReport> rep;
  Capture a;
  DiffTolerance tol;
  {
    std::lock_guard lock(mu_);
    if (state_ != SessionState::Finished || !report_ || !engine_b_) {
      if (error) *error = "export needs a finished run of two engines";
      return {};
    }
    engine_b = engine_b_;
    model = model_;
    rep = report_;
    a = cap_a_;
    tol = tol_;
  }
  if (node_index >= rep->nodes.size()) {
    if (error) *error = "no node #" + QString::number(node_index);
    return {};
  }
  // reduce tries the most-blamed node alone, then windows ending at the first
  // divergence: put the chosen node in both places.
  std::erase(rep->blame_order, node_index);
  rep->blame_order.insert(rep->blame_order.begin(), node_index);
  rep->first_divergence = node_index;
  try {
    ReduceResult r = reduce_divergence(*model, a, *engine_b, tol, *rep, out_dir);
    if (!r.reproduced && error) *error = "the divergence at this node did not reproduce in any piece tried";
    return r;
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return {};
  }
}

}  // namespace onnxscope::viewer
