// Engines by name, for the CLI, the conformance runner and the GUI.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "onnxscope/engine.h"

namespace onnxscope {

class KernelRegistry;

struct EngineSettings {
  int threads = 0;        // cpu: 0 = every core
  int opt_level = 3;      // cpu
  std::set<std::string> disabled_passes;  // cpu
  const KernelRegistry* extra_kernels = nullptr;  // plugins: tried before the built-in kernels
  RunLimits limits;                               // every engine
};

// "reference", "cpu"; nullptr for an unknown name.
std::unique_ptr<Engine> make_engine(const std::string& name, const EngineSettings& settings = {});
std::vector<std::string> engine_names();

}  // namespace onnxscope
