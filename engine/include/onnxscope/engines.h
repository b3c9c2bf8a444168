// Engines by name, for the CLI, the conformance runner and the GUI.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "onnxscope/cpu.h"
#include "onnxscope/engine.h"

namespace onnxscope {

class KernelRegistry;

struct EngineSettings {
  int threads = 0;        // cpu: 0 = every core
  int opt_level = 3;      // cpu
  std::set<std::string> disabled_passes;  // cpu
  std::set<std::string> disabled_kernels;  // cpu, cuda's host: kernel implementations to skip (CpuOptions)
  const KernelRegistry* extra_kernels = nullptr;  // plugins: tried before the built-in kernels
  RunLimits limits;                               // every engine
  std::string precision = "fp32";                 // cuda: fp32 or tf32
  int device = 0;                                 // cuda: GPU index
  bool release_repacked_weights = false;          // cpu: CpuOptions::release_repacked_weights
  int64_t rewrite_budget = -1;                    // cpu, cuda's host: CpuOptions::rewrite_budget
};

// The cpu engine's options for these settings (make_engine("cpu") uses them;
// bisect-passes runs the optimizer alone with them).
CpuOptions cpu_options(const EngineSettings& s);

// "reference", "cpu", "cuda"; nullptr for an unknown name. "cuda" throws
// onnxscope::Error (no-device) where there is no GPU to run on.
std::unique_ptr<Engine> make_engine(const std::string& name, const EngineSettings& settings = {});
// Whether make_engine() knows this name; constructs nothing, so it touches no
// GPU (a process that initialises CUDA cannot hand it to the children it forks).
bool is_engine_name(const std::string& name);
// The engines this machine can run ("cuda" only with a GPU, asked once, in a
// child process, so this one does not start CUDA).
std::vector<std::string> engine_names();

}  // namespace onnxscope
