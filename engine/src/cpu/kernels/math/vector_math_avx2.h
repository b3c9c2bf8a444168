// Float32 exp, sigmoid, tanh and erf on 8 lanes of AVX2 with FMA: the
// formulas and constants of vector_math_avx512.h (see there for the fits
// and their accuracy; the sigmoid has its own, below; erf: erf_fit.h) in AVX2's
// instructions, for unary_avx2.cpp on CPUs without AVX-512. Where AVX-512 has an instruction AVX2 lacks:
//  - vscalefps: in exp_subnormal, p 2^n is two multiplies by 2^(n/2) and 2^(n - n/2) built
//    from their exponent bits (both halves normal for n in [-150, 128]), so
//    a result past FLT_MAX overflows to inf and one below FLT_MIN rounds
//    once, to the right subnormal (exp: one, see there);
//  - vrcp14ps with a Newton step: a division (one instruction where the
//    estimate and its step took three multiply-add port slots).
// NaN stays NaN (max and min return their second operand when either is
// NaN, and every later step carries it). Only call them where the CPU has
// AVX2 and FMA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "cpu/kernels/math/erf_fit.h"

#define ONNXSCOPE_AVX2 __attribute__((target("avx2,fma"), always_inline)) inline

namespace onnxscope::cpu::avx2 {

ONNXSCOPE_AVX2 __m256 splat(float v) { return _mm256_set1_ps(v); }

// Horner's rule: c[0] * x^(n-1) + ... + c[n-1].
template <int N>
ONNXSCOPE_AVX2 __m256 poly(__m256 x, const float (&c)[N]) {
  __m256 p = splat(c[0]);
  for (int i = 1; i < N; ++i) p = _mm256_fmadd_ps(p, x, splat(c[i]));
  return p;
}

// Lanes [0, n) as a maskload / maskstore mask (none for n <= 0, all past 8).
ONNXSCOPE_AVX2 __m256i tail_mask(int64_t n) {
  const int m = static_cast<int>(n < 0 ? 0 : n > 8 ? 8 : n);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(m), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The sum of the 8 lanes: (lanes i + i+4), then pairs, then the last two.
ONNXSCOPE_AVX2 float hsum(__m256 x) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// The largest of the 8 lanes (the same tree; max_ps gives its second operand for NaN).
ONNXSCOPE_AVX2 float hmax(__m256 x) {
  const __m128 h = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
  const __m128 q = _mm_max_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_shuffle_ps(q, q, 1)));
}

// The 8 x 8 block of rows r[0..7] transposed in place (unpack, shuffle,
// permute: bits move, nothing is computed). AVX2 alone, so that loops built
// without FMA (cpu/kernels/transpose.cpp) take it too.
__attribute__((target("avx2"), always_inline)) inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

ONNXSCOPE_AVX2 __m256 abs(__m256 x) { return _mm256_andnot_ps(splat(-0.0f), x); }
// |magnitude| with the sign of `sign`.
ONNXSCOPE_AVX2 __m256 copysign(__m256 magnitude, __m256 sign) {
  const __m256 s = splat(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(s, magnitude), _mm256_and_ps(s, sign));
}

