// Reference kernels: com.microsoft QLinearAdd and QLinearMul (ONNX Runtime's
// contrib operators, which its QOperator quantizer writes for Add and Mul:
// residual connections, Hardswish, squeeze-excitation gates).
//
// Inputs A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point (zero points optional: 0); A and B broadcast as numpy does;
// uint8 or int8, one type throughout; per-tensor parameters. In float, with
// ONNX Runtime's arithmetic (the scales folded into ratios first):
//   QLinearAdd: c = (a - za) (sa / sc) + (b - zb) (sb / sc)
//   QLinearMul: c = (a - za) (b - zb) (sa sb / sc)
//   C = saturate(round_half_even(c) + zc)
// A value there can differ from dequantize-add-quantize by one step where
// the float rounding of the ratios moves it across a half.
#pragma GCC optimize("fp-contract=off")  // products and sums round as written, in the vector rows too
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <string>
#include <type_traits>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/math/common.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

// 16 values of T at p (step 1) or one repeated (step 0), minus z, as floats.
template <typename T>
__attribute__((target("avx512f,avx512bw"))) inline __m512 load16(const T* p, uint64_t step, __m512i z) {
  __m512i w;
  if (step == 0) {
    w = _mm512_set1_epi32(static_cast<int32_t>(*p));
  } else {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    w = std::is_signed_v<T> ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
  }
  return _mm512_cvtepi32_ps(_mm512_sub_epi32(w, z));
}

// A row of L outputs with A and B each stepping by 0 or 1, 16 at a time:
// the scalar loop's float operations in its order (no fused multiply-add),
// vrndscaleps to nearest even (nearbyint), the same clamp, so the same
// bytes. Stops before a block holding a NaN (whose cast the scalar loop
// owns) and returns how many outputs it wrote; the caller does the rest.
template <typename T>
__attribute__((target("avx512f,avx512bw"))) uint64_t row_avx512(bool mul, const T* xa, uint64_t step_a, T za, const T* xb,
                                                                uint64_t step_b, T zb, float ra, float rb, float rab, T zc,
                                                                T* y, uint64_t L) {
  const __m512i vza = _mm512_set1_epi32(za), vzb = _mm512_set1_epi32(zb);
  const __m512 vra = _mm512_set1_ps(ra), vrb = _mm512_set1_ps(rb), vrab = _mm512_set1_ps(rab);
  const __m512 vzc = _mm512_set1_ps(static_cast<float>(zc));
  const __m512 lo = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
  uint64_t k = 0;
  for (; k + 16 <= L; k += 16) {
    const __m512 qa = load16(xa + k * step_a, step_a, vza), qb = load16(xb + k * step_b, step_b, vzb);
    const __m512 v = mul ? _mm512_mul_ps(_mm512_mul_ps(qa, qb), vrab) : _mm512_add_ps(_mm512_mul_ps(qa, vra), _mm512_mul_ps(qb, vrb));
    if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) break;
    const __m512 q = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzc);
    const __m512i r = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(q, lo), hi));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + k), _mm512_cvtepi32_epi8(r));
  }
  return k;
}

template <typename T>
void qlinear_binary(KernelContext& ctx, bool mul) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const DataType type = a.dtype();
  if (b.dtype() != type)
    ctx.fail("B is " + std::string(dtype_name(b.dtype())) + ", A " + std::string(dtype_name(type)));
  const float sa = qlinear_scale(ctx, 1, "A_scale"), sb = qlinear_scale(ctx, 4, "B_scale");
  const float sc = qlinear_scale(ctx, 6, "C_scale");
  const T za = qlinear_zero_point<T>(ctx, 2, type, "A_zero_point");
  const T zb = qlinear_zero_point<T>(ctx, 5, type, "B_zero_point");
  const T zc = qlinear_zero_point<T>(ctx, 7, type, "C_zero_point");
  const Shape out = broadcast_shapes(ctx, a.shape(), b.shape());
  Tensor& c = ctx.allocate_output(0, type, out);
  const uint64_t n = c.element_count();
  if (n == 0) return;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.mutable_data<T>();
  const float ra = sa / sc, rb = sb / sc, rab = sa * sb / sc;
  // Rows of the output along which A and B each step by 0 or 1 (any
  // broadcast), split across the threads; each output computed alone.
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  const BroadcastRows rows(out, shapes);
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  const uint64_t L = rows.row_length(), step_a = rows.step(0), step_b = rows.step(1);
  for_rows(n / L, L, [&](uint64_t r0, uint64_t r1) {
    uint64_t at[2];
    for (uint64_t r = r0; r < r1; ++r) {
      rows.row(r, at);
      const T* xa = pa + at[0];
      const T* xb = pb + at[1];
      T* y = pc + r * L;
      uint64_t k = 0;
      if (avx512 && step_a <= 1 && step_b <= 1) k = row_avx512<T>(mul, xa, step_a, za, xb, step_b, zb, ra, rb, rab, zc, y, L);
      for (; k < L; ++k) {
        const float qa = static_cast<float>(static_cast<int32_t>(xa[k * step_a]) - static_cast<int32_t>(za));
        const float qb = static_cast<float>(static_cast<int32_t>(xb[k * step_b]) - static_cast<int32_t>(zb));
        y[k] = quantize_float<T>(mul ? qa * qb * rab : qa * ra + qb * rb, zc);
      }
    }
  });
}

void run(KernelContext& ctx, bool mul) {
  const char* op = mul ? "QLinearMul" : "QLinearAdd";
  if (ctx.input_count() < 7 || ctx.input_count() > 8)
    ctx.fail(std::string(op) + " takes A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point: got " +
             std::to_string(ctx.input_count()) + " inputs");
  for (size_t i : {0u, 1u, 3u, 4u, 6u})
    if (!ctx.optional_input(i)) ctx.fail("input " + std::to_string(i) + " is missing (only zero points are optional)");
  switch (ctx.input(0).dtype()) {
    case DataType::Uint8: qlinear_binary<uint8_t>(ctx, mul); break;
    case DataType::Int8: qlinear_binary<int8_t>(ctx, mul); break;
    default: ctx.fail("A must be uint8 or int8, got " + std::string(dtype_name(ctx.input(0).dtype())));
  }
}

}  // namespace

void QLinearAdd(KernelContext& ctx) { run(ctx, false); }
void QLinearMul(KernelContext& ctx) { run(ctx, true); }

}  // namespace onnxscope::ref
