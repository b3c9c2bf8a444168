// Float32 constants in float16, converted once (cuda/half_cache.h).
#include "cuda/half_cache.h"

#include "cuda/kernels/kernel_list.h"

namespace onnxscope::cuda {

const void* HalfCache::get(const offload::DeviceTensor& t) {
  if (!t.constant || t.dtype != DataType::Float || !t.data) return nullptr;
  uint64_t count = 1;
  for (int64_t d : t.shape) count *= static_cast<uint64_t>(d);
  const auto key = std::make_pair(static_cast<const void*>(t.data), count);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second.half.get();
  if (rt_->capturing()) return nullptr;
  Entry e{t.storage, rt_->allocate_lasting(count * 2)};
  const CastKernel k{ElemType::Float, ElemType::Float16, t.data, e.half.get()};
  launch(*rt_, k, static_cast<int64_t>(count));
  bytes_ += count * 2;
  return entries_.emplace(key, std::move(e)).first->second.half.get();
}

}  // namespace onnxscope::cuda
