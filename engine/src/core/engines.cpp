#include "onnxscope/engines.h"

#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"

namespace onnxscope {

std::unique_ptr<Engine> make_engine(const std::string& name, const EngineSettings& s) {
  if (name == "reference") {
    ReferenceOptions o;
    o.extra_kernels = s.extra_kernels;
    return make_reference_engine(o);
  }
  if (name == "cpu") {
    CpuOptions o;
    o.extra_kernels = s.extra_kernels;
    o.threads = s.threads;
    o.opt_level = s.opt_level;
    o.disabled_passes = s.disabled_passes;
    return make_cpu_engine(o);
  }
  return nullptr;
}

std::vector<std::string> engine_names() { return {"reference", "cpu"}; }

}  // namespace onnxscope
