// The caller's side of an engine in a worker process (see isolation.h): spawns
// onnxscope-worker, sends it the model and inputs, turns its events back into
// NodeEvents, and turns its death into a located error.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>

#include "isolation/reap.h"
#include "isolation/wire.h"
#include "onnxscope/isolation.h"
#include "onnxscope/proto_io.h"

extern char** environ;

namespace onnxscope {
namespace {

using namespace isolation;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kMaxFrame = uint64_t{1} << 40;  // our own worker; the reader checks every length inside

// One running onnxscope-worker.
class WorkerProcess {
 public:
  WorkerProcess(const IsolationOptions& o, const std::string& engine) : engine_(engine) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) fail_start(o, "socketpair", errno);
    status_fd_ = memfd_create("onnxscope-worker-status", MFD_CLOEXEC);
    log_fd_ = memfd_create("onnxscope-worker-log", MFD_CLOEXEC);
    if (status_fd_ < 0 || log_fd_ < 0 || ftruncate(status_fd_, sizeof(StatusPage)) != 0) {
      const int err = errno;
      close(sv[0]), close(sv[1]);
      fail_start(o, "memfd", err);
    }
    void* page = mmap(nullptr, sizeof(StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, status_fd_, 0);
    if (page == MAP_FAILED) {
      const int err = errno;
      close(sv[0]), close(sv[1]);
      fail_start(o, "mmap", err);
    }
    status_ = static_cast<StatusPage*>(page);
    status_->seq.store(0);
    status_->node_index = -1;
    // The child sees the socket as fd 3 and the status page as fd 4; its
    // stdout and stderr go to the log kept for the error message.
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_adddup2(&fa, status_fd_, 4);
    posix_spawn_file_actions_adddup2(&fa, log_fd_, 1);
    posix_spawn_file_actions_adddup2(&fa, log_fd_, 2);
    const std::string exe = o.worker.string();
    char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>("--socket"), const_cast<char*>("3"),
                    const_cast<char*>("--status"), const_cast<char*>("4"), nullptr};
    const int rc = posix_spawn(&pid_, exe.c_str(), &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    sock_ = sv[0];
    if (rc != 0) {
      pid_ = -1;
      fail_start(o, "start", rc);
    }
  }
  ~WorkerProcess() {
    if (sock_ >= 0) close(sock_);  // the worker reads end of input and exits
    if (pid_ > 0) {
      // A worker stuck in a kernel does not read; give it a moment, then kill it.
      reap(std::chrono::milliseconds(500));
    }
    if (status_) munmap(status_, sizeof(StatusPage));
    if (status_fd_ >= 0) close(status_fd_);
    if (log_fd_ >= 0) close(log_fd_);
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int sock() const { return sock_; }
  bool dead() const { return dead_; }

  // Kills the worker (a stop that a kernel ignored) and waits for it.
  void kill_now() {
    if (pid_ > 0) reap(std::chrono::milliseconds(0));
    dead_ = true;
  }

  // The located error for a worker that stopped answering: how it ended,
  // where it was and the last thing it printed.
  [[noreturn]] void fail_dead(const std::string& model_file) {
    dead_ = true;
    // The socket closed: the process is exiting or gone; do not wait forever.
    if (pid_ > 0) reap(std::chrono::milliseconds(2000));
    std::string how;
    if (WIFSIGNALED(wstatus_)) {
      const int sig = WTERMSIG(wstatus_);
      how = "was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
      if (sig == SIGKILL) how += "; the system may have run out of memory";
    } else if (WIFEXITED(wstatus_)) {
      how = "exited with code " + std::to_string(WEXITSTATUS(wstatus_));
    } else {
      how = "stopped answering";
    }
    Diagnostic d;
    d.code = "worker-crashed";
    d.where = where(model_file);
    d.message = "the " + engine_ + " engine's worker process " + how +
                (d.where.node.empty() ? std::string(" before it ran a node") : " while running this node") +
                "; nothing else was affected and the next run starts a new worker";
    if (std::string tail = log_tail(); !tail.empty()) d.message += ". Its last output: " + tail;
    throw Error(std::move(d));
  }

  // Where the worker last said it was.
  Location where(const std::string& model_file) const {
    Location loc;
    loc.file = model_file;
    const uint32_t seq = status_ ? status_->seq.load(std::memory_order_acquire) : 1;
    if (seq == 0 || (seq & 1)) return loc;  // no node yet, or died mid-update
    loc.graph = std::string(status_->graph, strnlen(status_->graph, sizeof status_->graph));
    loc.node_index = status_->node_index;
    loc.node = std::string(status_->node, strnlen(status_->node, sizeof status_->node));
    loc.op_type = std::string(status_->op_type, strnlen(status_->op_type, sizeof status_->op_type));
    return loc;
  }

 private:
  [[noreturn]] void fail_start(const IsolationOptions& o, const char* what, int err) {
    Diagnostic d;
    d.code = "worker";
    d.where.file = o.worker.string();
    d.message = std::string("cannot start the engine worker (") + what + "): " + std::strerror(err);
    d.expected = "the onnxscope-worker executable, built with onnxscope";
    throw Error(std::move(d));
  }

  // Once: waits up to `grace`, then kills (isolation/reap.h).
  void reap(std::chrono::milliseconds grace) {
    if (reaped_) return;
    if (auto status = reap_within(pid_, grace)) wstatus_ = *status;
    reaped_ = true;
  }

  std::string log_tail() const {
    const off_t size = lseek(log_fd_, 0, SEEK_END);
    if (size <= 0) return {};
    const off_t from = size > 1200 ? size - 1200 : 0;
    std::string s(static_cast<size_t>(size - from), '\0');
    const ssize_t n = pread(log_fd_, s.data(), s.size(), from);
    s.resize(n > 0 ? static_cast<size_t>(n) : 0);
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    for (char& c : s)
      if (c == '\n') c = ' ';
    return s;
  }

  std::string engine_;
  pid_t pid_ = -1;
  int sock_ = -1, status_fd_ = -1, log_fd_ = -1;
  StatusPage* status_ = nullptr;
  bool reaped_ = false, dead_ = false;
  int wstatus_ = 0;
};

// What an engine and its prepared models share: the worker (replaced after a
// crash) and the lock that serialises requests to it.
struct Shared {
  std::string name;
  EngineSettings settings;
  IsolationOptions options;
  std::mutex mu;
  std::unique_ptr<WorkerProcess> worker;
  uint64_t generation = 0;  // bumped for each new worker
  uint64_t next_id = 1;

