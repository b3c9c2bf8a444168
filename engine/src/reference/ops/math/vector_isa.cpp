#include "reference/ops/math/vector_isa.h"

#include <algorithm>
#include <atomic>

namespace onnxscope::ref::math {
namespace {

VectorIsa detected() {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")) return VectorIsa::Avx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::Avx2;
#endif
  return VectorIsa::Plain;
}

std::atomic<int> g_limit{static_cast<int>(VectorIsa::Avx512)};

}  // namespace

VectorIsa vector_isa() {
  static const VectorIsa cpu = detected();
  return static_cast<VectorIsa>(std::min(static_cast<int>(cpu), g_limit.load(std::memory_order_relaxed)));
}

VectorIsa limit_vector_isa(VectorIsa most) {
  return static_cast<VectorIsa>(g_limit.exchange(static_cast<int>(most), std::memory_order_relaxed));
}

}  // namespace onnxscope::ref::math
