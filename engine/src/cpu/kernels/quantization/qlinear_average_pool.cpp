// com.microsoft QLinearAveragePool on a channels-last 2-D image
// (channels_last = 1, as nhwc-int8-layout sets it: a QOperator
// DenseNet-121's transitions, 2.7 ms a run on the reference), 8-bit,
// per-tensor parameters: per output pixel and 16 channels, the taps inside X
// summed exactly in int32 lanes, then the reference's arithmetic
// (reference/ops/quantization/qlinear_average_pool.cpp) in vectors: the
// mean (sum - taps * zx) * x_scale / count in double, / y_scale, to float,
// rounded half to even, plus the zero point, saturated. Bit for bit.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // each product and quotient rounds as the reference's
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <climits>  // INT_MAX
#include <cmath>
#include <type_traits>

#include "core/cpu_features.h"
#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/qlinear_unary_params.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

bool have_avx512() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f") && ONNXSCOPE_CPU_AVX512("avx512bw") &&
                          ONNXSCOPE_CPU_AVX512("avx512vl") && ONNXSCOPE_CPU_AVX512("avx512dq");
  return yes;
}

struct Problem {
  ref::nn::Window w;
  float sx = 1, sy = 1;
  int zx = 0, zy = 0;
  bool include_pad = false;
};

std::optional<Problem> problem_of(const KernelContext& ctx) {
  if (!have_avx512() || ctx.attr_int("channels_last", 0) != 1) return std::nullopt;
  const auto q = qlinear_unary_params(ctx);
  const Tensor* x = input_at(ctx, 0);
  if (!q || x->rank() != 4) return std::nullopt;
  Problem p;
  p.sx = q->x_scale;
  p.sy = q->y_scale;
  p.zx = q->x_zero_point;
  p.zy = q->y_zero_point;
  if (!ctx.has_attr("kernel_shape") || ctx.attr_ints("kernel_shape").size() != 2) return std::nullopt;
  if (ctx.has_attr("dilations")) return std::nullopt;
  try {
    p.w = ref::nn::resolve_window(ctx, {x->shape()[1], x->shape()[2]}, ctx.attr_ints("kernel_shape"),
                                  ctx.attr_int("ceil_mode", 0) != 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (p.w.out[0] <= 0 || p.w.out[1] <= 0 || p.w.kernel[0] * p.w.kernel[1] > 65536) return std::nullopt;
  p.include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

// static_cast<float>(double(sum) * sx / count / sy) of eight sums (a
// function, not a lambda: clang does not give a lambda its caller's target).
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m256 mean8(__m256i s, __m512d sx, __m512d cnt, __m512d sy) {
  return _mm512_cvtpd_ps(_mm512_div_pd(_mm512_div_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(s), sx), cnt), sy));
}

// One output pixel: the taps [r0, r1) x [c0, c1) of image rows `W` pixels of
// C channels wide, from `x` (the image); `count` the divisor.
template <typename T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void pixel(const T* x, int64_t W, int64_t C, Span rows, Span cols,
                                                               int64_t count, const Problem& p, T* out) {
  const int64_t taps = (rows.hi - rows.lo) * (cols.hi - cols.lo);
  const __m512d sx = _mm512_set1_pd(static_cast<double>(p.sx)), sy = _mm512_set1_pd(static_cast<double>(p.sy));
  const __m512d cnt = _mm512_set1_pd(static_cast<double>(count));
  const __m512i bias = _mm512_set1_epi32(static_cast<int>(-taps * p.zx));  // sum of (x - zx) over the taps
  constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = C - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (C - c)) - 1u);
    __m512i sum = bias;
    for (int64_t r = rows.lo; r < rows.hi; ++r)
      for (int64_t q = cols.lo; q < cols.hi; ++q) {
        const __m128i b = _mm_maskz_loadu_epi8(m, x + (r * W + q) * C + c);
        sum = _mm512_add_epi32(sum, std::is_signed_v<T> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b));
      }
    __m512 f;
    if (count > 0) {
      f = _mm512_insertf32x8(_mm512_castps256_ps512(mean8(_mm512_castsi512_si256(sum), sx, cnt, sy)),
                             mean8(_mm512_extracti64x4_epi64(sum, 1), sx, cnt, sy), 1);
    } else {
      f = _mm512_setzero_ps();  // no counted position: the mean is 0 there, as the reference's
    }
    const __m512 q = _mm512_add_ps(_mm512_roundscale_ps(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                   _mm512_set1_ps(static_cast<float>(p.zy)));
    const __m512i v = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(lo)), _mm512_set1_ps(hi)));
    _mm_mask_storeu_epi8(out + c, m, _mm512_cvtepi32_epi8(v));  // in range: exact
  }
}

void QLinearAveragePool(KernelContext& ctx) {
  const auto po = problem_of(ctx);
  if (!po) ctx.fail("problem not supported by the CPU QLinearAveragePool");
  const Problem& p = *po;
  const Tensor& x = ctx.input(0);
  const int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = x.shape()[3];
  const int64_t OH = p.w.out[0], OW = p.w.out[1];
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), {N, OH, OW, C});
  if (y.element_count() == 0) return;
  auto span = [&](size_t d, int64_t o, int64_t lo, int64_t hi) {
    return window_span(o, p.w.strides[d], p.w.pad_begin[d], p.w.kernel[d], lo, hi);
  };
  parallel_for(N * OH, std::max<int64_t>(1, 4096 / std::max<int64_t>(OW * C, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const Span rows = span(0, oh, 0, H);
      const Span rows_counted = p.include_pad ? span(0, oh, -p.w.pad_begin[0], H + p.w.pad_end[0]) : rows;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const Span cols = span(1, ow, 0, W);
        const Span cols_counted = p.include_pad ? span(1, ow, -p.w.pad_begin[1], W + p.w.pad_end[1]) : cols;
        const int64_t count = (rows_counted.hi - rows_counted.lo) * (cols_counted.hi - cols_counted.lo);
        const int64_t o = (r * OW + ow) * C;
        if (x.dtype() == DataType::Uint8)
          pixel(x.data<uint8_t>() + n * H * W * C, W, C, rows, cols, count, p, y.mutable_data<uint8_t>() + o);
        else
          pixel(x.data<int8_t>() + n * H * W * C, W, C, rows, cols, count, p, y.mutable_data<int8_t>() + o);
      }
    }
  });
}

}  // namespace

void register_qlinear_average_pool_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QLinearAveragePool", 1, INT_MAX, "cpu-simd", QLinearAveragePool, accepts});
}

}  // namespace onnxscope::cpu
