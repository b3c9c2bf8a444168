// The optimized CPU engine: graph rewrites, oneDNN / Eigen / threaded kernels,
// per-node fallback to the reference kernels. Runs side by side with the
// reference and reports every ORIGINAL node's outputs to observers.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "onnxscope/engine.h"
#include "onnxscope/kernel.h"

namespace onnxscope {

struct CpuOptions {
  int opt_level = 3;                    // 0: no rewrites ... 3: every pass
  std::set<std::string> disabled_passes;
  bool device_fusions = false;          // also the device-only passes (set by offload engines)
  int threads = 0;                      // 0: every core
  uint64_t max_tensor_bytes = 0;        // 0: half the machine's memory
  uint64_t max_live_bytes = 0;          // 0: three quarters of the machine's memory
  double timeout_seconds = 0;           // wall time of one run; 0: none
  const KernelRegistry* extra_kernels = nullptr;  // plugins: tried first
  // Kernel implementations (KernelDef::impl, e.g. "cpu-avx512") left out of
  // the dispatch, so that the ones behind them run: to check or time those
  // (cpu_kernels_test runs every oneDNN kernel this way). Never the reference.
  std::set<std::string> disabled_kernels;
  // Weights reordered into a kernel's layout (oneDNN's blocked convolution
  // and matmul weights) give the model's plain copy back, so they are
  // resident once; read again, they are restored from the reordered copy.
  // Only where no one else reads the model while the engine runs (the CLI's
  // run and bench, an isolated worker): another reader's pointer would dangle.
  bool release_repacked_weights = false;
  // Only the first `rewrite_budget` graph rewrites are made (each pass asks
  // before each one; onnxscope bisect-passes); < 0: every one.
  int64_t rewrite_budget = -1;
};

// One graph rewrite the optimizer made: the pass, and the node it was
// anchored at (the node it fused, folded, replaced or removed).
struct RewriteSite {
  std::string pass, node;
};

struct PassInfo {
  std::string name;
  int level;         // runs when opt_level >= level
  bool fuses;        // removes or merges original nodes (off in capture mode)
  std::string what;  // one line for --list-passes
  // Runs only where an engine offloads to a device with kernels for what it
  // makes (CpuOptions::device_fusions); the CPU engine keeps its own kernels.
  bool device_only = false;
};

// Every graph pass, in the order they run.
std::vector<PassInfo> cpu_passes();

// Kernels of the CPU engine alone (the reference kernels are its fallback).
const KernelRegistry& cpu_kernels();

std::unique_ptr<Engine> make_cpu_engine(CpuOptions options = {});

// The graph the CPU engine runs for `model` under `options` (its own
// operators in domain onnxscope.cpu), and the rewrites that made it, in order.
struct OptimizedModel {
  std::shared_ptr<Model> model;
  std::vector<RewriteSite> rewrites;
};
OptimizedModel optimize_for_cpu(const Model& model, const CpuOptions& options);

}  // namespace onnxscope
