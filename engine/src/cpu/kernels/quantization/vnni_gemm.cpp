// The VNNI 8-bit product of vnni_gemm.h: register tiles of 6 rows by up to
// 64 columns (four 16-column panels), vpdpbusd over groups of four k, then the
// output stage on the tile while it is in registers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // a product rounds before anything is added to it
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "cpu/kernels/quantization/vnni_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/requantize_avx512.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu::vnni {
namespace {

constexpr int64_t kRows = 6;    // rows per register tile
constexpr int64_t kPanels = 4;  // 16-column panels per register tile

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
    // sum + addend exactly in double, then to float (store()'s static_cast<float>(double)).
    const __m512d lo = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(acc)),
                                     _mm512_cvtepi32_pd(_mm512_castsi512_si256(add)));
    const __m512d hi = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc, 1)),
                                     _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(add, 1)));
    const __m512 f = _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
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

// Y's rows [p, p + R) by panels [0, J) of the tile: the sums of the rows a[r]
// (K bytes each) by the panels, in registers (R * J <= 24 of the 32 zmm),
// then E's stage on each into out + r * ldy (T: Y's element type). The step
// is written out in the loop: through a helper taking the accumulators by
// reference GCC kept them on the stack.
// Flip: A is int8, its bytes' top bits flipped to uint8 after the broadcast
// (t.flip); without it the four bytes are broadcast straight from memory,
// no general-purpose register in between (that move and the xor were a
// quarter of a 16-channel 1x1 convolution's time on Zen 4).
template <int R, int J, class E, typename T, bool Flip>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq"))) void tile(const uint8_t* const* a, T* out,
                                                                                  const Tile& t) {
  __m512i acc[R][J];
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const __m512i s = _mm512_loadu_si512(t.start + 16 * j);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][j] = s;
  }
  const int64_t whole = t.K / 4;
  const uint8_t* row[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) row[r] = a[r];
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(t.flip));
  for (int64_t k = 0; k < t.K4; ++k) {
    __m512i b[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) b[j] = _mm512_loadu_si512(t.panels + j * t.panel_bytes + k * 64);
    if (k < whole) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        int four;
        std::memcpy(&four, row[r] + 4 * k, 4);  // one unaligned load, broadcast
        __m512i x = _mm512_set1_epi32(four);
        if constexpr (Flip) x = _mm512_xor_si512(x, flip);
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], x, b[j]);
      }
    } else {
      const size_t bytes = static_cast<size_t>(t.K - 4 * whole);  // the last 1-3 k: zeros in the panels past K
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        uint32_t four = 0;
        std::memcpy(&four, row[r] + 4 * k, bytes);
        const __m512i x = _mm512_set1_epi32(static_cast<int>(four ^ t.flip));
#pragma GCC unroll 4
        for (int j = 0; j < J; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], x, b[j]);
      }
    }
  }
  if (t.row_terms) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512i add = _mm512_set1_epi32(t.row_terms[r]);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = _mm512_add_epi32(acc[r][j], add);
    }
  }
  const __mmask16 last = static_cast<__mmask16>((1u << t.last_lanes) - 1u);
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) E::store(t, 16 * j, acc[r][j], out + r * t.ldy + 16 * j, j + 1 < J ? 0xffff : last);
}

template <class E, typename T>
using TileFn = void (*)(const uint8_t* const*, T*, const Tile&);

template <int R, class E, typename T, bool Flip>
TileFn<E, T> tile_for(int64_t panels) {
  switch (panels) {
    case 1: return tile<R, 1, E, T, Flip>;
    case 2: return tile<R, 2, E, T, Flip>;
    case 3: return tile<R, 3, E, T, Flip>;
    default: return tile<R, 4, E, T, Flip>;
  }
}

template <class E, typename T, bool Flip>
TileFn<E, T> tile_for(int64_t rows, int64_t panels) {
  switch (rows) {
    case 1: return tile_for<1, E, T, Flip>(panels);
    case 2: return tile_for<2, E, T, Flip>(panels);
    case 3: return tile_for<3, E, T, Flip>(panels);
    case 4: return tile_for<4, E, T, Flip>(panels);
    case 5: return tile_for<5, E, T, Flip>(panels);
    default: return tile_for<6, E, T, Flip>(panels);
  }
}

