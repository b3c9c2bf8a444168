// The calls every runtime shares (cuda/runtime.h): allocations routed to the
// run's arena, small copies carried by kernels, and the rules of a capture.
#include "cuda/runtime.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "cuda/arena.h"

namespace onnxscope::cuda {

namespace {
// Copies up to this size go as StoreBytesKernel launches (a few KiB: the
// scalars and index lists operators upload), larger ones as device copies.
constexpr uint64_t kInlineCopyBytes = 4 * StoreBytesKernel::kBytes;
}  // namespace

DeviceMemory Runtime::allocate(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  if (max_allocation_ && bytes > max_allocation_)
    throw std::runtime_error("a device tensor of " + std::to_string(bytes) + " bytes is more than the limit of " +
                             std::to_string(max_allocation_) + " bytes for one tensor (--max-tensor-bytes)");
  const uint64_t live = live_->load();
  if (max_live_ && bytes > max_live_ - std::min(max_live_, live))
    throw std::runtime_error("a device tensor of " + std::to_string(bytes) + " bytes with " + std::to_string(live) +
                             " bytes already alive is more than the limit of " + std::to_string(max_live_) +
                             " bytes alive at once (--max-live-bytes)");
  DeviceMemory m = allocate_within_limits(bytes);
  *live_ += bytes;
  void* p = m.get();
  return DeviceMemory(p, [m = std::move(m), live = live_, bytes](void*) mutable {
    *live -= bytes;
    m.reset();
  });
}

DeviceMemory Runtime::allocate_within_limits(uint64_t bytes) {
  if (arena_) return arena_->allocate(bytes, capturing_);
  if (capturing_)
    throw offload::CaptureUnsupported("an allocation of " + std::to_string(bytes) + " bytes outside a memory plan");
  return allocate_unplanned(bytes);
}

DeviceMemory Runtime::allocate_unplanned(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = device_allocate(bytes);
  std::shared_ptr<Runtime> self = shared_from_this();
  return DeviceMemory(p, [self](void* q) { self->device_release(q); });
}

void Runtime::copy_in(void* device, const void* host, uint64_t bytes) {
  if (bytes == 0) return;
  if (!capturing_ && bytes > kInlineCopyBytes) {
    device_copy_in(device, host, bytes);
    return;
  }
  auto* to = static_cast<unsigned char*>(device);
  const auto* from = static_cast<const unsigned char*>(host);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min<uint64_t>(bytes - done, StoreBytesKernel::kBytes);
    StoreBytesKernel k{};
    std::memcpy(k.bytes, from + done, n);
    k.to = to + done;
    launch(*this, k, static_cast<int64_t>(n));
    done += n;
  }
}

void Runtime::copy_out(void* host, const void* device, uint64_t bytes) {
  if (capturing_)
    throw offload::CaptureUnsupported("a copy of " + std::to_string(bytes) + " bytes to the host in the middle of the run");
  if (bytes) device_copy_out(host, device, bytes);
}

void Runtime::synchronize() {
  if (capturing_) throw offload::CaptureUnsupported("a wait for the device in the middle of the run");
  device_synchronize();
}

void Runtime::begin_capture() {
  if (capturing_) throw std::logic_error("a capture inside a capture");
  device_begin_capture();
  capturing_ = true;
}

std::unique_ptr<offload::CapturedWork> Runtime::end_capture() {
  if (!capturing_) throw std::logic_error("no capture to end");
  capturing_ = false;
  return device_end_capture();
}

void Runtime::abort_capture() {
  if (!capturing_) return;
  capturing_ = false;
  device_abort_capture();
}

}  // namespace onnxscope::cuda
