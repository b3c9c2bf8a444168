// Softmax (rows of 128 or more) and LogSoftmax over the last axis on
// AVX-512 (both at any length elsewhere, in plain loops): each row in three
// passes (its maximum, e^(x - max) and their sum, then the division or
// x - max - log(sum)), rows split across the thread pool. Where the CPU has
// AVX-512 this runs ahead of oneDNN's softmax, which took 1.5x (Softmax) and
// 1.7x (LogSoftmax) onnxruntime's time on attention scores [1,12,128,128].
// Any NaN in a row makes the whole row NaN, and an infinite maximum gives
// inf - inf = NaN, as the reference's formula does.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_exp.h"
#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/math/vector_math_avx512.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

namespace v = avx512;

// R rows at a time (R independent chains: each row's passes end in a
// horizontal reduction whose latency a single row cannot hide), n floats each.

// Each row's maximum, NaN skipped (max returns its second operand, the
// running maximum, for NaN): a NaN element still makes its e^(x - m), and so
// the sum and the whole row, NaN.
template <int R>
__attribute__((target("avx512f"))) void rows_max(const float* const* x, int64_t n, float* m) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = v::tail_mask(n - i);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_mask_max_ps(acc[r], k, _mm512_maskz_loadu_ps(k, x[r] + i), acc[r]);
  }
  for (int r = 0; r < R; ++r) m[r] = _mm512_reduce_max_ps(acc[r]);
}

// y = e^(x - m) (when Store) and each row's sum of them.
template <int R, bool Store>
__attribute__((target("avx512f"))) void rows_exp_sum(const float* const* x, float* const* y, int64_t n, const float* m,
                                                     float* sum) {
  __m512 vm[R], s[R];
  for (int r = 0; r < R; ++r) {
    vm[r] = _mm512_set1_ps(m[r]);
    s[r] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = v::tail_mask(n - i);
    for (int r = 0; r < R; ++r) {
      const __m512 e = v::exp<true>(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x[r] + i), vm[r]));
      if constexpr (Store) _mm512_mask_storeu_ps(y[r] + i, k, e);
      s[r] = _mm512_mask_add_ps(s[r], k, s[r], e);
    }
  }
  for (int r = 0; r < R; ++r) sum[r] = _mm512_reduce_add_ps(s[r]);
}

// y *= 1 / s: within an ulp of y / s, where a division per vector took a
// third of the kernel's time. A quotient below FLT_MIN is written as 0, not
// as a subnormal (e^(x - max) just above FLT_MIN over a sum above 1), for the
// products that read it (see vector_math_avx512.h's exp).
__attribute__((target("avx512f"))) void divide(float* y, int64_t n, float s) {
  const __m512 vs = _mm512_set1_ps(1.0f / s), tiny = _mm512_set1_ps(1.17549435e-38f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = v::tail_mask(n - i);
    const __m512 q = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), vs);
    _mm512_mask_storeu_ps(y + i, k, _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(q, tiny, _CMP_LT_OQ), _mm512_setzero_ps()));
  }
}

// y = x - m - ls
__attribute__((target("avx512f"))) void log_rows(const float* x, float* y, int64_t n, float m, float ls) {
  const __m512 vm = _mm512_set1_ps(m), vl = _mm512_set1_ps(ls);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = v::tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, k, _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm), vl));
  }
}

// Rows r .. r + R - 1 of x into y.
template <bool Log, int R>
void softmax_rows(const float* in, float* out, int64_t r, int64_t n) {
  const float* x[R];
  float* y[R];
  for (int k = 0; k < R; ++k) {
    x[k] = in + (r + k) * n;
    y[k] = out + (r + k) * n;
  }
  float m[R], s[R];
  rows_max<R>(x, n, m);
  rows_exp_sum<R, !Log>(x, y, n, m, s);
  for (int k = 0; k < R; ++k) {
    if constexpr (Log) log_rows(x[k], y[k], n, m[k], std::log(s[k]));
    else divide(y[k], n, s[k]);
  }
}

// --- Without AVX-512: the rows in plain loops cloned for AVX2 --------------
// On an AVX2 processor (AMD EPYC) oneDNN's LogSoftmax is off by 1.4e-6 where
// the answer is an exact 0 (a row of one), and its Softmax writes 0 for a
// row holding NaN, which the reference's formula makes NaN: on such CPUs both
// take these, the same three passes, the exponential vector_exp.h's, the
// row's log(sum) in double.
#define ONNXSCOPE_CLONES ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")

// The row's maximum, NaN skipped as above (eight lanes the compiler vectorises).
ONNXSCOPE_CLONES float plain_row_max(const float* x, int64_t n) {
  float lane[8];
  for (float& l : lane) l = -INFINITY;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] = x[i + l] > lane[l] ? x[i + l] : lane[l];
  for (; i < n; ++i) lane[0] = x[i] > lane[0] ? x[i] : lane[0];
  float m = lane[0];
  for (int l = 1; l < 8; ++l) m = lane[l] > m ? lane[l] : m;
  return m;
}

