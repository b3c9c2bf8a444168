// The VNNI 8-bit product of vnni_gemm.h: register tiles of 6 rows by up to
// 64 columns (four 16-column panels), vpdpbusd over groups of four k, then the
// output stage on the tile while it is in registers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // a product rounds before anything is added to it
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "core/cpu_features.h"
#include "cpu/kernels/quantization/vnni_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/vnni_epilogue.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu::vnni {
namespace {

constexpr int64_t kRows = 6;    // rows per register tile
constexpr int64_t kPanels = 4;  // 16-column panels per register tile

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

bool vnni_available() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512vnni") && ONNXSCOPE_CPU_AVX512("avx512bw") &&
                          ONNXSCOPE_CPU_AVX512("avx512vl") && ONNXSCOPE_CPU_AVX512("avx512dq");
  return yes;
}

bool available() {
  static const bool yes = vnni_available() || __builtin_cpu_supports("avx2");
  return yes;
}

namespace {
std::atomic<bool> g_vnni{true};
}

void set_vnni(bool enabled) { g_vnni.store(enabled, std::memory_order_relaxed); }
bool vnni_allowed() { return g_vnni.load(std::memory_order_relaxed); }

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

Columns prepare(const Product& p) {
  const PackedB& b = *p.b;
  const int64_t N = b.N, padded = (N + 15) / 16 * 16;
  const auto size = static_cast<size_t>(padded);
  Columns c;
  c.start.assign(size, 0);
  c.addend.assign(size, 0);
  c.bias.assign(size, 0.0);
  c.mult.assign(size, 0.0);
  c.scale.assign(size, 0.0f);
  c.bias_f.assign(p.bias_float ? size : 0, 0.0f);
  c.bias_i.assign(size, 0);
  c.mult_f.assign(size, 0.0f);
  c.za = p.a_zero_point + (p.a_signed ? 128 : 0);
  const bool sums_only = p.type == Product::Type::s32;  // no stage: no stage values
  for (int64_t n = 0; n < N; ++n) {
    const size_t i = static_cast<size_t>(n);
    c.start[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(-c.za * b.column_sums[i])));
    if (sums_only) continue;
    if (p.stage == Stage::requantize) {
      if (p.bias) c.bias[i] = p.bias[n];
      c.mult[i] = p.mult[n];
    } else {
      if (p.addend) c.addend[i] = p.addend[p.addend_step ? n : 0];
      c.scale[i] = p.scale[n];
      if (p.bias_float) c.bias_f[i] = p.bias_float[n];
    }
  }
  int64_t largest_addend = 0;
  for (int64_t n = 0; n < N; ++n) largest_addend = std::max<int64_t>(largest_addend, std::abs(int64_t{c.addend[static_cast<size_t>(n)]}));
  c.add_in_int32 = b.K * 65025 + largest_addend <= int64_t{INT32_MAX};
  c.bounded =
      sums_only || p.stage != Stage::requantize || std::all_of(c.mult.begin(), c.mult.begin() + N, bounded_multiplier);
  // RequantizeFloat's values and conditions.
  c.in_float = !sums_only && p.stage == Stage::requantize && float_requantization(c.mult.data(), N, p.bias, b.K);
  for (int64_t n = 0; n < N && c.in_float; ++n) {
    c.bias_i[static_cast<size_t>(n)] = p.bias ? p.bias[n] : 0;
    c.mult_f[static_cast<size_t>(n)] = static_cast<float>(c.mult[static_cast<size_t>(n)]);
  }
  return c;
}

Tile tile_at(const Product& p, const Columns& c, int64_t n0) {
  const PackedB& b = *p.b;
  Tile t;
  t.panels = b.panels.data() + n0 / 16 * b.K4 * 64;
  t.panel_bytes = b.K4 * 64;
  t.K = b.K;
  t.K4 = b.K4;
  t.flip = p.a_signed ? 0x80808080u : 0u;
  t.start = c.start.data() + n0;
  t.bias = c.bias.data() + n0;
  t.mult = c.mult.data() + n0;
  t.bias_i = c.bias_i.data() + n0;
  t.mult_f = c.mult_f.data() + n0;
  t.addend = c.addend.data() + n0;
  t.scale = c.scale.data() + n0;
  t.bias_f = p.bias_float ? c.bias_f.data() + n0 : nullptr;
  t.zero_point = p.zero_point;
  t.add_in_int32 = c.add_in_int32;
  return t;
}

void run(const Product& p) {
  const Columns c = prepare(p);
  if (!vnni_available() || !vnni_allowed()) return run_avx2(p, c);
  if (run_amx(p, c)) return;
  const PackedB& b = *p.b;
  const int64_t N = b.N, P = (N + 15) / 16;
  const int64_t za = c.za;
  const bool bounded = c.bounded, in_float = c.in_float;
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
      Tile t = tile_at(p, c, n0);
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
          requantize_channels_last(sums, 64, R, n1 - n0, p.bias ? p.bias + n0 : nullptr, c.mult.data() + n0, p.zero_point,
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
