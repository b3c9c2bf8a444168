// Faults found by kernels, read back after the run (cuda/fault_log.h).
#include "cuda/fault_log.h"

#include <tuple>

namespace onnxscope::cuda {

namespace {
constexpr uint64_t kRecordBytes = 4 * sizeof(int64_t);
}  // namespace

FaultLog::Site FaultLog::site(const std::string& node, FaultKind kind) {
  if (!record_) {
    if (rt_->capturing()) throw offload::CaptureUnsupported("the first checking kernel of a run, inside a capture");
    record_ = rt_->allocate_unplanned(kRecordBytes);
    rt_->zero(record_.get(), kRecordBytes);
  }
  auto [it, added] = ids_.try_emplace(node, static_cast<int64_t>(sites_.size()) + 1);
  if (added) sites_.emplace_back(node, kind);
  if (rt_->capturing()) capture_checks_ = true;
  else unread_ = true;
  return {static_cast<int64_t*>(record_.get()), it->second};
}

std::optional<FaultLog::Fault> FaultLog::take() {
  if (!unread_ || rt_->capturing()) return std::nullopt;
  int64_t r[4] = {};
  rt_->copy_out(r, record_.get(), kRecordBytes);  // waits for the kernels queued before
  unread_ = false;
  if (r[0] == 0) return std::nullopt;
  rt_->zero(record_.get(), kRecordBytes);
  Fault f{"", r[1], r[2], r[3]};
  if (r[0] >= 1 && static_cast<size_t>(r[0]) <= sites_.size())
    std::tie(f.node, f.kind) = sites_[static_cast<size_t>(r[0] - 1)];
  return f;
}

bool FaultLog::end_capture() {
  const bool held = capture_checks_;
  capture_checks_ = false;
  return held;
}

std::string describe_fault(const FaultLog::Fault& f) {
  if (f.kind == FaultKind::Divisor) return "integer division by zero (output element " + std::to_string(f.position) + ")";
  const bool index = f.kind == FaultKind::Index;
  const char* what = index || f.kind == FaultKind::Flat ? "index "
                     : f.kind == FaultKind::Position ? "position id "
                     : f.kind == FaultKind::Target   ? "target value "
                     : f.kind == FaultKind::Write    ? "write index "
                                                     : "sequence length ";
  const char* at = f.kind == FaultKind::Length || f.kind == FaultKind::Write ? " (batch " : " (at ";
  return what + std::to_string(f.value) + at + std::to_string(f.position) + ") is outside [" +
         std::to_string(index ? -f.bound : 0) + ", " + std::to_string(f.bound - 1) + "]";
}

}  // namespace onnxscope::cuda
