// Softmax and LogSoftmax (opset 13 on) over an axis that is not the last
// (a segmentation head's channels, [N, classes, H*W]): the input viewed as
// [outer, D, inner], each of the D rows of `inner` elements combined into a
// running maximum and then a sum of exponentials, vectorised over inner
// (vector_exp.h's exponential in loops cloned for AVX-512 / AVX2), (outer,
// inner chunk) pairs split across the thread pool. oneDNN's
// primitive takes the last axis; on another axis with a plain layout it fell
// back to a reference loop about 100x slower than onnxruntime.
#include <cmath>
#include <vector>

#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_exp.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

bool accepts(const KernelContext& ctx) {
  if (ctx.opset_version() < 13 || ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor())
    return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const int64_t rank = x.rank(), axis = ctx.attr_int("axis", -1);
  if (x.dtype() != DataType::Float || rank == 0 || axis < -rank || axis >= rank || x.element_count() == 0) return false;
  return (axis < 0 ? axis + rank : axis) != rank - 1;  // the last axis is oneDNN's
}

// The steps over one (outer, inner chunk): `dim` rows of `len` values, `stride`
// apart. Plain loops over the chunk's lanes, cloned for AVX-512 / AVX2 (the
// exponential is vector_exp.h's, inlined into each clone).
#define ONNXSCOPE_CLONES ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")

// m = the maximum of each lane over the rows, NaN when any is NaN.
ONNXSCOPE_CLONES void lane_max(const float* base, int64_t dim, int64_t stride, int64_t len, float* m) {
  for (int64_t i = 0; i < len; ++i) m[i] = base[i];
  for (int64_t d = 1; d < dim; ++d) {
    const float* row = base + d * stride;
    for (int64_t i = 0; i < len; ++i) m[i] = (row[i] > m[i] || row[i] != row[i]) ? row[i] : m[i];
  }
}

// out = e^(x - m) row by row, s = their sum per lane. An infinite maximum
// makes inf - inf, NaN: as the reference's formula gives it.
ONNXSCOPE_CLONES void lane_exp_sum(const float* base, float* out, int64_t dim, int64_t stride, int64_t len,
                                   const float* m, float* s) {
  for (int64_t i = 0; i < len; ++i) s[i] = 0.0f;
  for (int64_t d = 0; d < dim; ++d) {
    const float* row = base + d * stride;
    float* o = out + d * stride;
    for (int64_t i = 0; i < len; ++i) {
      const float e = exp_poly(row[i] - m[i]);
      o[i] = e;
      s[i] += e;
    }
  }
}

// out *= r, r = 1 / the lane's sum: a multiply where a division per
// element was a fifth of the kernel's time (as softmax_rows' divide; within
// an ulp of the quotient).
ONNXSCOPE_CLONES void lane_scale(float* out, int64_t dim, int64_t stride, int64_t len, const float* r) {
  for (int64_t d = 0; d < dim; ++d) {
    float* o = out + d * stride;
    for (int64_t i = 0; i < len; ++i) o[i] = o[i] * r[i];
  }
}

ONNXSCOPE_CLONES void lane_log(const float* base, float* out, int64_t dim, int64_t stride, int64_t len, const float* m,
                               const float* ls) {
  for (int64_t d = 0; d < dim; ++d) {
    const float* row = base + d * stride;
    float* o = out + d * stride;
    for (int64_t i = 0; i < len; ++i) o[i] = row[i] - m[i] - ls[i];
  }
}
#undef ONNXSCOPE_CLONES

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
  // Chunks of at most 512 lanes, and narrower (down to 16, a vector) where
  // the outer rows alone leave threads idle: [1, 1000, 49] was one task,
  // one thread of two at work.
  const int64_t threads = thread_count(), per_outer = (threads + outer - 1) / outer;
  int64_t chunk = std::min<int64_t>(inner, 512);
  if (per_outer > 1) chunk = std::min(chunk, std::max<int64_t>(16, ((inner + per_outer - 1) / per_outer + 15) / 16 * 16));
  const int64_t chunks = (inner + chunk - 1) / chunk;
  parallel_for(outer * chunks, std::max<int64_t>(1, 16384 / (dim * chunk)), [&](int64_t t0, int64_t t1) {
    std::vector<float> m(static_cast<size_t>(chunk)), s(static_cast<size_t>(chunk));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, i0 = (t % chunks) * chunk, len = std::min(chunk, inner - i0);
      const float* base = in + o * dim * inner + i0;
      float* out = y + o * dim * inner + i0;
      lane_max(base, dim, inner, len, m.data());
      lane_exp_sum(base, out, dim, inner, len, m.data(), s.data());
      if constexpr (Log) {
        for (int64_t i = 0; i < len; ++i) s[static_cast<size_t>(i)] = std::log(s[static_cast<size_t>(i)]);
        lane_log(base, out, dim, inner, len, m.data(), s.data());
      } else {
        for (int64_t i = 0; i < len; ++i) s[static_cast<size_t>(i)] = 1.0f / s[static_cast<size_t>(i)];
        lane_scale(out, dim, inner, len, s.data());
      }
    }
  });
}

}  // namespace

void register_softmax_axis_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Softmax", 13, INT_MAX, "cpu-simd", SoftmaxAxis<false>, accepts});
  r.add(KernelDef{"", "LogSoftmax", 13, INT_MAX, "cpu-simd", SoftmaxAxis<true>, accepts});
}

}  // namespace onnxscope::cpu
