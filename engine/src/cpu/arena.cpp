#include "cpu/arena.h"

#include "core/memory_plan.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <vector>

namespace onnxscope::cpu {

namespace {

constexpr size_t kAlign = 64;           // cache line, and enough for any SIMD load
constexpr size_t kMaxAllocations = 4096;  // more outputs per run: the O(n^2) planner is not worth it
constexpr uint64_t kAlive = UINT64_MAX;

size_t round_up(size_t n) { return planned_size(n, kAlign); }

// Heap bytes left uninitialised (the kernel writes all of them).
class HeapBuffer : public Buffer {
 public:
  explicit HeapBuffer(size_t n) : p_(new std::byte[n]), n_(n) {}
  const std::byte* data() const override { return p_.get(); }
  std::size_t size() const override { return n_; }
  std::byte* mutable_data() override { return p_.get(); }
  bool owns_bytes() const override { return true; }

 private:
  std::unique_ptr<std::byte[]> p_;
  size_t n_;
};

}  // namespace

struct ActivationArena::State : std::enable_shared_from_this<ActivationArena::State> {
  enum class Mode { Idle, Record, Replay, Heap };
  struct Record {
    size_t size;
    uint64_t alloc_t, free_t;  // allocation counter at allocation and at free
  };
  struct Slot {
    size_t size = 0, offset = 0;
    bool heap = true;                   // outlived the recorded run, or not planned
    std::vector<uint32_t> must_be_dead;  // earlier slots that share bytes with this one
  };

  std::mutex mu;
  Mode mode = Mode::Idle;
  uint64_t run = 0, clock = 0;
  std::vector<Record> records;
  bool too_many = false;
  std::vector<Slot> plan;
  std::shared_ptr<std::byte> memory;  // the arena; buffers in it keep it alive
  size_t arena_size = 0;
  std::vector<uint8_t> alive;  // per slot, in the run being replayed
  bool deviated = false, need_record = true;
  uint64_t live_arena_buffers = 0, planned_runs = 0;

  void build_plan();
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
    if (s_->mode == ActivationArena::State::Mode::Record && s_->run == run_) s_->records[index_].free_t = s_->clock;
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
    if (s_->mode == ActivationArena::State::Mode::Replay && s_->run == run_) s_->alive[slot_] = 0;
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

void ActivationArena::State::build_plan() {
  plan.assign(records.size(), Slot{});
  std::vector<size_t> index;  // records freed within the run: they may share memory
  std::vector<PlanBlock> blocks;
  for (size_t i = 0; i < records.size(); ++i) {
    plan[i].size = records[i].size;
    if (records[i].free_t == kAlive) continue;
    index.push_back(i);
    blocks.push_back({records[i].size, records[i].alloc_t, records[i].free_t});
  }
  const MemoryPlan placed = plan_memory(blocks, kAlign);
  for (size_t k = 0; k < index.size(); ++k) {
    plan[index[k]].offset = placed.offsets[k];
    plan[index[k]].heap = false;
  }
  const size_t total = placed.total;
  // Which earlier blocks must be gone before each one is handed out.
  for (size_t j = 0; j < plan.size(); ++j) {
    if (plan[j].heap) continue;
    const size_t j0 = plan[j].offset, j1 = j0 + round_up(plan[j].size);
    for (size_t i = 0; i < j; ++i)
      if (!plan[i].heap && plan[i].offset < j1 && j0 < plan[i].offset + round_up(plan[i].size))
        plan[j].must_be_dead.push_back(static_cast<uint32_t>(i));
  }
  memory.reset();
  arena_size = 0;
  if (total > 0) {
    auto* p = static_cast<std::byte*>(std::aligned_alloc(kAlign, round_up(total)));
    if (!p) {
      plan.clear();  // no room: this model's runs stay on the heap
      return;
    }
    memory = std::shared_ptr<std::byte>(p, [](std::byte* q) { std::free(q); });
    arena_size = total;
  }
}

std::shared_ptr<Buffer> ActivationArena::State::allocate(size_t bytes) {
  std::lock_guard lock(mu);
  const uint64_t i = clock++;
  if (mode == Mode::Record) {
    if (too_many || records.size() >= kMaxAllocations) {
      too_many = true;
      return std::make_shared<HeapBuffer>(bytes);
    }
    records.push_back({bytes, i, kAlive});
    return std::make_shared<RecordedBuffer>(bytes, shared_from_this(), run, records.size() - 1);
  }
  if (mode != Mode::Replay || deviated) return std::make_shared<HeapBuffer>(bytes);
  if (i >= plan.size() || plan[i].size != bytes) {
    deviated = true;  // not the recorded run: the heap from here on, a new plan next time
    return std::make_shared<HeapBuffer>(bytes);
  }
  if (plan[i].heap) return std::make_shared<HeapBuffer>(bytes);
  for (uint32_t k : plan[i].must_be_dead)
    if (alive[k]) {
      deviated = true;  // a block sharing these bytes is still in use
      return std::make_shared<HeapBuffer>(bytes);
    }
  alive[i] = 1;
  ++live_arena_buffers;
  return std::make_shared<ArenaBuffer>(memory.get() + plan[i].offset, bytes, shared_from_this(), run, i);
}

ActivationArena::ActivationArena() : state_(std::make_shared<State>()) {}
ActivationArena::~ActivationArena() = default;

uint64_t ActivationArena::arena_bytes() const {
  std::lock_guard lock(state_->mu);
  return state_->arena_size;
}

uint64_t ActivationArena::planned_runs() const {
  std::lock_guard lock(state_->mu);
  return state_->planned_runs;
}

ArenaRun::ArenaRun(ActivationArena& arena) : state_(arena.state_) {
  if (g_current) return;  // a run inside a run on this thread: the outer one owns the arena
  std::lock_guard lock(state_->mu);
  if (state_->mode != ActivationArena::State::Mode::Idle) return;  // another thread's run
  ++state_->run;
  state_->clock = 0;
  using Mode = ActivationArena::State::Mode;
  if (state_->need_record) {
    state_->mode = Mode::Record;
    state_->records.clear();
    state_->too_many = false;
  } else if (state_->live_arena_buffers > 0 || state_->plan.empty()) {
    state_->mode = Mode::Heap;  // the caller still holds arena memory from an earlier run
  } else {
    state_->mode = Mode::Replay;
    state_->alive.assign(state_->plan.size(), 0);
    state_->deviated = false;
  }
  active_ = true;
  g_current = state_.get();
}

ArenaRun::~ArenaRun() {
  if (!active_) return;
  g_current = nullptr;
  std::lock_guard lock(state_->mu);
  using Mode = ActivationArena::State::Mode;
  const bool failed = std::uncaught_exceptions() > 0;
  switch (state_->mode) {
    case Mode::Record:
      if (!failed && !state_->too_many) {
        state_->build_plan();
        state_->need_record = false;
      }
      state_->records.clear();
      break;
    case Mode::Replay:
      if (state_->deviated || state_->live_arena_buffers > 0) state_->need_record = true;
      else if (!failed) ++state_->planned_runs;
      break;
    case Mode::Heap:
      state_->need_record = true;
      break;
    case Mode::Idle:
      break;
  }
  state_->mode = Mode::Idle;
}

std::shared_ptr<Buffer> allocate_activation(size_t bytes) {
  if (g_current) return g_current->allocate(bytes);
  return std::make_shared<HeapBuffer>(bytes);
}

}  // namespace onnxscope::cpu