// p 2^n for integral n in [-150, 128] (and NaN for NaN p).
ONNXSCOPE_AVX2 __m256 scale(__m256 p, __m256 n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i half = _mm256_srai_epi32(ni, 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ni, half), bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// e^x with results below FLT_MIN as the right subnormal (vector_math_avx512.h's
// exp_subnormal). NonPositive: the caller knows x <= 0 (or NaN).
template <bool NonPositive = false>
ONNXSCOPE_AVX2 __m256 exp_subnormal(__m256 x) {
  static constexpr float c[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                                5.0000001201e-1f, 1.0f, 1.0f};
  __m256 xc = _mm256_max_ps(splat(-104.0f), x);
  if constexpr (!NonPositive) xc = _mm256_min_ps(splat(89.0f), xc);
  // n = x log2(e) to the nearest integer by adding and taking away 1.5 * 2^23.
  const __m256 magic = splat(12582912.0f);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(xc, splat(1.44269504088896341f), magic), magic);
  __m256 r = _mm256_fnmadd_ps(n, splat(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  return scale(poly(r, c), n);
}

// e^x, 0 where it is below FLT_MIN (vector_math_avx512.h's exp: a subnormal
// slows every product that meets it). NaN compares unordered: kept.
// NonPositive: the lanes kept have n in [-126, 0], so 2^n is one normal
// float and one multiply (the others' bits are garbage, then zeroed).
// Otherwise 2^n is one float too: n is held to at least -125 (a lane kept
// with n = -126 is below 1.4 FLT_MIN, where the longer r costs no digit
// the 1.2e-38 of exp's promise needs), and p 2^n is 2p 2^(n-1), 2p from
// the polynomial with its coefficients doubled (exactly), so that n = 128
// (up to FLT_MAX, and inf past it) is the normal 2^127: 19 operations where
// exp_subnormal's two-part scale took 24.
template <bool NonPositive = false>
ONNXSCOPE_AVX2 __m256 exp(__m256 x) {
  const __m256 keep = _mm256_cmp_ps(x, splat(-87.3365479f), _CMP_NLT_UQ);
  if constexpr (!NonPositive) {
    static constexpr float c2[] = {2 * 1.3981999507e-3f, 2 * 8.3334519073e-3f, 2 * 4.1665795894e-2f, 2 * 1.6666665459e-1f,
                                   2 * 5.0000001201e-1f, 2.0f, 2.0f};
    const __m256 xc = _mm256_min_ps(splat(89.0f), x);  // NaN: min returns it, max below does not (r keeps it)
    const __m256 magic = splat(12582912.0f);
    const __m256 n = _mm256_max_ps(_mm256_sub_ps(_mm256_fmadd_ps(xc, splat(1.44269504088896341f), magic), magic), splat(-125.0f));
    __m256 r = _mm256_fnmadd_ps(n, splat(0.693359375f), xc);
    r = _mm256_fnmadd_ps(n, splat(-2.12194440e-4f), r);
    const __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23));
    return _mm256_and_ps(_mm256_mul_ps(poly(r, c2), s), keep);
  }
  static constexpr float c[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                                5.0000001201e-1f, 1.0f, 1.0f};
  const __m256 xc = _mm256_max_ps(splat(-104.0f), x);
  const __m256 magic = splat(12582912.0f);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(xc, splat(1.44269504088896341f), magic), magic);
  __m256 r = _mm256_fnmadd_ps(n, splat(0.693359375f), xc);
  r = _mm256_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  const __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  return _mm256_and_ps(_mm256_mul_ps(poly(r, c), s), keep);
}

// 1 / (1 + e^-x) in one division, e^-x by the reduction of exp_subnormal
// with a degree-5 polynomial (fitted for relative error on |r| <= ln2/2:
// 1.1e-7, 2.1e-7 with float rounding; the sigmoid needs no more) and 2^n
// taken from the rounding sum's low bits. -x is held to [-86, 87.33], where
// e^-x and 1 / (1 + e^-x) are normal floats (a subnormal result costs the
// division about twice its time), and x below -87.33 gives 0: the result
// is below FLT_MIN there. NaN stays NaN (min and max return it as their
// second operand; it compares unordered). The former form from e^-|x| (no
// cancellation either way) took 13 cycles a vector, this one 9.3.
ONNXSCOPE_AVX2 __m256 sigmoid(__m256 x) {
  const __m256 nx = _mm256_xor_ps(x, splat(-0.0f));
  const __m256 z = _mm256_max_ps(splat(-86.0f), _mm256_min_ps(splat(87.33f), nx));
  const __m256 magic = splat(12582912.0f);  // 1.5 * 2^23: n in the low bits
  const __m256 nm = _mm256_fmadd_ps(z, splat(1.44269504088896341f), magic);
  const __m256 n = _mm256_sub_ps(nm, magic);
  __m256 r = _mm256_fnmadd_ps(n, splat(0.693359375f), z);
  r = _mm256_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  // (n + 1.5 * 2^23)'s bits are 0x4b400000 + n: shifted by 23, only n's stay.
  const __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(nm), _mm256_set1_epi32(127)), 23));
  const __m256 e = _mm256_mul_ps(poly(r, erf_fit::kExp), s);  // the degree-5 fit erf shares
  const __m256 y = _mm256_div_ps(splat(1.0f), _mm256_add_ps(e, splat(1.0f)));
  return _mm256_and_ps(y, _mm256_cmp_ps(x, splat(-87.33f), _CMP_NLT_UQ));
}