  // A live worker that has said hello; starts one when needed. Under mu.
  WorkerProcess& live(const std::string& model_file) {
    if (worker && !worker->dead()) return *worker;
    worker.reset();
    worker = std::make_unique<WorkerProcess>(options, name);
    ++generation;
    Writer w;
    w.str(name);
    w.i64(settings.threads);
    w.i64(settings.opt_level);
    w.u64(settings.disabled_passes.size());
    for (const auto& p : settings.disabled_passes) w.str(p);
    w.u64(settings.disabled_kernels.size());
    for (const auto& k : settings.disabled_kernels) w.str(k);
    w.u64(settings.limits.max_tensor_bytes);
    w.u64(settings.limits.max_live_bytes);
    w.f64(settings.limits.timeout_seconds);
    w.u64(options.plugins.size());
    for (const auto& p : options.plugins) w.str(p);
    try {
      request(w.bytes(), Msg::Hello, model_file);
    } catch (...) {
      worker.reset();  // refused (a plugin that does not load): try afresh next time
      throw;
    }
    return *worker;
  }

  // Sends a request and waits for Ok (returns) or Failed (throws its error).
  void request(const std::string& payload, Msg type, const std::string& model_file) {
    if (!send_frame(worker->sock(), type, payload)) worker->fail_dead(model_file);
    Msg reply;
    std::string body;
    if (recv_frame(worker->sock(), reply, body, -1, kMaxFrame) != Recv::Frame) worker->fail_dead(model_file);
    if (reply == Msg::Ok) return;
    if (reply == Msg::Failed) {
      Reader r(body);
      throw Error(r.diagnostic());
    }
    worker->kill_now();
    throw Error(Diagnostic{Severity::Error, "worker", {model_file}, "the engine worker answered out of turn", {}});
  }
};

class IsolatedPrepared final : public PreparedModel {
 public:
  IsolatedPrepared(std::shared_ptr<Shared> shared, std::shared_ptr<const Model> model)
      : shared_(std::move(shared)), model_(std::move(model)) {
    std::lock_guard lock(shared_->mu);
    id_ = shared_->next_id++;
    prepare_locked();
  }
  ~IsolatedPrepared() override {
    std::lock_guard lock(shared_->mu);
    if (shared_->worker && !shared_->worker->dead() && generation_ == shared_->generation) {
      Writer w;
      w.u64(id_);
      send_frame(shared_->worker->sock(), Msg::Release, w.bytes());
    }
  }