template <class E, typename T>
TileFn<E, T> tile_for(int64_t rows, int64_t panels, bool flip) {
  return flip ? tile_for<E, T, true>(rows, panels) : tile_for<E, T, false>(rows, panels);
}

}  // namespace

bool available() {
  static const bool yes = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return yes;
}

bool pack(int64_t K, int64_t N, const std::function<int64_t(int64_t, int64_t)>& at, PackedB& out) {
  out.reset(K, N);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t v = at(k, n);
      if (v < -128 || v > 127) return false;
      out.panels[out.offset(k, n)] = static_cast<int8_t>(v);
      out.column_sums[static_cast<size_t>(n)] += v;
    }
  return true;
}

void pack_bytes(const uint8_t* b, int64_t K, int64_t N, int64_t ldb, bool b_signed, PackedB& out) {
  out.reset(K, N);
  const uint8_t flip = b_signed ? 0 : 0x80;  // uint8 b - 128 is b's bits with the top one flipped, as int8
  for (int64_t k = 0; k < K; ++k) {
    const uint8_t* row = b + k * ldb;
    int8_t* dst = out.panels.data() + (k / 4) * 64 + k % 4;
    for (int64_t n = 0; n < N; ++n) {
      const auto v = static_cast<int8_t>(row[n] ^ flip);
      dst[(n / 16) * out.K4 * 64 + (n % 16) * 4] = v;
      out.column_sums[static_cast<size_t>(n)] += v;
    }
  }
}

