// The CPU engine's activation memory planner. A fresh heap block for every
// node output costs page faults on each run (large blocks come from mmap and
// go back on free): a quarter of ResNet-50's run time. So, like ONNX
// Runtime's memory patterns, the first run of a prepared model records every
// output allocation, its size and when it was freed; from that the planner
// places the outputs in one arena by liveness (greedy, largest first, blocks
// whose lifetimes do not overlap share bytes). Later runs take the i-th
// allocation from its planned offset while the sizes match.
//
// Safety does not rest on the run repeating itself: before handing out a
// planned block, the arena checks that every earlier block sharing its bytes
// has been freed in this run, and allocations that outlived the recorded run
// (graph outputs) always come from the heap. Any difference (a size, a
// lifetime, a buffer the caller still holds) sends the rest of the run to the
// heap and records a new plan on the next run. (The record, plan and replay
// bookkeeping is core/allocation_replay.h, shared with the CUDA engine.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "onnxscope/buffer.h"

namespace onnxscope::cpu {

class ActivationArena {
 public:
  ActivationArena();
  ~ActivationArena();
  ActivationArena(const ActivationArena&) = delete;
  ActivationArena& operator=(const ActivationArena&) = delete;

  // Bytes of the planned arena (0 before a plan exists).
  uint64_t arena_bytes() const;
  // Runs of the last plan that were served from it to the end.
  uint64_t planned_runs() const;

  struct State;

 private:
  friend class ArenaRun;
  std::shared_ptr<State> state_;
};

// For the duration of one run on this thread: node outputs allocated with
// allocate_activation() come from `arena` (recording or replaying).
class ArenaRun {
 public:
  explicit ArenaRun(ActivationArena& arena);
  ~ArenaRun();
  ArenaRun(const ArenaRun&) = delete;
  ArenaRun& operator=(const ArenaRun&) = delete;

 private:
  std::shared_ptr<ActivationArena::State> state_;
  bool active_ = false;
};

// Uninitialised bytes for a node output: from the run's arena when one is
// active on this thread, else from the heap.
std::shared_ptr<Buffer> allocate_activation(size_t bytes);

}  // namespace onnxscope::cpu
