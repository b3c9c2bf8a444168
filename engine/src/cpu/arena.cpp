#include "cpu/arena.h"

#include "core/align.h"
#include "core/allocation_replay.h"
#include "core/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <new>
#include <vector>

namespace onnxscope::cpu {

namespace {

constexpr size_t kAlign = 64;           // cache line, and enough for any SIMD load
constexpr size_t kMaxAllocations = 4096;  // more outputs per run: the O(n^2) planner is not worth it

size_t round_up(size_t n) { return planned_size(n, kAlign); }

// Heap bytes left uninitialised (the kernel writes all of them), on a cache
// line's boundary as the arena's blocks are: at malloc's 16-byte alignment a
// graph output's every 64-byte store crossed two lines (a float16 -> float32
// Cast of [1,128,768] at one thread 11.6-12.9 us, aligned 9.1-9.3). The block
// is malloc's, 63 bytes longer, the start rounded up: with an aligned
// operator new (glibc's memalign) instead, ViT (transformers) at batch 8
// peaked at 760 MiB of RSS instead of 425.
class HeapBuffer : public Buffer {
 public:
  explicit HeapBuffer(size_t n) : n_(n) {
    if (n > SIZE_MAX - (kAlign - 1)) throw std::bad_alloc();
    block_.reset(static_cast<std::byte*>(std::malloc(n + (kAlign - 1))));
    if (!block_) throw std::bad_alloc();
    p_ = align_up(block_.get(), kAlign);
  }
  const std::byte* data() const override { return p_; }
  std::size_t size() const override { return n_; }
  std::byte* mutable_data() override { return p_; }
  bool owns_bytes() const override { return true; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, Free> block_;
  std::byte* p_ = nullptr;
  size_t n_;
};

}  // namespace

struct ActivationArena::State : std::enable_shared_from_this<ActivationArena::State> {
  using Mode = AllocationReplay::Mode;

  std::mutex mu;
  AllocationReplay replay{kMaxAllocations};
  std::shared_ptr<std::byte> memory;  // the arena; buffers in it keep it alive
  uint64_t live_arena_buffers = 0, planned_runs = 0;

  std::shared_ptr<Buffer> allocate(size_t bytes);
};

namespace {

thread_local ActivationArena::State* g_current = nullptr;

// A heap block whose free is recorded (first run).
class RecordedBuffer final : public HeapBuffer {
 public:
  RecordedBuffer(size_t n, std::shared_ptr<ActivationArena::State> s, uint64_t run, size_t index)
      : HeapBuffer(n), s_(std::move(s)), run_(run), index_(index) {}
  ~RecordedBuffer() override {
    std::lock_guard lock(s_->mu);
    if (s_->replay.mode() == AllocationReplay::Mode::Record && s_->replay.run() == run_) s_->replay.record_free(index_);
  }

 private:
  std::shared_ptr<ActivationArena::State> s_;
  uint64_t run_;
  size_t index_;
};

// A planned block inside the arena (later runs).
class ArenaBuffer final : public Buffer {
 public:
  ArenaBuffer(std::byte* p, size_t n, std::shared_ptr<ActivationArena::State> s, uint64_t run, size_t slot)
      : p_(p), n_(n), memory_(s->memory), s_(std::move(s)), run_(run), slot_(slot) {}
  ~ArenaBuffer() override {
    std::lock_guard lock(s_->mu);
    --s_->live_arena_buffers;
    if (s_->replay.mode() == AllocationReplay::Mode::Replay && s_->replay.run() == run_) s_->replay.replay_free(slot_);
  }
  const std::byte* data() const override { return p_; }
  std::size_t size() const override { return n_; }
  std::byte* mutable_data() override { return p_; }
  bool owns_bytes() const override { return true; }  // its planned bytes are its own while it lives

 private:
  std::byte* p_;
  size_t n_;
  std::shared_ptr<std::byte> memory_;
  std::shared_ptr<ActivationArena::State> s_;
  uint64_t run_;
  size_t slot_;
};

}  // namespace

std::shared_ptr<Buffer> ActivationArena::State::allocate(size_t bytes) {
  std::lock_guard lock(mu);
  if (replay.mode() == Mode::Record) {
    const auto index = replay.record_allocation(bytes);
    if (!index) return std::make_shared<HeapBuffer>(bytes);
    return std::make_shared<RecordedBuffer>(bytes, shared_from_this(), replay.run(), *index);
  }
  if (replay.mode() != Mode::Replay) return std::make_shared<HeapBuffer>(bytes);
  const auto slot = replay.replay_allocation(bytes);
  if (!slot) return std::make_shared<HeapBuffer>(bytes);  // unplanned, or the run deviated
  ++live_arena_buffers;
  return std::make_shared<ArenaBuffer>(memory.get() + slot->offset, bytes, shared_from_this(), replay.run(), slot->index);
}

ActivationArena::ActivationArena() : state_(std::make_shared<State>()) {}
ActivationArena::~ActivationArena() = default;

uint64_t ActivationArena::arena_bytes() const {
  std::lock_guard lock(state_->mu);
  return state_->memory ? state_->replay.region_bytes() : 0;
}

uint64_t ActivationArena::planned_runs() const {
  std::lock_guard lock(state_->mu);
  return state_->planned_runs;
}

ArenaRun::ArenaRun(ActivationArena& arena) : state_(arena.state_) {
  if (g_current) return;  // a run inside a run on this thread: the outer one owns the arena
  std::lock_guard lock(state_->mu);
  if (state_->replay.mode() != AllocationReplay::Mode::Idle) return;  // another thread's run
  // Held buffers of an earlier run: that run's bytes are still in use.
  state_->replay.begin_run(state_->live_arena_buffers > 0);
  active_ = true;
  g_current = state_.get();
}

ArenaRun::~ArenaRun() {
  if (!active_) return;
  g_current = nullptr;
  std::lock_guard lock(state_->mu);
  ActivationArena::State& s = *state_;
  const bool ok = std::uncaught_exceptions() == 0;
  const bool held = s.live_arena_buffers > 0;
  if (s.replay.mode() == AllocationReplay::Mode::Replay && ok && !held && !s.replay.deviated()) ++s.planned_runs;
  if (s.replay.mode() == AllocationReplay::Mode::Record && ok) s.memory.reset();  // a new plan replaces it
  s.replay.end_run(ok, held, kAlign, [&](size_t total) {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, round_up(total)));
    if (p) s.memory = std::shared_ptr<std::byte>(p, [](std::byte* q) { std::free(q); });
    return p != nullptr;  // no room: this model's runs stay on the heap
  });
}

std::shared_ptr<Buffer> allocate_activation(size_t bytes) {
  if (g_current) return g_current->allocate(bytes);
  return std::make_shared<HeapBuffer>(bytes);
}

}  // namespace onnxscope::cpu
