// Float32 elementary functions on 16 lanes of AVX-512, for the kernels whose
// time is in them (unary_avx512.cpp). Each is written for the whole float
// range, not only the usual one: NaN stays NaN, infinities and results below
// FLT_MIN come out as the reference's do (exponentials below FLT_MIN as 0:
// see exp), and cpu_ops_harness_test checks
// each against the reference's double-precision result (with NaN and inf in
// the inputs). Only call them where ONNXSCOPE_CPU_AVX512("avx512f").
//
// The polynomials are the classic minimax fits (Cody and Waite's reductions;
// the coefficients of Moshier's Cephes library for logf, sinf and cosf);
// erf is erf_fit.h's (within 2.9 ulp).
#pragma once

// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps
// and -Wuninitialized in _mm512_reduce_*_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "core/cpu_features.h"
#include "cpu/kernels/math/erf_fit.h"

#include <cmath>
#include <cstdint>

#define ONNXSCOPE_AVX512 __attribute__((target("avx512f"), always_inline)) inline

namespace onnxscope::cpu::avx512 {

ONNXSCOPE_AVX512 __m512 splat(float v) { return _mm512_set1_ps(v); }

// The lanes of a 16-float vector that `left` floats still fill (all 16 from 16 on).
ONNXSCOPE_AVX512 __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

// Horner's rule: c[0] * x^(n-1) + ... + c[n-1].
template <int N>
ONNXSCOPE_AVX512 __m512 poly(__m512 x, const float (&c)[N]) {
  __m512 p = splat(c[0]);
  for (int i = 1; i < N; ++i) p = _mm512_fmadd_ps(p, x, splat(c[i]));
  return p;
}

ONNXSCOPE_AVX512 __m512 abs(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}
// |magnitude| with the sign of `sign`.
ONNXSCOPE_AVX512 __m512 copysign(__m512 magnitude, __m512 sign) {
  const __m512i m = _mm512_set1_epi32(0x7fffffff);
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(magnitude), _mm512_castps_si512(sign), m, 0xe4));
}

// 1 / d for finite nonzero d: the 14-bit estimate and one Newton step (within
// about 1 ulp), a quarter of vdivps's time. inf and 0 give NaN: callers
// keep d finite and nonzero.
ONNXSCOPE_AVX512 __m512 recip(__m512 d) {
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, splat(1.0f)), r);
}

// e^x within 3.2 ulp (the reduction and polynomial of vector_exp.h, the
// polynomial as one Horner chain: 1 + r + r^2/2 + ... + c r^6), scaled by
// 2^n with vscalefps, which overflows to inf and rounds results below FLT_MIN
// to the right subnormal. NaN stays NaN: x is clamped first with max/min,
// which return their second operand for NaN (e^-104 is below half the
// smallest subnormal, e^89 past FLT_MAX). NonPositive: the caller knows
// x <= 0 (or NaN), as a softmax's x - max: no upper clamp. keep: the lanes
// to compute; the others are 0 (exp below).
template <bool NonPositive = false>
ONNXSCOPE_AVX512 __m512 exp_scaled(__m512 x, __mmask16 keep) {
  static constexpr float c[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                                5.0000001201e-1f, 1.0f, 1.0f};
  __m512 xc = _mm512_max_ps(splat(-104.0f), x);
  if constexpr (!NonPositive) xc = _mm512_min_ps(splat(89.0f), xc);
  // x log2(e) rounded to the nearest integer (ties to even) by adding and
  // taking away 1.5 * 2^23 (|x| <= 104 keeps it exact): two operations any
  // FMA port takes, where vrndscaleps is two on one port. The product is not
  // rounded first, so n is the nearest integer to x log2(e) itself and |r|
  // stays within ln(2) / 2.
  const __m512 magic = splat(12582912.0f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(xc, splat(1.44269504088896341f), magic), magic);
  __m512 r = _mm512_fnmadd_ps(n, splat(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  return _mm512_maskz_scalef_ps(keep, poly(r, c), n);
}

template <bool NonPositive = false>
ONNXSCOPE_AVX512 __m512 exp_subnormal(__m512 x) {
  return exp_scaled<NonPositive>(x, static_cast<__mmask16>(0xffff));
}

// e^x as above, but 0 below ln(FLT_MIN) instead of the subnormal e^x: a
// subnormal costs every later multiply or add that meets it a hundredfold
// (an attention MatMul after a Softmax whose masked scores made them ran 6x
// slower on swin_t), and it is within FLT_MIN of the true value. Mish, whose
// x e^x is a normal float there, takes exp_subnormal. (NaN compares false
// and would be zeroed: the mask keeps it.)
template <bool NonPositive = false>
ONNXSCOPE_AVX512 __m512 exp(__m512 x) {
  return exp_scaled<NonPositive>(x, _mm512_cmp_ps_mask(x, splat(-87.3365479f), _CMP_NLT_UQ));
}

// Natural log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(x) = e ln2 +
// log1p(m - 1). getexp / getmant take subnormals as they are. 0 gives -inf,
// negatives NaN, +inf +inf.
ONNXSCOPE_AVX512 __m512 log(__m512 x) {
  static constexpr float c[] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                                -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                                2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};
  __m512 e = _mm512_getexp_ps(x);
  __m512 m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  const __mmask16 big = _mm512_cmp_ps_mask(m, splat(1.41421356f), _CMP_GT_OQ);
  m = _mm512_mask_mul_ps(m, big, m, splat(0.5f));
  e = _mm512_mask_add_ps(e, big, e, splat(1.0f));
  const __m512 f = _mm512_sub_ps(m, splat(1.0f));
  const __m512 z = _mm512_mul_ps(f, f);
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(poly(f, c), f), z);
  y = _mm512_fmadd_ps(e, splat(-2.12194440e-4f), y);
  y = _mm512_fnmadd_ps(z, splat(0.5f), y);
  y = _mm512_add_ps(f, y);
  y = _mm512_fmadd_ps(e, splat(0.693359375f), y);
  // The edges: 0 (either sign) to -inf, below zero to NaN, +inf to +inf, NaN stays.
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, splat(0.0f), _CMP_EQ_OQ), splat(-INFINITY));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, splat(0.0f), _CMP_LT_OQ), splat(NAN));
  y = _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, splat(INFINITY), _CMP_EQ_OQ), x);
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

