// The 8-bit product of vnni_gemm.h on CPUs with AVX2 but no AVX-512 VNNI
// (AMD Zen 2 and 3, Intel before Ice Lake), from the same packed B. AVX2's
// byte product (vpmaddubsw, what onnxruntime and oneDNN use there) adds two
// u8 x s8 products in 16 bits and saturates: a [2,23] x [23,11] MatMulInteger
// came out 19337 off on an EPYC. Here both operands are widened to 16 bits
// first and vpmaddwd adds pairs in 32 bits, so every sum is exact (the
// reference's bits): each panel's four int8 k of a column are split into
// their even and odd bytes, sign-extended by shifts; A's four bytes are
// broadcast and split the same way, zero-extended.
//
// Register tiles of up to 4 rows by one 16-column panel; the int32 sums of
// a row's block of up to 64 columns then go through the stage in a loop
// cloned for AVX2: requantization as requantize_channels_last does it, or
// the float scale of vnni_epilogue.h's ScaleFloat, operation for operation.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // a product rounds before anything is added to it
#endif
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/target_clones.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/vnni_epilogue.h"
#include "cpu/kernels/quantization/vnni_gemm.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu::vnni {
namespace {

constexpr int64_t kRows = 4;    // rows per register tile: 8 accumulators, 4 widened B, 3 for A
constexpr int64_t kPanels = 4;  // panels per block of columns (a row's sums: 64 int32)

std::atomic<int64_t> g_products{0};

// A tile's accumulators start at the columns' start values; at the end
// each row's term (none: nullptr) is added and the rows stored 64 apart.
template <int R>
__attribute__((target("avx2"), always_inline)) inline void begin(const int32_t* start, __m256i (&acc)[R][2]) {
  const __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start));
  const __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(start + 8));
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    acc[r][0] = s0;
    acc[r][1] = s1;
  }
}
template <int R>
__attribute__((target("avx2"), always_inline)) inline void end(__m256i (&acc)[R][2], const int32_t* row_terms, int32_t* sums) {
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (row_terms) {
      const __m256i t = _mm256_set1_epi32(row_terms[r]);
      acc[r][0] = _mm256_add_epi32(acc[r][0], t);
      acc[r][1] = _mm256_add_epi32(acc[r][1], t);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + r * 64), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(sums + r * 64 + 8), acc[r][1]);
  }
}

// sums[r * 64 + c] for the tile's R rows a[r] (K bytes each) and the 16
// columns of `panel`: start[c] plus the products plus row_terms[r] (none:
// nullptr), in wrapping int32 as the VNNI tiles add them. Flip: A is int8,
// read as uint8 with its top bit flipped (the column sums take it away).
template <int R, bool Flip>
__attribute__((target("avx2"))) void panel_sums(const uint8_t* const* a, const int8_t* panel, int64_t K, int64_t K4,
                                                const int32_t* start, const int32_t* row_terms, int32_t* sums) {
  __m256i acc[R][2];
  begin<R>(start, acc);
  const __m256i low = _mm256_set1_epi32(0x00ff00ff);
  const int64_t whole = K / 4;
  for (int64_t k = 0; k < K4; ++k) {
    // Columns 0-7 and 8-15, four k each; as 16-bit lanes, k0 and k2 (even
    // bytes) and k1 and k3 (odd bytes), sign-extended.
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + k * 64));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + k * 64 + 32));
    const __m256i b0e = _mm256_srai_epi16(_mm256_slli_epi16(b0, 8), 8), b0o = _mm256_srai_epi16(b0, 8);
    const __m256i b1e = _mm256_srai_epi16(_mm256_slli_epi16(b1, 8), 8), b1o = _mm256_srai_epi16(b1, 8);
    const size_t bytes = k < whole ? 4 : static_cast<size_t>(K - 4 * whole);  // the last 1-3 k: zeros in the panel past K
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      uint32_t four = 0;
      if (bytes == 4) std::memcpy(&four, a[r] + 4 * k, 4);
      else std::memcpy(&four, a[r] + 4 * k, bytes);
      if constexpr (Flip) four ^= 0x80808080u;
      const __m256i x = _mm256_set1_epi32(static_cast<int>(four));
      const __m256i xe = _mm256_and_si256(x, low), xo = _mm256_srli_epi16(x, 8);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_add_epi32(_mm256_madd_epi16(xe, b0e), _mm256_madd_epi16(xo, b0o)));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_add_epi32(_mm256_madd_epi16(xe, b1e), _mm256_madd_epi16(xo, b1o)));
    }
  }
  end<R>(acc, row_terms, sums);
}

