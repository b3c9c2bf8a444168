// The bookkeeping behind an arena planned from a recorded run, shared by the
// CPU engine's activation arena (cpu/arena.h) and the CUDA engine's device
// arena (cuda/arena.h); it holds no memory itself, only sizes and offsets.
//
// Record one run: each allocation's size, and when it was freed on a clock
// that counts allocations. Plan: the blocks freed within the run are placed
// by liveness (memory_plan.h); blocks that outlived the run are left out
// (they go to the allocator on later runs too). Replay a later run: the i-th
// allocation gets its planned offset if its size is the recorded one and
// every earlier block that shares its bytes has been freed in this run. The
// first difference marks the run deviated: the rest of it is not planned
// (the caller allocates elsewhere) and the caller records afresh next time.
// So safety never rests on runs repeating themselves.
//
// begin_run / end_run choose each run's way (record, replay, or neither)
// from how the last one went; the callers own the memory and the locking.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace onnxscope {

class AllocationReplay {
 public:
  // Recording stops planning past this many allocations (the planner is O(n^2)).
  explicit AllocationReplay(size_t max_allocations = 4096) : max_(max_allocations) {}

  // --- one run after another
  enum class Mode { Idle, Record, Replay, Unplanned };
  Mode mode() const { return mode_; }
  uint64_t run() const { return run_; }  // counts runs begun
  // Record the first run and any run after one that differed; replay when a
  // plan exists and `held` is false (no planned block of an earlier run is
  // still in use); else the run is not planned.
  Mode begin_run(bool held);
  // A recorded run that succeeded is planned with `align`, and asked its
  // region from `make_region(bytes)` (when it needs one); false from
  // make_region drops the plan. `held`: as for begin_run, at the run's end.
  void end_run(bool ok, bool held, size_t align, const std::function<bool(size_t bytes)>& make_region);

  // --- recording a run
  void begin_record();
  // The allocation's number for record_free, or nullopt past the limit
  // (the run is then not planned).
  std::optional<size_t> record_allocation(size_t bytes);
  void record_free(size_t index);
  // Places the recorded blocks with `align` (a power of two). False when the
  // run went past the limit: nothing is planned.
  bool finish_record(size_t align);

  // --- the plan
  bool planned() const { return planned_; }
  size_t region_bytes() const { return total_; }  // the region the offsets lie in
  // The most bytes alive at once in the recorded run (every block, planned or not).
  uint64_t peak_live_bytes() const { return peak_; }
  size_t planned_blocks() const;
  void clear();

  // --- replaying a run over the plan
  void begin_replay();
  struct Slot {
    size_t index;   // for replay_free
    size_t offset;  // into the region
  };
  // Where the next allocation goes, or nullopt when it is not planned (it
  // outlived the recorded run) or the run has deviated.
  std::optional<Slot> replay_allocation(size_t bytes);
  void replay_free(size_t index);
  bool deviated() const { return deviated_; }
  size_t live() const { return live_; }  // planned blocks handed out and not freed

 private:
  struct Record {
    size_t size;
    uint64_t alloc_t, free_t;
  };
  struct Planned {
    size_t size = 0, offset = 0, end = 0;  // [offset, end): the bytes it takes in the region
    bool in_region = false;
  };
  struct Span {
    size_t offset, end;
  };
  size_t max_;
  Mode mode_ = Mode::Idle;
  uint64_t run_ = 0;
  bool need_record_ = true;
  // recording
  std::vector<Record> records_;
  uint64_t clock_ = 0;
  bool too_many_ = false;
  // plan
  bool planned_ = false;
  std::vector<Planned> plan_;
  size_t total_ = 0;
  uint64_t peak_ = 0;
  // replay
  std::vector<uint8_t> alive_;
  // The region's bytes held by planned blocks handed out in this run, sorted
  // and disjoint: a block is handed out only where none lies (an earlier
  // block sharing its bytes outlived its recorded lifetime otherwise).
  std::vector<Span> live_spans_;
  size_t next_ = 0, live_ = 0;
  bool deviated_ = false;
};

}  // namespace onnxscope
