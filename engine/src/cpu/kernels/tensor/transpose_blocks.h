// Small matrix transposes in SSE2 registers (every x86-64 CPU has them):
// 16 x 16 bytes and 4 x 4 four-byte elements, and a tile of any size made
// of them with plain copies at its edges. Shared by the channels-last
// reorders (tensor/nhwc_reorder.cpp) and the 8-bit convolutions' output
// (quantization/conv_integer_product.cpp), where a byte at a time with a
// stride was most of a reorder's time.
#pragma once

#include <emmintrin.h>

#include <cstdint>
#include <cstring>

namespace onnxscope::cpu::blocks {

// dst[c * ldd + r] = src[r * lds + c] for r, c < 16: unpacking bytes, then
// pairs, fours and eights of rows.
inline void transpose16_u8(const uint8_t* src, int64_t lds, uint8_t* dst, int64_t ldd) {
  __m128i x[16], t[16];
  for (int i = 0; i < 16; ++i) x[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * lds));
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm_unpacklo_epi8(x[2 * i], x[2 * i + 1]);
    t[2 * i + 1] = _mm_unpackhi_epi8(x[2 * i], x[2 * i + 1]);
  }
  for (int q = 0; q < 16; q += 4) {  // rows q..q+3: columns 0-3, 4-7, 8-11, 12-15
    x[q] = _mm_unpacklo_epi16(t[q], t[q + 2]);
    x[q + 1] = _mm_unpackhi_epi16(t[q], t[q + 2]);
    x[q + 2] = _mm_unpacklo_epi16(t[q + 1], t[q + 3]);
    x[q + 3] = _mm_unpackhi_epi16(t[q + 1], t[q + 3]);
  }
  for (int h = 0; h < 16; h += 8)  // rows h..h+7: columns 0-1, 2-3, ..., 14-15
    for (int i = 0; i < 4; ++i) {
      t[h + 2 * i] = _mm_unpacklo_epi32(x[h + i], x[h + 4 + i]);
      t[h + 2 * i + 1] = _mm_unpackhi_epi32(x[h + i], x[h + 4 + i]);
    }
  for (int i = 0; i < 8; ++i) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * i) * ldd), _mm_unpacklo_epi64(t[i], t[8 + i]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * i + 1) * ldd), _mm_unpackhi_epi64(t[i], t[8 + i]));
  }
}

// The same for 4 x 4 elements of 4 bytes (any: the bits are moved, not read).
template <typename T>
inline void transpose4_32(const T* src, int64_t lds, T* dst, int64_t ldd) {
  static_assert(sizeof(T) == 4);
  __m128i x[4];
  for (int i = 0; i < 4; ++i) x[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i * lds));
  const __m128i t0 = _mm_unpacklo_epi32(x[0], x[1]), t1 = _mm_unpacklo_epi32(x[2], x[3]);
  const __m128i t2 = _mm_unpackhi_epi32(x[0], x[1]), t3 = _mm_unpackhi_epi32(x[2], x[3]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi64(t0, t1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + ldd), _mm_unpackhi_epi64(t0, t1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * ldd), _mm_unpacklo_epi64(t2, t3));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 3 * ldd), _mm_unpackhi_epi64(t2, t3));
}

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols: whole blocks
// in registers for 1- and 4-byte elements, the edges (and other sizes) a
// value at a time. Meant for tiles that stay in L1 (a few dozen rows).
template <typename T>
inline void transpose_tile(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd) {
  constexpr int64_t B = sizeof(T) == 1 ? 16 : sizeof(T) == 4 ? 4 : 1;
  int64_t r = 0;
  if constexpr (B > 1) {
    for (; r + B <= rows; r += B) {
      int64_t c = 0;
      for (; c + B <= cols; c += B) {
        if constexpr (sizeof(T) == 1) transpose16_u8(reinterpret_cast<const uint8_t*>(src + r * lds + c), lds,
                                                     reinterpret_cast<uint8_t*>(dst + c * ldd + r), ldd);
        else transpose4_32(src + r * lds + c, lds, dst + c * ldd + r, ldd);
      }
      for (; c < cols; ++c)  // the columns past the last block, of these rows
        for (int64_t rr = r; rr < r + B; ++rr) dst[c * ldd + rr] = src[rr * lds + c];
    }
  }
  for (int64_t c = 0; c < cols; ++c)  // the rows past the last block
    for (int64_t rr = r; rr < rows; ++rr) dst[c * ldd + rr] = src[rr * lds + c];
}

}  // namespace onnxscope::cpu::blocks