  RunStats last_run_stats() const override { return stats_; }

  NamedValues run(const NamedValues& inputs, const RunOptions& options) override {
    std::lock_guard lock(shared_->mu);
    WorkerProcess& worker = shared_->live(model_->source);
    if (generation_ != shared_->generation) prepare_locked();  // a new worker since the last run
    Writer w;
    w.u64(id_);
    w.u8(options.observer ? 1 : 0);
    w.u8(options.capture_original ? 1 : 0);
    w.u8(options.observe_subgraphs ? 1 : 0);
    w.u64(options.seed);
    w.u64(inputs.size());
    for (const auto& [name, v] : inputs) {
      w.str(name);
      w.value(v);
    }
    if (!send_frame(worker.sock(), Msg::Run, w.bytes())) worker.fail_dead(model_->source);
    return receive(worker, options);
  }

 private:
  void prepare_locked() {
    shared_->live(model_->source);
    Writer w;
    w.u64(id_);
    std::string bytes;
    bool from_file = false;
    try {
      bytes = model_to_bytes(*model_);
    } catch (const Error&) {
      from_file = true;  // over protobuf's 2 GiB: the worker reads the file itself
    }
    w.u8(from_file ? 1 : 0);
    w.str(model_->source);
    if (!from_file) w.str(bytes);
    shared_->request(w.bytes(), Msg::Prepare, model_->source);
    generation_ = shared_->generation;
  }

  NamedValues receive(WorkerProcess& worker, const RunOptions& options) {
    const auto start = Clock::now();
    const double timeout = shared_->settings.limits.timeout_seconds;
    const double grace = shared_->options.stop_grace_seconds;
    std::optional<Clock::time_point> stop_asked;
    auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
    Msg type;
    std::string body;
    for (;;) {
      const Recv r = recv_frame(worker.sock(), type, body, 100, kMaxFrame);
      if (r == Recv::Closed) worker.fail_dead(model_->source);
      if (r == Recv::Timeout) {
        if (!stop_asked && options.observer && options.observer->should_stop()) stop_asked = Clock::now();
        // A kernel that never returns: the worker only checks between nodes.
        if (stop_asked && seconds_since(*stop_asked) > grace) kill_and_fail(worker, "cancelled", "run cancelled");
        if (timeout > 0 && seconds_since(start) > timeout + grace)
          kill_and_fail(worker, "timeout",
                        "the run did not finish within the time limit of " + std::to_string(timeout) +
                            " s: this node did not return, so its worker was stopped (raise it with --timeout)");
        continue;
      }
      Reader in(body);
      try {
        switch (type) {
          case Msg::Event: {
            event(in, options);
            if (!stop_asked && options.observer->should_stop()) stop_asked = Clock::now();
            const char stop = stop_asked ? 1 : 0;
            if (!send_frame(worker.sock(), Msg::Ack, std::string_view(&stop, 1))) worker.fail_dead(model_->source);
            break;
          }
          case Msg::Result: {
            NamedValues outs;
            for (uint64_t n = in.u64(); n > 0; --n) {
              std::string name = in.str();
              outs.emplace_back(std::move(name), in.value());
            }
            stats_.peak_live_bytes = in.u64();
            return outs;
          }
          case Msg::Failed:
            throw Error(in.diagnostic());
          default:
            throw WireError("unexpected message");
        }
      } catch (const WireError& e) {
        worker.kill_now();
        throw Error(Diagnostic{Severity::Error, "worker", {model_->source},
                               std::string("the engine worker sent a malformed message: ") + e.what(), {}});
      }
    }
  }