// log(1 + u) for u >= 0 without losing a small u: log(w) u / (w - 1) with
// w = 1 + u rounded (Goldberg's correction), u itself where w rounds to 1.
ONNXSCOPE_AVX512 __m512 log1p_nonneg(__m512 u) {
  const __m512 w = _mm512_add_ps(u, splat(1.0f));
  const __m512 d = _mm512_sub_ps(w, splat(1.0f));
  const __m512 y = _mm512_div_ps(_mm512_mul_ps(log(w), u), d);
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(d, splat(0.0f), _CMP_EQ_OQ), u);
}

// 1 / (1 + e^-x), from e = e^-|x| so that neither side cancels.
ONNXSCOPE_AVX512 __m512 sigmoid(__m512 x) {
  // -|x| by setting the sign bit (NaN stays NaN), and exp without its upper clamp.
  const __m512 nx = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
  const __m512 e = exp<true>(nx);
  const __m512 num = _mm512_mask_mov_ps(e, _mm512_cmp_ps_mask(x, splat(0.0f), _CMP_GE_OQ), splat(1.0f));
  return _mm512_mul_ps(num, recip(_mm512_add_ps(e, splat(1.0f))));  // 1 + e is in [1, 2] (NaN for NaN)
}

// tanh x = x P(x^2) / Q(x^2) on |x| <= 9 (tanh 9 rounds to 1 in float), a
// [6/3] rational fitted to tanh(x)/x for least maximum relative error
// (6.6e-9 in exact arithmetic; within 5 ulp as evaluated here, 0.35 ulp on
// average): 17 operations against the 23 of an e^2x form. Q >= 1 on the
// range; the result is kept within [-1, 1]. x * P keeps -0 and the small x's
// digits; NaN passes through every step (max and min return their second
// operand when either is NaN). The coefficients: scripts/fit_tanh.py.
ONNXSCOPE_AVX512 __m512 tanh(__m512 x) {
  static constexpr float p[] = {-8.489145801e-14f, 5.278125159e-11f, -2.022560963e-08f, 1.115440591e-05f,
                                3.103965893e-03f,  1.308401823e-01f, 1.000000000e+00f};
  static constexpr float q[] = {2.546159085e-04f, 2.449521609e-02f, 4.641734660e-01f, 1.000000000e+00f};
  const __m512 a = _mm512_min_ps(splat(9.0f), _mm512_max_ps(splat(-9.0f), x));
  const __m512 t = _mm512_mul_ps(a, a);
  const __m512 r = _mm512_mul_ps(_mm512_mul_ps(a, poly(t, p)), recip(poly(t, q)));
  return _mm512_min_ps(splat(1.0f), _mm512_max_ps(splat(-1.0f), r));
}