using PanelFn = void (*)(const uint8_t* const*, const int8_t*, int64_t, int64_t, const int32_t*, const int32_t*, int32_t*);

// The same sums from operands widened once beforehand (for products of many
// rows): `a` R rows of 2 * pairs int16 (`lda` apart), `b` one panel's
// pairs as [pair][16 columns][2 k] int16. A step is two loads of B and, per
// row, one broadcast from memory, two vpmaddwd and two adds: nothing left to
// shift, so up to 6 rows (12 accumulators) fit the 16 registers.
template <int R>
__attribute__((target("avx2"))) void wide_sums(const int16_t* a, int64_t lda, const int16_t* b, int64_t pairs,
                                               const int32_t* start, const int32_t* row_terms, int32_t* sums) {
  __m256i acc[R][2];
  begin<R>(start, acc);
  for (int64_t k = 0; k < pairs; ++k) {
    const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + k * 32));
    const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(b + k * 32 + 16));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      int two;
      std::memcpy(&two, a + r * lda + 2 * k, 4);
      const __m256i x = _mm256_set1_epi32(two);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
    }
  }
  end<R>(acc, row_terms, sums);
}

using WideFn = void (*)(const int16_t*, int64_t, const int16_t*, int64_t, const int32_t*, const int32_t*, int32_t*);
constexpr int64_t kWideRows = 6;
constexpr WideFn kWide[] = {wide_sums<1>, wide_sums<2>, wide_sums<3>, wide_sums<4>, wide_sums<5>, wide_sums<6>};

// One packed panel ([K4][16 columns][4 k] int8) as wide_sums reads it:
// [2 * K4 pairs][16 columns][2 k] int16, sign-extended.
__attribute__((target("avx2"))) void widen_panel(const int8_t* panel, int64_t K4, int16_t* out) {
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);  // k0k1 of four columns, then their k2k3
  for (int64_t k = 0; k < K4; ++k)
    for (int c = 0; c < 16; c += 4) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + k * 64 + c * 4));
      const __m256i w = _mm256_permutevar8x32_epi32(_mm256_cvtepi8_epi16(bytes), order);
      _mm_store_si128(reinterpret_cast<__m128i*>(out + (2 * k) * 32 + c * 2), _mm256_castsi256_si128(w));
      _mm_store_si128(reinterpret_cast<__m128i*>(out + (2 * k + 1) * 32 + c * 2), _mm256_extracti128_si256(w, 1));
    }
}

// A row's K bytes (top bits flipped for int8) as 2 * pairs int16, zero past
// K; returns their sum.
__attribute__((target("avx2"))) int64_t widen_row(const uint8_t* a, int64_t K, int64_t pairs, bool flip, int16_t* out) {
  const __m128i f = _mm_set1_epi8(flip ? static_cast<char>(0x80) : 0);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sum = _mm256_setzero_si256();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m256i w = _mm256_cvtepu8_epi16(_mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k)), f));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), w);
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(w, ones));
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  int64_t total = 0;
  for (int32_t v : lanes) total += v;
  for (; k < K; ++k) {
    out[k] = static_cast<int16_t>(a[k] ^ (flip ? 0x80 : 0));
    total += out[k];
  }
  for (; k < 2 * pairs; ++k) out[k] = 0;
  return total;
}

template <bool Flip>
PanelFn panel_for(int64_t rows) {
  switch (rows) {
    case 1: return panel_sums<1, Flip>;
    case 2: return panel_sums<2, Flip>;
    case 3: return panel_sums<3, Flip>;
    default: return panel_sums<4, Flip>;
  }
}

