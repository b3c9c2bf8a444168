// The 8-bit product's output stages (vnni_gemm.h), shared by its VNNI
// register tiles (vnni_gemm.cpp) and its AMX tiles (amx_gemm.cpp): each takes
// 16 int32 sums of one row and writes Y's 16 columns. Also the per-column
// values they read, prepared once per product (Columns).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/requantize_avx512.h"
#include "cpu/kernels/quantization/vnni_gemm.h"

namespace onnxscope::cpu::vnni {

// What a register tile needs besides its rows, from its first column on.
struct Tile {
  const int8_t* panels = nullptr;
  int64_t panel_bytes = 0, K = 0, K4 = 0;
  uint32_t flip = 0;
  const int32_t* start = nullptr;  // the sums' start per column (minus (za [+ 128]) * sum b)
  const int32_t* row_terms = nullptr;  // per tile row, added to each of its sums (b_offset), or none
  const double* bias = nullptr;    // requantize
  const double* mult = nullptr;
  const int32_t* bias_i = nullptr;  // requantize in float (RequantizeFloat)
  const float* mult_f = nullptr;
  const int32_t* addend = nullptr;  // scale_float (padded per column)
  const float* scale = nullptr;
  const float* bias_f = nullptr;  // scale_float, float Y (padded per column), or none
  bool add_in_int32 = false;      // scale_float: no sum plus addend leaves int32
  double zero_point = 0;
  int64_t ldy = 0;  // elements between Y's rows
  int last_lanes = 16;
};

// The epilogues: Y's 16 columns at out from the sums in `acc`.
struct StoreSums {  // the int32 sums themselves
  template <typename T>
  __attribute__((target("avx512f,avx512bw,avx512vl"))) static void store(const Tile&, int64_t, __m512i acc, T* out,
                                                                         __mmask16 m) {
    _mm512_mask_storeu_epi32(out, m, acc);
  }
};
struct Requantize {
  template <typename T>
  __attribute__((target("avx512f,avx512bw,avx512vl"))) static void store(const Tile& t, int64_t c, __m512i acc, T* out,
                                                                         __mmask16 m) {
    const __m512d zp = _mm512_set1_pd(t.zero_point);
    const __m512d lo = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(acc)), _mm512_loadu_pd(t.bias + c));
    const __m512d hi = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc, 1)), _mm512_loadu_pd(t.bias + c + 8));
    const __m128i v = narrow16<T>(round8_bounded<T>(_mm512_mul_pd(lo, _mm512_loadu_pd(t.mult + c)), zp),
                                  round8_bounded<T>(_mm512_mul_pd(hi, _mm512_loadu_pd(t.mult + c + 8)), zp));
    _mm_mask_storeu_epi8(out, m, v);
  }
};
// Requantize's results from float arithmetic (round16_float) where that is
// exact, else Requantize's: the small-K products (16-channel 1x1
// convolutions) spend most of their time in this stage.
struct RequantizeFloat {
  template <typename T>
  __attribute__((target("avx512f,avx512bw,avx512vl"))) static void store(const Tile& t, int64_t c, __m512i acc, T* out,
                                                                         __mmask16 m) {
    __m128i v;
    if (round16_float<T>(_mm512_add_epi32(acc, _mm512_loadu_si512(t.bias_i + c)), _mm512_loadu_ps(t.mult_f + c),
                         static_cast<float>(t.zero_point), v))
      _mm_mask_storeu_epi8(out, m, v);
    else
      Requantize::store<T>(t, c, acc, out, m);  // near a half: the exact path
  }
};
struct ScaleFloat {
  template <typename T>
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void store(const Tile& t, int64_t c, __m512i acc,
                                                                                  T* out, __mmask16 m) {
    const __m512i add = _mm512_loadu_si512(t.addend + c);
    // sum + addend exactly, then rounded once to float (store()'s
    // static_cast<float>(double)): in int32 where no sum plus addend can
    // leave it, else in double.
    __m512 f;
    if (t.add_in_int32) {
      f = _mm512_cvtepi32_ps(_mm512_add_epi32(acc, add));
    } else {
      const __m512d lo = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(acc)),
                                     _mm512_cvtepi32_pd(_mm512_castsi512_si256(add)));
      const __m512d hi = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc, 1)),
                                       _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(add, 1)));
      f = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
    }
    const __m512 v = _mm512_mul_ps(f, _mm512_loadu_ps(t.scale + c));
    if constexpr (std::is_same_v<T, float>) {
      _mm512_mask_storeu_ps(out, m, t.bias_f ? _mm512_add_ps(v, _mm512_loadu_ps(t.bias_f + c)) : v);
    } else {
      constexpr float lo_v = std::is_signed_v<T> ? -128.0f : 0.0f, hi_v = std::is_signed_v<T> ? 127.0f : 255.0f;
      const __m512 r = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                     _mm512_set1_ps(static_cast<float>(t.zero_point)));
      const __m512i q = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(lo_v)), _mm512_set1_ps(hi_v)));
      _mm_mask_storeu_epi8(out, m, _mm512_cvtepi32_epi8(q));  // in range: exact
    }
  }
};

// Per column, padded to whole panels: the sums' start (wrapping int32
// arithmetic: the result fits), and the stage's values; which stage runs.
struct Columns {
  std::vector<int32_t> start, addend, bias_i;
  std::vector<double> bias, mult;
  std::vector<float> scale, bias_f, mult_f;
  int64_t za = 0;         // A's zero point as the packed bytes see it (+ 128 for int8 A)
  bool bounded = true;    // every multiplier within requantize's fast range
  bool in_float = false;  // RequantizeFloat's conditions hold
  bool add_in_int32 = false;  // ScaleFloat: |sum| <= K * 255 * 255, plus the largest |addend|, within int32
};
Columns prepare(const Product& p);

// A tile's view of `c` from column n0 on (what does not depend on A's rows).
Tile tile_at(const Product& p, const Columns& c, int64_t n0);

// The AVX2 path (int8_gemm_avx2.cpp), where the CPU has no AVX-512 VNNI.
void run_avx2(const Product& p, const Columns& c);

// The AMX path (amx_gemm.cpp): true when it ran the product (AMX-INT8 there
// and the problem large enough), false to leave it to the VNNI tiles.
bool run_amx(const Product& p, const Columns& c);

}  // namespace onnxscope::cpu::vnni