  [[noreturn]] void kill_and_fail(WorkerProcess& worker, const char* code, const std::string& message) {
    Location where = worker.where(model_->source);
    worker.kill_now();
    throw Error(Diagnostic{Severity::Error, code, where, message, {}});
  }

  // One observed node: rebuilt as a NodeEvent for the caller's observer. The
  // main graph's own nodes are used when the indices are the original ones.
  void event(Reader& in, const RunOptions& options) {
    const std::string path = in.str();
    const uint64_t index = in.u64();
    Node synth;
    synth.name = in.str();
    synth.op_type = in.str();
    synth.domain = in.str();
    for (uint64_t n = in.u64(); n > 0; --n) synth.inputs.push_back(in.str());
    for (uint64_t n = in.u64(); n > 0; --n) synth.outputs.push_back(in.str());
    const std::string kernel = in.str();
    NodeEvent e;
    e.seconds = in.f64();
    e.iteration = in.i64();
    const uint64_t count = in.u64();
    if (count > synth.outputs.size()) throw WireError("more outputs than the node has");
    std::vector<Value> outputs(count);
    for (Value& v : outputs) v = in.value();
    e.graph_path = path;
    e.node_index = index;
    e.node = &synth;
    const auto& nodes = model_->graph.nodes;
    if (path == "main" && options.capture_original && index < nodes.size() && nodes[index].op_type == synth.op_type &&
        nodes[index].outputs == synth.outputs)
      e.node = &nodes[index];
    e.kernel = kernel;
    e.outputs = outputs;
    options.observer->on_node(e);
  }

  std::shared_ptr<Shared> shared_;
  std::shared_ptr<const Model> model_;
  uint64_t id_ = 0, generation_ = 0;
  RunStats stats_;
};

class IsolatedEngine final : public Engine {
 public:
  explicit IsolatedEngine(std::shared_ptr<Shared> s) : shared_(std::move(s)) {}
  std::string_view name() const override { return shared_->name; }
  // What runs where is decided without running a kernel: answered in this
  // process by the same engine, which keeps the inspector quick.
  std::vector<NodeSupport> supports(const Model& model) const override {
    auto local = make_engine(shared_->name, shared_->settings);
    return local ? local->supports(model) : std::vector<NodeSupport>{};
  }
  std::unique_ptr<PreparedModel> prepare(std::shared_ptr<const Model> model) override {
    return std::make_unique<IsolatedPrepared>(shared_, std::move(model));
  }

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace

std::unique_ptr<Engine> make_isolated_engine(const std::string& name, const EngineSettings& settings,
                                             IsolationOptions options) {
  if (!make_engine(name)) return nullptr;
  auto s = std::make_shared<Shared>();
  s->name = name;
  s->settings = settings;
  s->settings.extra_kernels = nullptr;  // the worker loads options.plugins itself
  s->options = std::move(options);
  return std::make_unique<IsolatedEngine>(std::move(s));
}

std::filesystem::path find_worker(const std::filesystem::path& executable) {
  if (const char* env = std::getenv("ONNXSCOPE_WORKER"); env && *env) {
    std::filesystem::path p(env);
    return access(p.c_str(), X_OK) == 0 ? p : std::filesystem::path();
  }
  if (executable.empty()) return {};
  std::filesystem::path p = executable.parent_path() / "onnxscope-worker";
  return access(p.c_str(), X_OK) == 0 ? p : std::filesystem::path();
}

}  // namespace onnxscope