// ScaleFloat's stage (vnni_epilogue.h) on n sums of one row: sum + addend
// exactly, rounded once to float (an int32 add where add_in_int32 says it
// cannot overflow, else in double: the same float), times the column's
// scale; float Y adds bias_f; 8-bit Y rounds half to even (adding and taking
// away 1.5 * 2^23, exact once clamped to 2^22: larger values saturate
// either way), adds the zero point in float and saturates as MAXPS / MINPS
// do (NaN gives the low end).
template <typename T>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void scale_row(const int32_t* s, int64_t n, const int32_t* addend, bool add_in_int32, const float* scale,
               const float* bias_f, float zero_point, T* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float f = add_in_int32 ? static_cast<float>(static_cast<int32_t>(static_cast<uint32_t>(s[i]) + static_cast<uint32_t>(addend[i])))
                                 : static_cast<float>(static_cast<double>(s[i]) + static_cast<double>(addend[i]));
    const float v = f * scale[i];
    if constexpr (std::is_same_v<T, float>) {
      out[i] = bias_f ? v + bias_f[i] : v;
    } else {
      constexpr float kBig = 4194304.0f, kRound = 12582912.0f;  // 2^22, 1.5 * 2^23
      constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
      float x = v < -kBig ? -kBig : v;
      x = x > kBig ? kBig : x;
      float r = ((x + kRound) - kRound) + zero_point;
      r = r > lo ? r : lo;
      r = r < hi ? r : hi;
      out[i] = static_cast<T>(static_cast<int32_t>(r));
    }
  }
}

// The stage on R rows of sums (64 apart) for Y's rows r.. and columns
// n0..n0 + width.
void finish(const Product& p, const Columns& c, const int32_t* sums, int64_t R, int64_t r, int64_t n0, int64_t width) {
  const int64_t N = p.b->N;
  const int64_t esize = p.type == Product::Type::f32 || p.type == Product::Type::s32 ? 4 : 1;
  std::byte* y = p.y + (r * N + n0) * esize;
  switch (p.type) {
    case Product::Type::s32:
      for (int64_t i = 0; i < R; ++i) std::memcpy(y + i * N * 4, sums + i * 64, static_cast<size_t>(width) * 4);
      return;
    case Product::Type::f32:
      for (int64_t i = 0; i < R; ++i)
        scale_row(sums + i * 64, width, c.addend.data() + n0, c.add_in_int32, c.scale.data() + n0,
                  p.bias_float ? c.bias_f.data() + n0 : nullptr, 0.0f, reinterpret_cast<float*>(y) + i * N);
      return;
    case Product::Type::u8:
    case Product::Type::s8:
      break;
  }
  const bool u8 = p.type == Product::Type::u8;
  if (p.stage == Stage::requantize) {
    requantize_channels_last(sums, 64, R, width, p.bias ? p.bias + n0 : nullptr, c.mult.data() + n0, p.zero_point, u8, y, N,
                             c.in_float ? c.mult_f.data() + n0 : nullptr);
    return;
  }
  const auto zp = static_cast<float>(p.zero_point);
  for (int64_t i = 0; i < R; ++i) {
    if (u8)
      scale_row(sums + i * 64, width, c.addend.data() + n0, c.add_in_int32, c.scale.data() + n0, nullptr, zp,
                reinterpret_cast<uint8_t*>(y) + i * N);
    else
      scale_row(sums + i * 64, width, c.addend.data() + n0, c.add_in_int32, c.scale.data() + n0, nullptr, zp,
                reinterpret_cast<int8_t*>(y) + i * N);
  }
}

// b_offset * sum_k (a - za), in wrapping int32 (the sums fit); `sum` is of
// the bytes as the panels see them (flipped for int8).
int32_t row_term(const Product& p, const Columns& c, int64_t sum) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(p.b_offset * (sum - p.b->K * c.za))));
}

