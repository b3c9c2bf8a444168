#include "cuda/arena.h"

#include <stdexcept>

#include "core/allocation_replay.h"

namespace onnxscope::cuda {

namespace {
constexpr size_t kAlign = 256;  // what cudaMalloc gives: enough for any vector load
}

struct Arena::State {
  std::shared_ptr<Runtime> rt;
  AllocationReplay replay;
  DeviceMemory region;
  uint64_t live_in_region = 0;  // planned blocks handed out and still held, any run
};

Arena::Arena(std::shared_ptr<Runtime> rt) : state_(std::make_shared<State>()) { state_->rt = std::move(rt); }
Arena::~Arena() = default;  // blocks still held keep the state, and so the region

bool Arena::planned() const { return state_->replay.planned(); }
uint64_t Arena::region_bytes() const { return state_->region ? state_->replay.region_bytes() : 0; }
uint64_t Arena::peak_live_bytes() const { return state_->replay.peak_live_bytes(); }

// Held blocks of an earlier run: that run's bytes are still in use.
void Arena::begin_run() { state_->replay.begin_run(state_->live_in_region > 0); }

void Arena::end_run(bool ok) {
  State& s = *state_;
  if (s.replay.mode() == AllocationReplay::Mode::Record && ok) s.region.reset();  // a new plan replaces it
  s.replay.end_run(ok, s.live_in_region > 0, kAlign, [&](size_t total) {
    try {
      s.region = s.rt->allocate_unplanned(total);
      return true;
    } catch (const std::runtime_error&) {
      return false;  // no room for the region: runs keep allocating from the device
    }
  });
}

DeviceMemory Arena::allocate(uint64_t bytes, bool capturing) {
  std::shared_ptr<State> s = state_;
  using Mode = AllocationReplay::Mode;
  if (s->replay.mode() == Mode::Record && !capturing) {
    DeviceMemory m = s->rt->allocate_unplanned(bytes);
    const auto index = s->replay.record_allocation(bytes);
    if (!index) return m;
    const uint64_t run = s->replay.run();
    void* p = m.get();
    return DeviceMemory(p, [s, run, index = *index, m = std::move(m)](void*) mutable {
      if (s->replay.mode() == Mode::Record && s->replay.run() == run) s->replay.record_free(index);
      m.reset();
    });
  }
  if (s->replay.mode() == Mode::Replay) {
    if (const auto slot = s->replay.replay_allocation(bytes)) {
      ++s->live_in_region;
      const uint64_t run = s->replay.run();
      void* p = static_cast<unsigned char*>(s->region.get()) + slot->offset;
      return DeviceMemory(p, [s, run, index = slot->index](void*) {
        --s->live_in_region;
        if (s->replay.mode() == Mode::Replay && s->replay.run() == run) s->replay.replay_free(index);
      });
    }
  }
  if (capturing)
    throw offload::CaptureUnsupported("an allocation of " + std::to_string(bytes) +
                                      " bytes that the run's memory plan has no place for (the run differs from its first)");
  return s->rt->allocate_unplanned(bytes);
}

}  // namespace onnxscope::cuda
