// The AVX-512 steps of the QLinear requantization (requantize.h), shared by
// the whole-run loops (requantize.cpp) and the kernels that requantize a tile
// in registers (vnni_gemm.cpp, qlinear_conv_depthwise.cpp): for finite multipliers a product is
// never NaN, and below 2^51 rounding to the nearest even integer is
// roundscale's, the same as requantize()'s nearbyint.
// An includer compiles with fp-contract off: a product must round before
// anything is added to it.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "cpu/kernels/quantization/requantize.h"

namespace onnxscope::cpu {

// The rounding and saturation of eight products x (finite): clamped to
// +-2^51, rounded half to even, plus the zero point, saturated to T's
// range, as int32.
template <typename T>
__attribute__((target("avx512f"))) inline __m256i round8(__m512d x, __m512d zp) {
  constexpr double lo = std::is_signed_v<T> ? -128.0 : 0.0, hi = std::is_signed_v<T> ? 127.0 : 255.0;
  const __m512d big = _mm512_set1_pd(2251799813685248.0);
  x = _mm512_min_pd(_mm512_max_pd(x, _mm512_sub_pd(_mm512_setzero_pd(), big)), big);
  const __m512d r = _mm512_add_pd(_mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
  return _mm512_cvtpd_epi32(_mm512_min_pd(_mm512_max_pd(r, _mm512_set1_pd(lo)), _mm512_set1_pd(hi)));  // integral, in range: exact
}

// round8 for products known to lie within +-2^51 (|sum| < 2^32 and a
// multiplier of at most 2^19): no clamp before the rounding.
template <typename T>
__attribute__((target("avx512f"))) inline __m256i round8_bounded(__m512d x, __m512d zp) {
  constexpr double lo = std::is_signed_v<T> ? -128.0 : 0.0, hi = std::is_signed_v<T> ? 127.0 : 255.0;
  const __m512d r = _mm512_add_pd(_mm512_roundscale_pd(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
  return _mm512_cvtpd_epi32(_mm512_min_pd(_mm512_max_pd(r, _mm512_set1_pd(lo)), _mm512_set1_pd(hi)));  // integral, in range: exact
}


// Sixteen int32 values in T's range (two halves of eight) as T, in the low 128 bits.
template <typename T>
__attribute__((target("avx512f"))) inline __m128i narrow16(__m256i first, __m256i second) {
  const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(first), second, 1);
  return _mm512_cvtepi32_epi8(v);  // in range: the truncation is exact
}

// Sixteen int32 values in T's range (two halves of eight) stored as T.
template <typename T>
__attribute__((target("avx512f"))) inline void store16(T* out, __m256i first, __m256i second) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), narrow16<T>(first, second));
}

// round8_bounded's results for sixteen sums (each sum + bias, within int32)
// from float arithmetic, where that is exact: p = float(sum) * mult (mult a
// float) is e (1 + d) with |d| <= 2^-23 for e the exact product, so rounding
// p to the nearest integer gives e's unless a half-integer lies between
// them; for |p| <= 1024 that needs p within 2^-13 of one, and then this
// returns false (about one vector in 250 of random sums; every tie) for the
// caller's double path. Above 1024 either rounding saturates to the same
// byte (a zero point lies within [-128, 255]). Half the instructions of two
// round8_bounded calls and their widening.
template <typename T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline bool round16_float(__m512i sum, __m512 mult, float zero_point,
                                                                              __m128i& out) {
  constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
  const __m512 p = _mm512_mul_ps(_mm512_cvtepi32_ps(sum), mult);
  const __m512 r = _mm512_roundscale_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (_mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(p, r)), _mm512_set1_ps(0.5f - 1.0f / 8192), _CMP_GE_OQ)) return false;
  const __m512 q = _mm512_add_ps(r, _mm512_set1_ps(zero_point));
  out = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(q, _mm512_set1_ps(lo)), _mm512_set1_ps(hi))));
  return true;  // in range: the conversions are exact
}

__attribute__((target("avx512f"))) inline __m512d widen8(const int32_t* a) {
  return _mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
}

}  // namespace onnxscope::cpu
