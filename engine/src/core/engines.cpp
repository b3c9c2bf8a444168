#include "onnxscope/engines.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "onnxscope/cpu.h"
#include "onnxscope/cuda.h"
#include "onnxscope/plugin.h"
#include "onnxscope/reference.h"

namespace onnxscope {

namespace {
std::atomic<const KernelRegistry*> g_default_plugin_kernels{nullptr};
}  // namespace

void set_default_plugin_kernels(const KernelRegistry* kernels) { g_default_plugin_kernels = kernels; }
const KernelRegistry* default_plugin_kernels() { return g_default_plugin_kernels; }

CpuOptions cpu_options(const EngineSettings& s) {
  CpuOptions o;
  o.extra_kernels = s.extra_kernels;
  o.max_tensor_bytes = s.limits.max_tensor_bytes;
  o.max_live_bytes = s.limits.max_live_bytes;
  o.timeout_seconds = s.limits.timeout_seconds;
  o.threads = s.threads;
  o.opt_level = s.opt_level;
  o.disabled_passes = s.disabled_passes;
  o.disabled_kernels = s.disabled_kernels;
  o.release_repacked_weights = s.release_repacked_weights;
  o.rewrite_budget = s.rewrite_budget;
  return o;
}

std::unique_ptr<Engine> make_engine(const std::string& name, const EngineSettings& settings) {
  EngineSettings s = settings;
  if (!s.extra_kernels) s.extra_kernels = default_plugin_kernels();
  if (name == "reference") {
    ReferenceOptions o;
    o.extra_kernels = s.extra_kernels;
    o.max_tensor_bytes = s.limits.max_tensor_bytes;
    o.max_live_bytes = s.limits.max_live_bytes;
    o.timeout_seconds = s.limits.timeout_seconds;
    o.threads = s.threads;
    return make_reference_engine(o);
  }
  if (name == "cpu") return make_cpu_engine(cpu_options(s));
  if (name == "cuda" || name == "cuda-sim") {
    CudaOptions o;
    o.device = s.device;
    o.precision = s.precision;
    o.host = cpu_options(s);
    o.host.release_repacked_weights = false;  // as before: a device engine's host keeps the plain weights
    if (const char* lanes = std::getenv("ONNXSCOPE_CUDA_SIM_LANES"); lanes && name == "cuda-sim") {
      char* end = nullptr;
      const long v = std::strtol(lanes, &end, 10);
      if (end == lanes || *end != '\0' || v < 1 || v > 64) {
        Diagnostic d;  // named, not a braced temporary: gcc 12 warns of its Location otherwise
        d.code = "bad-option";
        d.message = std::string("ONNXSCOPE_CUDA_SIM_LANES is '") + lanes + "'; it must be 1 to 64";
        throw Error(d);
      }
      o.sim_lanes = static_cast<int>(v);
    }
    return name == "cuda" ? make_cuda_engine(o) : make_cuda_sim_engine(o);
  }
  return nullptr;
}

bool is_engine_name(const std::string& name) {
  return name == "reference" || name == "cpu" || name == "cuda" || name == "cuda-sim";
}

namespace {
// Whether a GPU answers, asked in a child process: cudaGetDeviceCount starts
// CUDA in the process that calls it, and a process that has started CUDA
// cannot hand it to the children it forks (the GUI lists the engines, then
// runs the conformance suite in forked children). No answer in 20 s: none.
bool gpu_answers_in_child() {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    const char answer = cuda_status().devices.empty() ? '0' : '1';
    [[maybe_unused]] const ssize_t w = write(fds[1], &answer, 1);
    _exit(0);
  }
  close(fds[1]);
  char answer = '0';
  pollfd p{fds[0], POLLIN, 0};
  const bool got = poll(&p, 1, 20000) > 0 && read(fds[0], &answer, 1) == 1;
  close(fds[0]);
  if (!got) kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return got && answer == '1';
}
}  // namespace

std::vector<std::string> engine_names() {
  static const bool gpu = gpu_answers_in_child();
  if (gpu) return {"reference", "cpu", "cuda"};
  return {"reference", "cpu"};
}

}  // namespace onnxscope
