// The reference interpreter: spec-literal kernels for every operator, the
// ground truth the optimized engines are compared with.
#pragma once

#include <memory>

#include "onnxscope/engine.h"
#include "onnxscope/kernel.h"

namespace onnxscope {

// Every reference kernel (the one op table: engine/src/reference/op_table.cpp).
const KernelRegistry& reference_kernels();

struct ReferenceOptions {
  uint64_t max_tensor_bytes = 0;  // 0: half the machine's memory
  uint64_t max_live_bytes = 0;    // 0: three quarters of the machine's memory
  double timeout_seconds = 0;     // wall time of one run; 0: none
  // Kernels tried before the built-in ones (plugins, tests).
  const KernelRegistry* extra_kernels = nullptr;
  // Threads of the products and convolutions (the process-wide pool the CPU
  // engine shares); 0 leaves the pool as it is (every core unless set). The
  // results do not depend on it: each is summed by one thread in one order.
  int threads = 0;
};

std::unique_ptr<Engine> make_reference_engine(ReferenceOptions options = {});

}  // namespace onnxscope