// Few rows (a product for each token of a decoder, a small batch): B read
// once, widened in registers as it comes.
void run_narrow(const Product& p, const Columns& c) {
  const PackedB& b = *p.b;
  const int64_t N = b.N, K = b.K, P = (N + 15) / 16;
  static const PanelFn plain[] = {panel_for<false>(1), panel_for<false>(2), panel_for<false>(3), panel_for<false>(4)};
  static const PanelFn flipped[] = {panel_for<true>(1), panel_for<true>(2), panel_for<true>(3), panel_for<true>(4)};
  const PanelFn* fns = p.a_signed ? flipped : plain;
  // Each row's term once (fewer than 12 rows), not once per panel.
  std::vector<int32_t> terms(static_cast<size_t>(p.b_offset ? p.rows : 0));
  for (int64_t r = 0; r < static_cast<int64_t>(terms.size()); ++r) {
    const uint8_t* row = p.row(r);
    int64_t sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += row[k] ^ (p.a_signed ? 0x80 : 0);
    terms[static_cast<size_t>(r)] = row_term(p, c, sum);
  }
  // Blocks of one panel's columns, split across the threads; each reads
  // its panel once for all the rows.
  parallel_for(P, 1, [&](int64_t j0, int64_t j1) {
    alignas(32) int32_t sums[kRows * 64];
    const uint8_t* rows[kRows];
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t n0 = j * 16, width = std::min<int64_t>(16, N - n0);
      for (int64_t r = 0; r < p.rows; r += kRows) {
        const int64_t R = std::min(kRows, p.rows - r);
        for (int64_t i = 0; i < R; ++i) rows[i] = p.row(r + i);
        fns[R - 1](rows, b.panels.data() + j * b.K4 * 64, K, b.K4, c.start.data() + n0, p.b_offset ? terms.data() + r : nullptr, sums);
        finish(p, c, sums, R, r, n0, width);
      }
    }
  });
}

// Many rows: each work item, a run of rows by a block of up to four panels,
// widens its panels once (L2-sized: 128 bytes per four k of a panel) and
// each tile's rows once, then runs wide_sums over them.
void run_wide(const Product& p, const Columns& c) {
  const PackedB& b = *p.b;
  const int64_t N = b.N, K = b.K, P = (N + 15) / 16, pairs = 2 * b.K4;
  const int64_t column_blocks = (P + kPanels - 1) / kPanels, per_block = (P + column_blocks - 1) / column_blocks;
  // Enough runs of rows for four items a thread, or runs of at most 240 rows.
  const int64_t want = std::max<int64_t>((4 * thread_count() + column_blocks - 1) / column_blocks, (p.rows + 239) / 240);
  const int64_t run = std::max<int64_t>(kWideRows, ((p.rows + want - 1) / want + kWideRows - 1) / kWideRows * kWideRows);
  const int64_t runs = (p.rows + run - 1) / run;
  parallel_for(runs * column_blocks, 1, [&](int64_t i0, int64_t i1) {
    alignas(32) int32_t sums[kWideRows * 64];
    int32_t row_terms[kWideRows];
    LineVector<int16_t> bw(static_cast<size_t>(per_block * pairs * 32));
    LineVector<int16_t> aw(static_cast<size_t>(kWideRows * 2 * pairs));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t r0 = item % runs * run, r1 = std::min(p.rows, r0 + run);
      const int64_t panel0 = item / runs * per_block, panels = std::min(per_block, P - panel0);
      const int64_t n0 = panel0 * 16, width = std::min(N, n0 + panels * 16) - n0;
      for (int64_t j = 0; j < panels; ++j) widen_panel(b.panels.data() + (panel0 + j) * b.K4 * 64, b.K4, bw.data() + j * pairs * 32);
      for (int64_t r = r0; r < r1; r += kWideRows) {
        const int64_t R = std::min(kWideRows, r1 - r);
        for (int64_t i = 0; i < R; ++i) {
          const int64_t sum = widen_row(p.row(r + i), K, pairs, p.a_signed, aw.data() + i * 2 * pairs);
          if (p.b_offset) row_terms[i] = row_term(p, c, sum);
        }
        for (int64_t j = 0; j < panels; ++j)
          kWide[R - 1](aw.data(), 2 * pairs, bw.data() + j * pairs * 32, pairs, c.start.data() + n0 + 16 * j,
                       p.b_offset ? row_terms : nullptr, sums + 16 * j);
        finish(p, c, sums, R, r, n0, width);
      }
    }
  });
}

}  // namespace

int64_t avx2_products() { return g_products.load(std::memory_order_relaxed); }

void run_avx2(const Product& p, const Columns& c) {
  g_products.fetch_add(1, std::memory_order_relaxed);
  // Widening B costs about what one row's products by it do.
  if (p.rows >= 2 * kWideRows) run_wide(p, c);
  else run_narrow(p, c);
}

}  // namespace onnxscope::cpu::vnni
