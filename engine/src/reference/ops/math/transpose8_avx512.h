// An 8 x 8 block of doubles transposed in AVX-512 registers, shared by the
// product's packers (math/gemm_f64.cpp: float rows; quantization/
// integer_product.cpp: 8-bit rows), which read eight rows of A a vector each
// and write a tile's panel t by t.
#pragma once

// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

namespace onnxscope::ref::math {

// dst[k * ld + i] = r[i][k] for i, k < 8: pairs within 128-bit lanes, then
// lanes across pairs of pairs.
__attribute__((target("avx512f"), always_inline)) inline void store_transposed8(const __m512d (&r)[8], double* dst,
                                                                                int64_t ld) {
  const __m512d t0 = _mm512_unpacklo_pd(r[0], r[1]), t1 = _mm512_unpackhi_pd(r[0], r[1]);
  const __m512d t2 = _mm512_unpacklo_pd(r[2], r[3]), t3 = _mm512_unpackhi_pd(r[2], r[3]);
  const __m512d t4 = _mm512_unpacklo_pd(r[4], r[5]), t5 = _mm512_unpackhi_pd(r[4], r[5]);
  const __m512d t6 = _mm512_unpacklo_pd(r[6], r[7]), t7 = _mm512_unpackhi_pd(r[6], r[7]);
  const __m512d u0 = _mm512_shuffle_f64x2(t0, t2, 0x88), u1 = _mm512_shuffle_f64x2(t0, t2, 0xDD);
  const __m512d u2 = _mm512_shuffle_f64x2(t1, t3, 0x88), u3 = _mm512_shuffle_f64x2(t1, t3, 0xDD);
  const __m512d u4 = _mm512_shuffle_f64x2(t4, t6, 0x88), u5 = _mm512_shuffle_f64x2(t4, t6, 0xDD);
  const __m512d u6 = _mm512_shuffle_f64x2(t5, t7, 0x88), u7 = _mm512_shuffle_f64x2(t5, t7, 0xDD);
  _mm512_storeu_pd(dst + 0 * ld, _mm512_shuffle_f64x2(u0, u4, 0x88));
  _mm512_storeu_pd(dst + 4 * ld, _mm512_shuffle_f64x2(u0, u4, 0xDD));
  _mm512_storeu_pd(dst + 2 * ld, _mm512_shuffle_f64x2(u1, u5, 0x88));
  _mm512_storeu_pd(dst + 6 * ld, _mm512_shuffle_f64x2(u1, u5, 0xDD));
  _mm512_storeu_pd(dst + 1 * ld, _mm512_shuffle_f64x2(u2, u6, 0x88));
  _mm512_storeu_pd(dst + 5 * ld, _mm512_shuffle_f64x2(u2, u6, 0xDD));
  _mm512_storeu_pd(dst + 3 * ld, _mm512_shuffle_f64x2(u3, u7, 0x88));
  _mm512_storeu_pd(dst + 7 * ld, _mm512_shuffle_f64x2(u3, u7, 0xDD));
}

}  // namespace onnxscope::ref::math