// tanh x = x P(x^2) / Q(x^2) on |x| <= 9, kept within [-1, 1]; the
// division, not an estimate and a Newton step: 0.106 -> 0.088 ms for 301K
// floats on one core (a Xeon under the AVX2 cap).
ONNXSCOPE_AVX2 __m256 tanh(__m256 x) {
  static constexpr float p[] = {-8.489145801e-14f, 5.278125159e-11f, -2.022560963e-08f, 1.115440591e-05f,
                                3.103965893e-03f,  1.308401823e-01f, 1.000000000e+00f};
  static constexpr float q[] = {2.546159085e-04f, 2.449521609e-02f, 4.641734660e-01f, 1.000000000e+00f};
  const __m256 a = _mm256_min_ps(splat(9.0f), _mm256_max_ps(splat(-9.0f), x));
  const __m256 t = _mm256_mul_ps(a, a);
  const __m256 r = _mm256_div_ps(_mm256_mul_ps(a, poly(t, p)), poly(t, q));
  return _mm256_min_ps(splat(1.0f), _mm256_max_ps(splat(-1.0f), r));
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
ONNXSCOPE_AVX2 void erf_k(__m256 (&x)[K]) {
  __m256 a[K], small[K], ac[K], p[K], q[K], nm[K], n[K];
#define ONNXSCOPE_EACH _Pragma("GCC unroll 4") for (int k = 0; k < K; ++k)
  ONNXSCOPE_EACH a[k] = abs(x[k]);
  ONNXSCOPE_EACH ac[k] = _mm256_min_ps(splat(erf_fit::kUpper), a[k]);
  ONNXSCOPE_EACH small[k] = _mm256_mul_ps(a[k], a[k]);
  ONNXSCOPE_EACH p[k] = splat(erf_fit::kBig[0]);
  ONNXSCOPE_EACH q[k] = splat(erf_fit::kSmall[0]);
  for (int i = 1; i < 7; ++i) {
    ONNXSCOPE_EACH p[k] = _mm256_fmadd_ps(p[k], ac[k], splat(erf_fit::kBig[i]));
    if (i < 6) ONNXSCOPE_EACH q[k] = _mm256_fmadd_ps(q[k], small[k], splat(erf_fit::kSmall[i]));
  }
  ONNXSCOPE_EACH small[k] = _mm256_mul_ps(a[k], q[k]);
  ONNXSCOPE_EACH ac[k] = _mm256_fnmsub_ps(p[k], ac[k], ac[k]);  // -g
  ONNXSCOPE_EACH nm[k] = _mm256_fmadd_ps(ac[k], splat(1.44269504088896341f), splat(12582912.0f));
  ONNXSCOPE_EACH n[k] = _mm256_sub_ps(nm[k], splat(12582912.0f));
  ONNXSCOPE_EACH ac[k] = _mm256_fnmadd_ps(n[k], splat(erf_fit::kLn2), ac[k]);  // r
  ONNXSCOPE_EACH p[k] = splat(erf_fit::kExp[0]);
  for (int i = 1; i < 6; ++i) ONNXSCOPE_EACH p[k] = _mm256_fmadd_ps(p[k], ac[k], splat(erf_fit::kExp[i]));
  ONNXSCOPE_EACH n[k] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_castps_si256(nm[k]), _mm256_set1_epi32(127)), 23));
  ONNXSCOPE_EACH p[k] = _mm256_fnmadd_ps(p[k], n[k], splat(1.0f));  // 1 - e^-g
  ONNXSCOPE_EACH p[k] = _mm256_blendv_ps(p[k], small[k], _mm256_cmp_ps(a[k], splat(erf_fit::kSplit), _CMP_LT_OQ));
  ONNXSCOPE_EACH x[k] = _mm256_or_ps(p[k], _mm256_and_ps(x[k], splat(-0.0f)));
#undef ONNXSCOPE_EACH
}

ONNXSCOPE_AVX2 __m256 erf(__m256 x) {
  __m256 v[1] = {x};
  erf_k<1>(v);
  return v[0];
}

}  // namespace onnxscope::cpu::avx2

#undef ONNXSCOPE_AVX2