void run(const Product& p) {
  const PackedB& b = *p.b;
  const int64_t N = b.N, P = (N + 15) / 16, padded = P * 16;
  // Per column, padded to whole panels: the sums' start (wrapping int32
  // arithmetic: the result fits), and the stage's values.
  std::vector<int32_t> start(static_cast<size_t>(padded), 0), addend(static_cast<size_t>(padded), 0);
  std::vector<double> bias(static_cast<size_t>(padded), 0.0), mult(static_cast<size_t>(padded), 0.0);
  std::vector<float> scale(static_cast<size_t>(padded), 0.0f), bias_f(p.bias_float ? static_cast<size_t>(padded) : 0, 0.0f);
  const int64_t za = p.a_zero_point + (p.a_signed ? 128 : 0);
  const bool sums_only = p.type == Product::Type::s32;  // no stage: no stage values
  for (int64_t n = 0; n < N; ++n) {
    const size_t i = static_cast<size_t>(n);
    start[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(-za * b.column_sums[i])));
    if (sums_only) continue;
    if (p.stage == Stage::requantize) {
      if (p.bias) bias[i] = p.bias[n];
      mult[i] = p.mult[n];
    } else {
      if (p.addend) addend[i] = p.addend[p.addend_step ? n : 0];
      scale[i] = p.scale[n];
      if (p.bias_float) bias_f[i] = p.bias_float[n];
    }
  }
  const bool bounded =
      sums_only || p.stage != Stage::requantize || std::all_of(mult.begin(), mult.begin() + N, bounded_multiplier);
  // RequantizeFloat's values and conditions.
  std::vector<int32_t> bias_i(static_cast<size_t>(padded), 0);
  std::vector<float> mult_f(static_cast<size_t>(padded), 0.0f);
  const bool in_float = !sums_only && p.stage == Stage::requantize && float_requantization(mult.data(), N, p.bias, b.K);
  for (int64_t n = 0; n < N && in_float; ++n) {
    bias_i[static_cast<size_t>(n)] = p.bias ? p.bias[n] : 0;
    mult_f[static_cast<size_t>(n)] = static_cast<float>(mult[static_cast<size_t>(n)]);
  }
  const int64_t esize = p.type == Product::Type::f32 || p.type == Product::Type::s32 ? 4 : 1;
  // Work items: a run of rows by a block of columns, enough of them for the
  // threads (a 7x7 map with 1280 channels is one run); panels shared evenly
  // between the blocks (144 columns: 3 + 3 + 3 panels, not 4 + 4 + 1, whose
  // one-panel tiles broadcast six rows for four products). Column block
  // outer: its panels stay in L1 while the thread's runs of rows stream past.
  const int64_t column_blocks = (P + kPanels - 1) / kPanels, per_block = (P + column_blocks - 1) / column_blocks;
  const int64_t macs_per_row = b.K * std::min<int64_t>(N, per_block * 16);
  const int64_t run = std::clamp<int64_t>((int64_t{1} << 16) / std::max<int64_t>(macs_per_row, 1) / kRows * kRows, kRows, 240);
  const int64_t runs = (p.rows + run - 1) / run;
  parallel_for(runs * column_blocks, 1, [&](int64_t i0, int64_t i1) {
    alignas(64) int32_t sums[kRows * 64];
    const uint8_t* rows[kRows];
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t r0 = item % runs * run, r1 = std::min(p.rows, r0 + run);
      const int64_t panel0 = item / runs * per_block, panels = std::min(per_block, P - panel0);
      const int64_t n0 = panel0 * 16, n1 = std::min(N, n0 + panels * 16);
      Tile t;
      t.panels = b.panels.data() + panel0 * b.K4 * 64;
      t.panel_bytes = b.K4 * 64;
      t.K = b.K;
      t.K4 = b.K4;
      t.flip = p.a_signed ? 0x80808080u : 0u;
      t.start = start.data() + n0;
      t.bias = bias.data() + n0;
      t.mult = mult.data() + n0;
      t.bias_i = bias_i.data() + n0;
      t.mult_f = mult_f.data() + n0;
      t.addend = addend.data() + n0;
      t.scale = scale.data() + n0;
      t.bias_f = p.bias_float ? bias_f.data() + n0 : nullptr;
      t.zero_point = p.zero_point;
      t.last_lanes = static_cast<int>(n1 - (n0 + (panels - 1) * 16));
      int32_t row_terms[kRows];
      t.row_terms = p.b_offset ? row_terms : nullptr;
      for (int64_t r = r0; r < r1; r += kRows) {
        const int64_t R = std::min(kRows, r1 - r);
        for (int64_t i = 0; i < R; ++i) {
          rows[i] = p.row(r + i);
          if (p.b_offset) {  // b_offset * sum_k (a - za), in wrapping int32 (the sums fit)
            int64_t sum = 0;
            for (int64_t k = 0; k < b.K; ++k) sum += rows[i][k] ^ (p.a_signed ? 0x80 : 0);
            row_terms[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(p.b_offset * (sum - b.K * za))));
          }
        }
        std::byte* y = p.y + (r * N + n0) * esize;
        if (p.type == Product::Type::s32) {
          t.ldy = N;
          tile_for<StoreSums, int32_t>(R, panels, p.a_signed)(rows, reinterpret_cast<int32_t*>(y), t);
          continue;
        }
        if (!bounded) {  // the sums, then the reference's requantization of each
          t.ldy = 64;
          tile_for<StoreSums, int32_t>(R, panels, p.a_signed)(rows, sums, t);
          requantize_channels_last(sums, 64, R, n1 - n0, p.bias ? p.bias + n0 : nullptr, mult.data() + n0, p.zero_point,
                                   p.type == Product::Type::u8, y, N);
          continue;
        }
        t.ldy = N;
        const bool requant = p.stage == Stage::requantize;
        switch (p.type) {
          case Product::Type::u8:
            if (requant && in_float) tile_for<RequantizeFloat, uint8_t>(R, panels, p.a_signed)(rows, reinterpret_cast<uint8_t*>(y), t);
            else if (requant) tile_for<Requantize, uint8_t>(R, panels, p.a_signed)(rows, reinterpret_cast<uint8_t*>(y), t);
            else tile_for<ScaleFloat, uint8_t>(R, panels, p.a_signed)(rows, reinterpret_cast<uint8_t*>(y), t);
            break;
          case Product::Type::s8:
            if (requant && in_float) tile_for<RequantizeFloat, int8_t>(R, panels, p.a_signed)(rows, reinterpret_cast<int8_t*>(y), t);
            else if (requant) tile_for<Requantize, int8_t>(R, panels, p.a_signed)(rows, reinterpret_cast<int8_t*>(y), t);
            else tile_for<ScaleFloat, int8_t>(R, panels, p.a_signed)(rows, reinterpret_cast<int8_t*>(y), t);
            break;
          case Product::Type::f32:
            tile_for<ScaleFloat, float>(R, panels, p.a_signed)(rows, reinterpret_cast<float*>(y), t);
            break;
          case Product::Type::s32:
            break;  // above
        }
      }
    }
  });
}

}  // namespace onnxscope::cpu::vnni
