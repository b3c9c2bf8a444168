// Cast's int64 -> float32 on CPUs with AVX2 but no AVX512DQ (whose vcvtqq2ps
// does it in one instruction). In a header so that a test can run it on any
// CPU with AVX2, AVX-512 ones included.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace onnxscope::cpu::avx2 {

// 8 at a time where all 8 lie in int32's range (token ids, positions, masks:
// nearly always), through vcvtdq2ps, which rounds the same value the same
// way; any other block one at a time. GCC's scalar loop ran [1,128,768] at
// 0.71x onnxruntime. Only call it where the CPU has AVX2.
__attribute__((target("avx2"))) inline void i64_to_f32(const int64_t* s, float* d, int64_t n) {
  const __m256i even_odd = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);  // low dwords, then high
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)), even_odd);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 4)), even_odd);
    const __m256i lo = _mm256_permute2x128_si256(a, b, 0x20), hi = _mm256_permute2x128_si256(a, b, 0x31);
    // In range: the high half is the low half's sign.
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi32(hi, _mm256_srai_epi32(lo, 31))) == -1) {
      _mm256_storeu_ps(d + i, _mm256_cvtepi32_ps(lo));
    } else {
      for (int64_t k = i; k < i + 8; ++k) d[k] = static_cast<float>(s[k]);
    }
  }
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

}  // namespace onnxscope::cpu::avx2
