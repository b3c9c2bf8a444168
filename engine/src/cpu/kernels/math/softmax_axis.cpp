// Softmax and LogSoftmax (opset 13 on) over an axis that is not the last
// (a segmentation head's channels, [N, classes, H*W]): the input viewed as
// [outer, D, inner], each of the D rows of `inner` elements combined into a
// running maximum and then a sum of exponentials, vectorised over inner
// (blocks of 16 or 8 lanes in AVX-512 / AVX2 registers), (outer, inner
// chunk) pairs split across the thread pool. oneDNN's
// primitive takes the last axis; on another axis with a plain layout it fell
// back to a reference loop about 100x slower than onnxruntime.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/math/vector_math_avx512.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

// 512 (AVX-512), 256 (AVX2 and FMA), or 0: a CPU without AVX2 leaves these
// to the reference.
int isa() {
  static const int v = ONNXSCOPE_CPU_AVX512("avx512f")                                       ? 512
                       : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? 256
                                                                                         : 0;
  return v;
}

bool accepts(const KernelContext& ctx) {
  if (ctx.opset_version() < 13 || ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor())
    return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const int64_t rank = x.rank(), axis = ctx.attr_int("axis", -1);
  if (x.dtype() != DataType::Float || rank == 0 || axis < -rank || axis >= rank || x.element_count() == 0) return false;
  return isa() != 0 && (axis < 0 ? axis + rank : axis) != rank - 1;  // the last axis is oneDNN's
}

// The steps over one block of up to 16 (AVX-512) or 8 (AVX2) lanes, `dim`
// rows `stride` apart, with the lane maxima and sums in registers: the
// maximum (NaN when any is NaN), the sum of e^(x - m) row by row (an
// infinite maximum makes inf - inf, NaN, as the reference's formula gives
// it), then each value scaled by the sum's reciprocal (within an ulp of the
// quotient) or, for LogSoftmax, x - m - log(sum). The exponential is
// vector_math's: the compiler's loop of exp_poly, with its selects, was 60%
// of the kernel's time on [1,1000,49] (0.69x onnxruntime at one thread).
// Lanes past `len` are not read or written.
template <bool Log>
__attribute__((target("avx512f"))) void lane_block_avx512(const float* base, float* out, int64_t dim, int64_t stride,
                                                         int64_t len) {
  namespace v = avx512;
  const __mmask16 k = v::tail_mask(len);
  __m512 m = _mm512_maskz_loadu_ps(k, base);
  for (int64_t d = 1; d < dim; ++d) {
    const __m512 x = _mm512_maskz_loadu_ps(k, base + d * stride);
    m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(x, m, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
  }
  __m512 sum = _mm512_setzero_ps();
  for (int64_t d = 0; d < dim; ++d) {
    const __m512 e = v::exp<true>(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, base + d * stride), m));
    if constexpr (!Log) _mm512_mask_storeu_ps(out + d * stride, k, e);
    sum = _mm512_add_ps(sum, e);
  }
  alignas(64) float t[16];
  _mm512_store_ps(t, sum);
  for (float& l : t) l = Log ? std::log(l) : 1.0f / l;
  const __m512 f = _mm512_load_ps(t);
  for (int64_t d = 0; d < dim; ++d) {
    if constexpr (Log) {
      const __m512 x = _mm512_maskz_loadu_ps(k, base + d * stride);
      _mm512_mask_storeu_ps(out + d * stride, k, _mm512_sub_ps(_mm512_sub_ps(x, m), f));
    } else {
      _mm512_mask_storeu_ps(out + d * stride, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, out + d * stride), f));
    }
  }
}

template <bool Log>
__attribute__((target("avx2,fma"))) void lane_block_avx2(const float* base, float* out, int64_t dim, int64_t stride,
                                                        int64_t len) {
  const __m256i k = avx2::tail_mask(len);
  __m256 m = _mm256_maskload_ps(base, k);
  for (int64_t d = 1; d < dim; ++d) {
    const __m256 x = _mm256_maskload_ps(base + d * stride, k);
    m = _mm256_blendv_ps(m, x, _mm256_or_ps(_mm256_cmp_ps(x, m, _CMP_GT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
  }
  __m256 sum = _mm256_setzero_ps();
  for (int64_t d = 0; d < dim; ++d) {
    const __m256 e = avx2::exp<true>(_mm256_sub_ps(_mm256_maskload_ps(base + d * stride, k), m));
    if constexpr (!Log) _mm256_maskstore_ps(out + d * stride, k, e);
    sum = _mm256_add_ps(sum, e);
  }
  alignas(32) float t[8];
  _mm256_store_ps(t, sum);
  for (float& l : t) l = Log ? std::log(l) : 1.0f / l;
  const __m256 f = _mm256_load_ps(t);
  for (int64_t d = 0; d < dim; ++d) {
    if constexpr (Log) {
      const __m256 x = _mm256_maskload_ps(base + d * stride, k);
      _mm256_maskstore_ps(out + d * stride, k, _mm256_sub_ps(_mm256_sub_ps(x, m), f));
    } else {
      _mm256_maskstore_ps(out + d * stride, k, _mm256_mul_ps(_mm256_maskload_ps(out + d * stride, k), f));
    }
  }
}

template <bool Log>
void SoftmaxAxis(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank(), a = ctx.attr_int("axis", -1);
  const size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (size_t d = axis + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  const int64_t dim = x.shape()[axis];
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* y = yt.mutable_data<float>();
  // Chunks of at most 512 lanes, and narrower (to a multiple of 16, at
  // least 64) where the outer rows alone leave threads idle. Not below 64:
  // threads writing neighbouring lanes of one row share its cache lines, and
  // [1, 1000, 49] cut in 32 + 17 lanes took 0.041 ms on two threads against
  // 0.024 on one.
  const int64_t chunk = std::min<int64_t>(share_lanes(outer, inner, 64).lanes, 512);
  const int64_t chunks = (inner + chunk - 1) / chunk;
  const bool avx512 = isa() == 512;
  parallel_for(outer * chunks, std::max<int64_t>(1, 16384 / (dim * chunk)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, i0 = (t % chunks) * chunk, len = std::min(chunk, inner - i0);
      const float* base = in + o * dim * inner + i0;
      float* out = y + o * dim * inner + i0;
      if (avx512)
        for (int64_t l = 0; l < len; l += 16) lane_block_avx512<Log>(base + l, out + l, dim, inner, std::min<int64_t>(16, len - l));
      else
        for (int64_t l = 0; l < len; l += 8) lane_block_avx2<Log>(base + l, out + l, dim, inner, std::min<int64_t>(8, len - l));
    }
  });
}

}  // namespace

void register_softmax_axis_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Softmax", 13, INT_MAX, "cpu-simd", SoftmaxAxis<false>, accepts});
  r.add(KernelDef{"", "LogSoftmax", 13, INT_MAX, "cpu-simd", SoftmaxAxis<true>, accepts});
}

}  // namespace onnxscope::cpu
