#include "cuda/arena.h"

#include <stdexcept>

#include "core/allocation_replay.h"

namespace onnxscope::cuda {

namespace {
constexpr size_t kAlign = 256;  // what cudaMalloc gives: enough for any vector load
}

struct Arena::State {
  enum class Mode { Idle, Record, Replay, Device };
  std::shared_ptr<Runtime> rt;
  Mode mode = Mode::Idle;
  uint64_t run = 0;
  AllocationReplay replay;
  DeviceMemory region;
  bool need_record = true;
  uint64_t live_in_region = 0;  // planned blocks handed out and still held, any run
};

Arena::Arena(std::shared_ptr<Runtime> rt) : state_(std::make_shared<State>()) { state_->rt = std::move(rt); }
Arena::~Arena() = default;  // blocks still held keep the state, and so the region

bool Arena::planned() const { return state_->replay.planned() && (state_->region || state_->replay.region_bytes() == 0); }
uint64_t Arena::region_bytes() const { return state_->region ? state_->replay.region_bytes() : 0; }
uint64_t Arena::peak_live_bytes() const { return state_->replay.peak_live_bytes(); }

void Arena::begin_run() {
  State& s = *state_;
  ++s.run;
  using Mode = State::Mode;
  if (s.need_record) {
    s.mode = Mode::Record;
    s.replay.begin_record();
  } else if (s.live_in_region > 0 || !planned()) {
    s.mode = Mode::Device;  // the caller still holds memory of an earlier run
  } else {
    s.mode = Mode::Replay;
    s.replay.begin_replay();
  }
}

void Arena::end_run(bool ok) {
  State& s = *state_;
  using Mode = State::Mode;
  switch (s.mode) {
    case Mode::Record:
      if (!ok) break;
      s.region.reset();
      if (s.replay.finish_record(kAlign) && s.replay.region_bytes() > 0) {
        try {
          s.region = s.rt->allocate_unplanned(s.replay.region_bytes());
        } catch (const std::runtime_error&) {
          s.replay.clear();  // no room for the region: runs keep allocating from the device
        }
      }
      s.need_record = !planned();
      break;
    case Mode::Replay:
      if (s.replay.deviated() || s.live_in_region > 0) s.need_record = true;
      break;
    case Mode::Device:
      s.need_record = true;
      break;
    case Mode::Idle:
      break;
  }
  s.mode = Mode::Idle;
}

DeviceMemory Arena::allocate(uint64_t bytes, bool capturing) {
  std::shared_ptr<State> s = state_;
  using Mode = State::Mode;
  if (s->mode == Mode::Record && !capturing) {
    DeviceMemory m = s->rt->allocate_unplanned(bytes);
    const auto index = s->replay.record_allocation(bytes);
    if (!index) return m;
    const uint64_t run = s->run;
    void* p = m.get();
    return DeviceMemory(p, [s, run, index = *index, m = std::move(m)](void*) mutable {
      if (s->mode == Mode::Record && s->run == run) s->replay.record_free(index);
      m.reset();
    });
  }
  if (s->mode == Mode::Replay) {
    if (const auto slot = s->replay.replay_allocation(bytes)) {
      ++s->live_in_region;
      const uint64_t run = s->run;
      void* p = static_cast<unsigned char*>(s->region.get()) + slot->offset;
      return DeviceMemory(p, [s, run, index = slot->index](void*) {
        --s->live_in_region;
        if (s->mode == Mode::Replay && s->run == run) s->replay.replay_free(index);
      });
    }
  }
  if (capturing)
    throw offload::CaptureUnsupported("an allocation of " + std::to_string(bytes) +
                                      " bytes that the run's memory plan has no place for (the run differs from its first)");
  return s->rt->allocate_unplanned(bytes);
}

}  // namespace onnxscope::cuda
