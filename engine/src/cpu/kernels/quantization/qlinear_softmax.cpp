// com.microsoft QLinearSoftmax over contiguous rows (the last axis, or any
// axis before opset 13: a quantized ViT's attention probabilities, 49 of its
// 173 ms on the reference), uint8 or int8, per-tensor parameters, with the
// reference's arithmetic (reference/ops/quantization/qlinear_softmax.cpp):
//   e_k = exp(double(x_k - max) * x_scale), sum in the row's order,
//   y_k = quantize(float(e_k / sum / y_scale))
// Every e_k is one of 256 values, exp(-d * x_scale) for d = max - x_k: a
// table made with the same std::exp call, so the same bits. The sums of four
// rows run side by side (each in its own order), and the quotients eight at
// a time in AVX-512. Bit for bit.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // each quotient rounds as the reference's
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <climits>  // INT_MAX
#include <cmath>
#include <optional>
#include <type_traits>

#include "core/cpu_features.h"
#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/qlinear_unary_params.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

bool have_avx512() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f") && ONNXSCOPE_CPU_AVX512("avx512bw") &&
                          ONNXSCOPE_CPU_AVX512("avx512vl");
  return yes;
}

struct Problem {
  int64_t rows = 0, n = 0;
  float sx = 1, sy = 1;
  int zy = 0;
};

std::optional<Problem> problem_of(const KernelContext& ctx) {
  if (!have_avx512() || !ctx.has_attr("opset")) return std::nullopt;
  const auto q = qlinear_unary_params(ctx);
  const Tensor* x = input_at(ctx, 0);
  if (!q || x->rank() == 0) return std::nullopt;
  Problem p;
  p.sx = q->x_scale;
  p.sy = q->y_scale;
  p.zy = q->y_zero_point;
  const int64_t rank = x->rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -rank || axis >= rank) return std::nullopt;
  if (axis < 0) axis += rank;
  if (ctx.attr_int("opset", 13) >= 13 && axis != rank - 1) return std::nullopt;  // rows not contiguous
  p.rows = 1;
  p.n = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? p.rows : p.n) *= x->shape()[static_cast<size_t>(d)];
  if (p.n == 0 || p.rows == 0) return std::nullopt;
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

// y[k] = quantize(float(e[max - x[k]] / sum / sy)) for a row of n values.
template <typename T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void row_out(const T* x, int64_t n, int max, const double* e,
                                                                 double sum, const Problem& p, T* y) {
  constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
  const __m512d s = _mm512_set1_pd(sum), sy = _mm512_set1_pd(static_cast<double>(p.sy));
  const __m256i mx = _mm256_set1_epi32(max);
  const __m256 zy = _mm256_set1_ps(static_cast<float>(p.zy));
  for (int64_t k = 0; k < n; k += 8) {
    const __mmask8 m = n - k >= 8 ? static_cast<__mmask8>(0xff) : static_cast<__mmask8>((1u << (n - k)) - 1u);
    const __m128i b = _mm_maskz_loadu_epi8(m, x + k);
    const __m256i v = std::is_signed_v<T> ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
    const __m256i d = _mm256_sub_epi32(mx, v);  // in [0, 255]
    const __m512d ek = _mm512_mask_i32gather_pd(_mm512_set1_pd(1.0), m, d, e, 8);
    const __m256 f = _mm512_cvtpd_ps(_mm512_div_pd(_mm512_div_pd(ek, s), sy));
    const __m256 q = _mm256_add_ps(_mm256_roundscale_ps(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zy);
    const __m256i r = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(q, _mm256_set1_ps(lo)), _mm256_set1_ps(hi)));
    _mm_mask_storeu_epi8(y + k, m, _mm256_cvtepi32_epi8(r));  // in range: exact
  }
}

template <typename T>
void rows(const T* x, T* y, int64_t r0, int64_t r1, const Problem& p, const double* e) {
  const int64_t n = p.n;
  constexpr int64_t kSide = 4;  // rows summed side by side
  for (int64_t r = r0; r < r1; r += kSide) {
    const int64_t count = std::min(kSide, r1 - r);
    int max[kSide] = {};
    double sum[kSide] = {};
    for (int64_t j = 0; j < count; ++j) {
      const T* row = x + (r + j) * n;
      int m = row[0];
      for (int64_t k = 1; k < n; ++k) m = std::max<int>(m, row[k]);
      max[j] = m;
    }
    if (count == kSide) {
      const T* a = x + r * n;
      for (int64_t k = 0; k < n; ++k)
        for (int64_t j = 0; j < kSide; ++j) sum[j] += e[max[j] - a[j * n + k]];
    } else {
      for (int64_t j = 0; j < count; ++j)
        for (int64_t k = 0; k < n; ++k) sum[j] += e[max[j] - x[(r + j) * n + k]];
    }
    for (int64_t j = 0; j < count; ++j) row_out(x + (r + j) * n, n, max[j], e, sum[j], p, y + (r + j) * n);
  }
}

void QLinearSoftmax(KernelContext& ctx) {
  const auto po = problem_of(ctx);
  if (!po) ctx.fail("problem not supported by the CPU QLinearSoftmax");
  const Problem& p = *po;
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), x.shape());
  std::array<double, 256> e{};
  for (int d = 0; d < 256; ++d) e[static_cast<size_t>(d)] = std::exp(static_cast<double>(-d) * p.sx);  // the reference's argument
  parallel_for(p.rows, std::max<int64_t>(1, 8192 / p.n), [&](int64_t r0, int64_t r1) {
    if (x.dtype() == DataType::Uint8) rows(x.data<uint8_t>(), y.mutable_data<uint8_t>(), r0, r1, p, e.data());
    else rows(x.data<int8_t>(), y.mutable_data<int8_t>(), r0, r1, p, e.data());
  });
}

}  // namespace

void register_qlinear_softmax_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QLinearSoftmax", 1, INT_MAX, "cpu-simd", QLinearSoftmax, accepts});
}

}  // namespace onnxscope::cpu
