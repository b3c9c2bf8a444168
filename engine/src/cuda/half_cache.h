// Float32 constants (a prepared model's weights) in float16, converted once:
// in fp16 mode a GEMM or convolution reads a weight's half copy instead of
// converting the weight at every call of every run. Each entry keeps the
// float storage alive too, so its address cannot come back holding other
// bytes while the entry lives.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <memory>

#include "cuda/runtime.h"
#include "offload/device.h"

namespace onnxscope::cuda {

class HalfCache {
 public:
  explicit HalfCache(std::shared_ptr<Runtime> rt) : rt_(std::move(rt)) {}
  // The float16 copy of `t`, made at its first use; nullptr when `t` is
  // not a float32 constant, or is new inside a capture (the caller then
  // converts it as it would without a cache).
  const void* get(const offload::DeviceTensor& t);
  size_t size() const { return entries_.size(); }
  uint64_t bytes() const { return bytes_; }  // of the float16 copies

 private:
  struct Entry {
    std::shared_ptr<void> source;
    DeviceMemory half;
  };
  std::shared_ptr<Runtime> rt_;
  uint64_t bytes_ = 0;
  std::map<std::pair<const void*, uint64_t>, Entry> entries_;  // by address and element count
};

}  // namespace onnxscope::cuda
