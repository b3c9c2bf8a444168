#include "core/allocation_replay.h"

#include <algorithm>

#include "core/memory_plan.h"

namespace onnxscope {

namespace {
constexpr uint64_t kAlive = UINT64_MAX;  // not freed within the recorded run
}

AllocationReplay::Mode AllocationReplay::begin_run(bool held) {
  ++run_;
  if (need_record_) {
    mode_ = Mode::Record;
    begin_record();
  } else if (held || !planned_) {
    mode_ = Mode::Unplanned;
  } else {
    mode_ = Mode::Replay;
    begin_replay();
  }
  return mode_;
}

void AllocationReplay::end_run(bool ok, bool held, size_t align, const std::function<bool(size_t bytes)>& make_region) {
  switch (mode_) {
    case Mode::Record:
      if (!ok) break;
      if (finish_record(align) && total_ > 0 && !make_region(total_)) clear();  // no room for the region
      need_record_ = !planned_;  // past the allocation limit: record again
      break;
    case Mode::Replay:
      if (deviated_ || held) need_record_ = true;
      break;
    case Mode::Unplanned:
      need_record_ = true;
      break;
    case Mode::Idle:
      break;
  }
  mode_ = Mode::Idle;
}

void AllocationReplay::begin_record() {
  records_.clear();
  clock_ = 0;
  too_many_ = false;
}

std::optional<size_t> AllocationReplay::record_allocation(size_t bytes) {
  const uint64_t t = clock_++;
  if (too_many_ || records_.size() >= max_) {
    too_many_ = true;
    return std::nullopt;
  }
  records_.push_back({bytes, t, kAlive});
  return records_.size() - 1;
}

void AllocationReplay::record_free(size_t index) {
  if (index < records_.size()) records_[index].free_t = clock_;
}

bool AllocationReplay::finish_record(size_t align) {
  clear();
  if (too_many_) {
    records_.clear();
    return false;
  }
  // Bytes alive at each allocation (a block freed at t is gone before allocation t).
  std::vector<int64_t> delta(clock_ + 1, 0);
  for (const Record& r : records_) {
    delta[r.alloc_t] += static_cast<int64_t>(r.size);
    if (r.free_t != kAlive) delta[r.free_t] -= static_cast<int64_t>(r.size);
  }
  int64_t live = 0;
  for (int64_t d : delta) {
    live += d;
    peak_ = std::max(peak_, static_cast<uint64_t>(std::max<int64_t>(live, 0)));
  }

  plan_.assign(records_.size(), Planned{});
  std::vector<size_t> index;  // blocks freed within the run: they may share bytes
  std::vector<PlanBlock> blocks;
  for (size_t i = 0; i < records_.size(); ++i) {
    plan_[i].size = records_[i].size;
    if (records_[i].free_t == kAlive) continue;
    index.push_back(i);
    blocks.push_back({records_[i].size, records_[i].alloc_t, records_[i].free_t});
  }
  const MemoryPlan placed = plan_memory(blocks, align);
  for (size_t k = 0; k < index.size(); ++k) {
    Planned& p = plan_[index[k]];
    p.offset = placed.offsets[k];
    p.end = p.offset + planned_size(p.size, align);
    p.in_region = true;
  }
  total_ = placed.total;
  records_.clear();
  planned_ = true;
  return true;
}

size_t AllocationReplay::planned_blocks() const {
  return static_cast<size_t>(std::count_if(plan_.begin(), plan_.end(), [](const Planned& p) { return p.in_region; }));
}

void AllocationReplay::clear() {
  planned_ = false;
  plan_.clear();
  total_ = 0;
  peak_ = 0;
  alive_.clear();
  live_spans_.clear();
  next_ = live_ = 0;
  deviated_ = false;
}

void AllocationReplay::begin_replay() {
  alive_.assign(plan_.size(), 0);
  live_spans_.clear();
  next_ = live_ = 0;
  deviated_ = false;
}

std::optional<AllocationReplay::Slot> AllocationReplay::replay_allocation(size_t bytes) {
  const size_t i = next_++;
  if (deviated_) return std::nullopt;
  if (i >= plan_.size() || plan_[i].size != bytes) {
    deviated_ = true;  // not the recorded run
    return std::nullopt;
  }
  const Planned& p = plan_[i];
  if (!p.in_region) return std::nullopt;
  if (p.end > p.offset) {
    // The first live span ending after this block starts must start at or past its end.
    auto it = std::lower_bound(live_spans_.begin(), live_spans_.end(), p.offset,
                               [](const Span& s, size_t off) { return s.end <= off; });
    if (it != live_spans_.end() && it->offset < p.end) {
      deviated_ = true;  // a block sharing these bytes is still in use
      return std::nullopt;
    }
    live_spans_.insert(it, Span{p.offset, p.end});
  }
  alive_[i] = 1;
  ++live_;
  return Slot{i, plan_[i].offset};
}

void AllocationReplay::replay_free(size_t index) {
  if (index < alive_.size() && alive_[index]) {
    alive_[index] = 0;
    --live_;
    const Planned& p = plan_[index];
    auto it = std::lower_bound(live_spans_.begin(), live_spans_.end(), p.offset,
                               [](const Span& s, size_t off) { return s.offset < off; });
    if (it != live_spans_.end() && it->offset == p.offset && it->end == p.end) live_spans_.erase(it);
  }
}

}  // namespace onnxscope
