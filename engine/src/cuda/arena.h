// The CUDA engine's device memory for repeated runs of one kind (one plan,
// one set of input shapes: offload::RunMemory), placed by liveness like the
// CPU engine's activation arena (core/allocation_replay.h holds the
// bookkeeping both share). The first run takes every allocation from the
// device and records its size and when it was released; its end places the
// blocks in one region (blocks not alive at the same time share bytes).
// Later runs take the i-th allocation from its planned place while that is
// safe, so a steady run makes no allocation at all, and its addresses stay
// the same from run to run: what lets a CUDA graph of the run be replayed.
#pragma once

#include <memory>

#include "cuda/runtime.h"
#include "offload/steady_state.h"

namespace onnxscope::cuda {

class Arena final : public offload::RunMemory {
 public:
  explicit Arena(std::shared_ptr<Runtime> rt);
  ~Arena() override;
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  bool planned() const override;
  uint64_t region_bytes() const override;
  uint64_t peak_live_bytes() const override;

  // Around one run (Runtime::set_arena makes it the runtime's meanwhile).
  void begin_run();
  void end_run(bool ok);
  // What Runtime::allocate asks while this arena is the run's. Memory the
  // plan has no place for comes from the device, except inside a capture:
  // then offload::CaptureUnsupported.
  DeviceMemory allocate(uint64_t bytes, bool capturing);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace onnxscope::cuda