// erf by the two pieces of erf_fit.h: a P(a^2) below the split, 1 - e^-g
// above (e^-g with 2^n from the rounding sum's low bits: n in [-26, 0], a
// normal float). Both pieces for every lane, one kept; the sign of x put
// back (both are >= 0). NaN stays NaN (min returns it as its second
// operand, it compares unordered); +-inf gives +-1. erf_k: K vectors in
// place, each step over all K before the next; a vector's chain is ~25
// dependent operations, and one chain after another filled the scheduler
// before the ports (erf_k<4> over erf: 0.20 against 0.28 ms for 393K floats).
template <int K>
ONNXSCOPE_AVX512 void erf_k(__m512 (&x)[K]) {
  __m512 a[K], small[K], ac[K], p[K], q[K], nm[K], n[K];
#define ONNXSCOPE_EACH _Pragma("GCC unroll 4") for (int k = 0; k < K; ++k)
  ONNXSCOPE_EACH a[k] = abs(x[k]);
  ONNXSCOPE_EACH ac[k] = _mm512_min_ps(splat(erf_fit::kUpper), a[k]);
  ONNXSCOPE_EACH small[k] = _mm512_mul_ps(a[k], a[k]);
  ONNXSCOPE_EACH p[k] = splat(erf_fit::kBig[0]);
  ONNXSCOPE_EACH q[k] = splat(erf_fit::kSmall[0]);
  for (int i = 1; i < 7; ++i) {
    ONNXSCOPE_EACH p[k] = _mm512_fmadd_ps(p[k], ac[k], splat(erf_fit::kBig[i]));
    if (i < 6) ONNXSCOPE_EACH q[k] = _mm512_fmadd_ps(q[k], small[k], splat(erf_fit::kSmall[i]));
  }
  ONNXSCOPE_EACH small[k] = _mm512_mul_ps(a[k], q[k]);
  ONNXSCOPE_EACH ac[k] = _mm512_fnmsub_ps(p[k], ac[k], ac[k]);  // -g
  ONNXSCOPE_EACH nm[k] = _mm512_fmadd_ps(ac[k], splat(1.44269504088896341f), splat(12582912.0f));
  ONNXSCOPE_EACH n[k] = _mm512_sub_ps(nm[k], splat(12582912.0f));
  ONNXSCOPE_EACH ac[k] = _mm512_fnmadd_ps(n[k], splat(erf_fit::kLn2), ac[k]);  // r
  ONNXSCOPE_EACH p[k] = splat(erf_fit::kExp[0]);
  for (int i = 1; i < 6; ++i) ONNXSCOPE_EACH p[k] = _mm512_fmadd_ps(p[k], ac[k], splat(erf_fit::kExp[i]));
  ONNXSCOPE_EACH n[k] = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_castps_si512(nm[k]), _mm512_set1_epi32(127)), 23));
  ONNXSCOPE_EACH p[k] = _mm512_fnmadd_ps(p[k], n[k], splat(1.0f));  // 1 - e^-g
  ONNXSCOPE_EACH p[k] = _mm512_mask_mov_ps(p[k], _mm512_cmp_ps_mask(a[k], splat(erf_fit::kSplit), _CMP_LT_OQ), small[k]);
  ONNXSCOPE_EACH x[k] = copysign(p[k], x[k]);
#undef ONNXSCOPE_EACH
}

ONNXSCOPE_AVX512 __m512 erf(__m512 x) {
  __m512 v[1] = {x};
  erf_k<1>(v);
  return v[0];
}

// sin or cos (Cos: one quadrant on). k = round(x 2/pi), r = x - k pi/2 in
// three parts with fused multiply-adds (exact for |x| below 2^13, the limit
// the caller keeps: larger |x| go to the C library), then the Cephes
// polynomials for sin and cos on [-pi/4, pi/4] and the quadrant's sign.
template <bool Cos>
ONNXSCOPE_AVX512 __m512 sincos(__m512 x) {
  static constexpr float s[] = {-1.9515295891e-4f, 8.3321608736e-3f, -1.6666654611e-1f};
  static constexpr float c[] = {2.443315711809948e-5f, -1.388731625493765e-3f, 4.166664568298827e-2f};
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, splat(0.636619772367581343f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, splat(1.5703125f), x);
  r = _mm512_fnmadd_ps(k, splat(4.837512969970703125e-4f), r);
  r = _mm512_fnmadd_ps(k, splat(7.54978995489188216e-8f), r);
  const __m512 z = _mm512_mul_ps(r, r);
  const __m512 sin_r = _mm512_fmadd_ps(_mm512_mul_ps(poly(z, s), z), r, r);
  const __m512 cos_r = _mm512_fmadd_ps(_mm512_mul_ps(poly(z, c), z), z, _mm512_fnmadd_ps(z, splat(0.5f), splat(1.0f)));
  __m512i q = _mm512_cvtps_epi32(k);  // k is an integer below 2^14 here
  if constexpr (Cos) q = _mm512_add_epi32(q, _mm512_set1_epi32(1));
  // Quadrants 1 and 3 take cos r, quadrants 2 and 3 negate.
  const __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
  const __m512 y = _mm512_mask_mov_ps(sin_r, odd, cos_r);
  const __m512i neg = _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30);
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(y), neg));
}

}  // namespace onnxscope::cpu::avx512

#undef ONNXSCOPE_AVX512
