// onnxscope-worker: one engine in its own process, driven over a socket by
// the isolated engine (isolated_engine.cpp). It answers one request at a time;
// a crash here is the caller's error message, not the caller's crash.
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "isolation/wire.h"
#include "onnxscope/isolation.h"
#include "onnxscope/loader.h"
#include "onnxscope/plugin.h"

namespace onnxscope {
namespace {

using namespace isolation;

struct Worker {
  int sock = -1;
  StatusPage* status = nullptr;
  PluginSet plugins;
  std::unique_ptr<Engine> engine;
  std::map<uint64_t, std::pair<std::shared_ptr<Model>, std::unique_ptr<PreparedModel>>> prepared;
};

void copy_field(char* dst, size_t cap, std::string_view s) {
  const size_t n = s.size() < cap - 1 ? s.size() : cap - 1;
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// Records where the run is (for the caller, should this process die) and
// forwards observed nodes, waiting for the caller's acknowledgement so a
// paused debugger holds the run here.
class Forwarder : public Observer {
 public:
  Forwarder(Worker& w, bool forward, bool subgraphs) : w_(w), forward_(forward), subgraphs_(subgraphs) {}
  void on_node_start(std::string_view graph_path, size_t index, const Node& node) override {
    StatusPage* s = w_.status;
    if (!s) return;
    s->seq.fetch_add(1, std::memory_order_acq_rel);
    s->node_index = static_cast<int64_t>(index);
    copy_field(s->graph, sizeof s->graph, graph_path);
    copy_field(s->node, sizeof s->node, node.label(index));
    copy_field(s->op_type, sizeof s->op_type, node.op_type);
    s->seq.fetch_add(1, std::memory_order_acq_rel);
  }
  void on_node(const NodeEvent& e) override {
    if (!forward_ || (e.iteration >= 0 && !subgraphs_)) return;
    Writer out;
    out.str(e.graph_path);
    out.u64(e.node_index);
    out.str(e.node->name);
    out.str(e.node->op_type);
    out.str(e.node->domain);
    out.u64(e.node->inputs.size());
    for (const auto& n : e.node->inputs) out.str(n);
    out.u64(e.node->outputs.size());
    for (const auto& n : e.node->outputs) out.str(n);
    out.str(e.kernel);
    out.f64(e.seconds);
    out.i64(e.iteration);
    out.u64(e.outputs.size());
    for (const Value& v : e.outputs) out.value(v);
    if (!send_frame(w_.sock, Msg::Event, out.bytes())) std::_Exit(0);  // the caller is gone
    Msg type;
    std::string ack;
    if (recv_frame(w_.sock, type, ack, -1, 64) != Recv::Frame || type != Msg::Ack) std::_Exit(0);
    if (!ack.empty() && ack[0]) stop_ = true;
  }
  bool should_stop() override { return stop_; }

 private:
  Worker& w_;
  bool forward_, subgraphs_;
  bool stop_ = false;
};

void reply_failed(Worker& w, const Diagnostic& d) {
  Writer out;
  out.diagnostic(d);
  send_frame(w.sock, Msg::Failed, out.bytes());
}

void reply_failed(Worker& w, std::string code, std::string message) {
  Diagnostic d;
  d.code = std::move(code);
  d.message = std::move(message);
  reply_failed(w, d);
}

void hello(Worker& w, Reader& in) {
  const std::string name = in.str();
  EngineSettings s;
  s.threads = static_cast<int>(in.i64());
  s.opt_level = static_cast<int>(in.i64());
  for (uint64_t n = in.u64(); n > 0; --n) s.disabled_passes.insert(in.str());
  for (uint64_t n = in.u64(); n > 0; --n) s.disabled_kernels.insert(in.str());
  s.limits.max_tensor_bytes = in.u64();
  s.limits.max_live_bytes = in.u64();
  s.limits.timeout_seconds = in.f64();
  for (uint64_t n = in.u64(); n > 0; --n) w.plugins.load(in.str());  // throws a located Error
  if (!w.plugins.empty()) s.extra_kernels = &w.plugins.kernels();
  s.release_repacked_weights = true;  // the worker's model is its own, and one engine runs it
  w.engine = make_engine(name, s);
  if (!w.engine) return reply_failed(w, "worker", "unknown engine '" + name + "'");
  send_frame(w.sock, Msg::Ok, {});
}

void prepare(Worker& w, Reader& in) {
  if (!w.engine) return reply_failed(w, "worker", "prepare before hello");
  const uint64_t id = in.u64();
  const bool from_file = in.u8() != 0;
  const std::string source = in.str();
  LoadOptions lo;
  if (!w.plugins.empty()) lo.plugins = &w.plugins;
  LoadResult r;
  if (from_file) {
    r = load_model_file(source, lo);
  } else {
    const std::string_view bytes = in.take(in.u64());
    r = load_model_bytes(std::as_bytes(std::span(bytes.data(), bytes.size())), lo, source);
  }
  if (!r.ok()) {
    for (const Diagnostic& d : r.diagnostics.items())
      if (d.severity == Severity::Error) return reply_failed(w, d);
    return reply_failed(w, "worker", "the worker could not read the model");
  }
  r.model->source = source;
  std::shared_ptr<Model> model(std::move(r.model));
  auto p = w.engine->prepare(model);
  w.prepared[id] = {std::move(model), std::move(p)};
  send_frame(w.sock, Msg::Ok, {});
}

void run(Worker& w, Reader& in) {
  const uint64_t id = in.u64();
  auto it = w.prepared.find(id);
  if (it == w.prepared.end()) return reply_failed(w, "worker", "no prepared model " + std::to_string(id));
  const bool observe = in.u8() != 0;
  RunOptions opts;
  opts.capture_original = in.u8() != 0;
  opts.observe_subgraphs = in.u8() != 0;
  opts.seed = in.u64();
  NamedValues inputs;
  for (uint64_t n = in.u64(); n > 0; --n) {
    std::string name = in.str();
    inputs.emplace_back(std::move(name), in.value());
  }
  // Without a caller's observer the engine still gets one, for the status
  // page; capture_original off keeps the fast (fused) plan then.
  Forwarder fwd(w, observe, opts.observe_subgraphs);
  if (!observe) {
    opts.capture_original = false;
    opts.observe_subgraphs = false;
  }
  opts.observer = &fwd;
  NamedValues outs = it->second.second->run(inputs, opts);
  Writer out;
  out.u64(outs.size());
  for (const auto& [name, v] : outs) {
    out.str(name);
    out.value(v);
  }
  out.u64(it->second.second->last_run_stats().peak_live_bytes);
  send_frame(w.sock, Msg::Result, out.bytes());
}

int parse_fd(const char* s) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (end && *end == '\0' && v >= 0 && v < 65536) ? static_cast<int>(v) : -1;
}

}  // namespace

int worker_main(int argc, char** argv) {
  Worker w;
  int status_fd = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--socket") == 0) w.sock = parse_fd(argv[i + 1]);
    else if (std::strcmp(argv[i], "--status") == 0) status_fd = parse_fd(argv[i + 1]);
  }
  if (w.sock < 0) {
    std::fprintf(stderr,
                 "onnxscope-worker: runs an engine for onnxscope-gui in its own process; it is started by the GUI, "
                 "not by hand (usage: onnxscope-worker --socket FD [--status FD])\n");
    return 2;
  }
  // Die with the caller, and never on a write to a closed socket.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0;
  signal(SIGPIPE, SIG_IGN);
  if (status_fd >= 0) {
    void* p = mmap(nullptr, sizeof(StatusPage), PROT_READ | PROT_WRITE, MAP_SHARED, status_fd, 0);
    if (p != MAP_FAILED) w.status = static_cast<StatusPage*>(p);
    close(status_fd);
  }
  std::string payload;
  for (;;) {
    Msg type;
    if (recv_frame(w.sock, type, payload, -1, uint64_t{1} << 40) != Recv::Frame) return 0;  // caller gone: done
    Reader in(payload);
    try {
      switch (type) {
        case Msg::Hello: hello(w, in); break;
        case Msg::Prepare: prepare(w, in); break;
        case Msg::Release: w.prepared.erase(in.u64()); break;
        case Msg::Run: run(w, in); break;
        default: reply_failed(w, "worker", "unexpected message " + std::to_string(static_cast<uint32_t>(type)));
      }
    } catch (const Error& e) {
      reply_failed(w, e.diagnostic());
    } catch (const std::bad_alloc&) {
      reply_failed(w, "out-of-memory", "the worker ran out of memory");
    } catch (const std::exception& e) {
      reply_failed(w, "worker", e.what());
    }
  }
}

}  // namespace onnxscope