// y = e^(x - m) as scratch, and their sum: in one AVX2 pass where the CPU
// has AVX2 and FMA (vector_math_avx2.h's exp: the compiler's loop of
// exp_poly, then a second pass for the sum, left Softmax over attention
// scores at 0.49x onnxruntime on the AMD EPYC), the tail masked.
__attribute__((target("avx2,fma"))) float avx2_row_exp_sum(const float* x, float* y, int64_t n, float m) {
  const __m256 vm = _mm256_set1_ps(m);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {  // two sums: each add waits on the last
    const __m256 e0 = avx2::exp<true>(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
    const __m256 e1 = avx2::exp<true>(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
    _mm256_storeu_ps(y + i, e0);
    _mm256_storeu_ps(y + i + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  for (; i < n; i += 8) {
    const __m256i k = avx2::tail_mask(n - i);
    const __m256 e = _mm256_and_ps(avx2::exp<true>(_mm256_sub_ps(_mm256_maskload_ps(x + i, k), vm)), _mm256_castsi256_ps(k));
    _mm256_maskstore_ps(y + i, k, e);
    s0 = _mm256_add_ps(s0, e);
  }
  return avx2::hsum(_mm256_add_ps(s0, s1));
}

// The row's maximum in AVX2, NaN skipped as above (max returns its second
// operand, the running maximum, for NaN), the tail's lanes -inf.
__attribute__((target("avx2,fma"))) float avx2_row_max(const float* x, int64_t n) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 m0 = ninf, m1 = ninf;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
  }
  for (; i < n; i += 8) {
    const __m256i k = avx2::tail_mask(n - i);
    m0 = _mm256_max_ps(_mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, k), _mm256_castsi256_ps(k)), m0);
  }
  return avx2::hmax(_mm256_max_ps(m0, m1));
}

ONNXSCOPE_CLONES float plain_row_exp_sum(const float* x, float* y, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) y[i] = exp_poly(x[i] - m);
  float lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += y[i + l];
  for (; i < n; ++i) lane[0] += y[i];
  float s = 0.0f;
  for (float l : lane) s += l;
  return s;
}

ONNXSCOPE_CLONES void plain_row_log(const float* x, float* y, int64_t n, float m, float ls) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] - m - ls;
}

// y *= 1 / s, quotients below FLT_MIN written as 0 (as divide() above).
ONNXSCOPE_CLONES void plain_row_divide(float* y, int64_t n, float s) {
  const float inv = 1.0f / s;
  for (int64_t i = 0; i < n; ++i) {
    const float q = y[i] * inv;
    y[i] = q < 1.17549435e-38f ? 0.0f : q;
  }
}
#undef ONNXSCOPE_CLONES

bool has_avx2() { return cpu_has_avx2_fma(); }

// The output, and rows [r0, r1) of n floats to `run` across the thread pool.
template <class Run>
void over_rows(KernelContext& ctx, Run run) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.shape().back(), rows = static_cast<int64_t>(x.element_count()) / n;
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* y = yt.mutable_data<float>();
  parallel_for(rows, std::max<int64_t>(4, 8192 / n), [&](int64_t r0, int64_t r1) { run(in, y, r0, r1, n); });
}

template <bool Log>
void SoftmaxPlainRows(KernelContext& ctx) {
  over_rows(ctx, [](const float* in, float* y, int64_t r0, int64_t r1, int64_t n) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = in + r * n;
      float* yr = y + r * n;
      const float m = has_avx2() ? avx2_row_max(xr, n) : plain_row_max(xr, n);
      const float s = has_avx2() ? avx2_row_exp_sum(xr, yr, n, m) : plain_row_exp_sum(xr, yr, n, m);
      if constexpr (Log) plain_row_log(xr, yr, n, m, static_cast<float>(std::log(static_cast<double>(s))));
      else plain_row_divide(yr, n, s);
    }
  });
}

// The last axis of a float tensor (before opset 13, the 2-D coercion's rows
// when `axis` is the last one).
bool last_axis(const KernelContext& ctx) {
  if (ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const int64_t rank = x.rank();
  const int64_t axis = ctx.attr_int("axis", ctx.opset_version() < 13 ? 1 : -1);
  if (x.dtype() != DataType::Float || rank == 0 || axis < -rank || axis >= rank || x.element_count() == 0) return false;
  return (axis < 0 ? axis + rank : axis) == rank - 1;
}

bool has_avx512() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f");
  return yes;
}

bool accepts_plain(const KernelContext& ctx) { return !has_avx512() && last_axis(ctx); }

bool accepts(const KernelContext& ctx) {
  if (!has_avx512() || !last_axis(ctx)) return false;
  // Softmax rows of fewer than 128 (swin's 49-token windows) are oneDNN's,
  // which works across rows: here each row pays two horizontal reductions and
  // a scalar division (2.3x oneDNN's time on swin_t's [64,3,49,49] in one
  // profile). LogSoftmax stays here at any length: oneDNN's is off by up to
  // 1.3% near 0 (-1.048e-4 for -1.062e-4, cpu_ops_math_test).
  return ctx.node().op_type == "LogSoftmax" || ctx.input_value(0)->tensor().shape().back() >= 128;
}

template <bool Log>
void SoftmaxRows(KernelContext& ctx) {
  over_rows(ctx, [](const float* in, float* y, int64_t r0, int64_t r1, int64_t n) {
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) softmax_rows<Log, 4>(in, y, r, n);
    for (; r < r1; ++r) softmax_rows<Log, 1>(in, y, r, n);
  });
}

}  // namespace

void register_softmax_rows_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Softmax", 1, INT_MAX, "cpu-avx512", SoftmaxRows<false>, accepts});
  r.add(KernelDef{"", "LogSoftmax", 1, INT_MAX, "cpu-avx512", SoftmaxRows<true>, accepts});
  r.add(KernelDef{"", "Softmax", 1, INT_MAX, "cpu-simd", SoftmaxPlainRows<false>, accepts_plain});
  r.add(KernelDef{"", "LogSoftmax", 1, INT_MAX, "cpu-simd", SoftmaxPlainRows<true>, accepts_plain});
}

}  // namespace onnxscope::cpu
