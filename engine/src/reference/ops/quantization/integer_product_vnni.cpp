// The exact 8-bit product on AVX-512 VNNI's 16-bit dot products
// (integer_product.h): A and B minus their zero points as int16 (at most
// 383 in magnitude), pairs of t multiplied and added into int32 lanes by
// vpdpwssd. Every partial sum is at most K * |a - za|max * |b - zb|max,
// which the caller keeps below 2^31, so the int32 sums are the integer sums
// exactly, the same values the double product gives, at 32 multiply-adds an
// instruction against its 8. Other CPUs, and larger K, take the double
// product.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/ops/quantization/integer_product.h"
#include "reference/thread_scratch.h"

namespace onnxscope::ref::detail {
namespace {

constexpr int64_t kCols = 32;                       // a panel of B: two vectors of 16 int32 sums
constexpr int64_t kRows = 8;                        // rows of A a tile keeps in registers
constexpr int64_t kRowGroup = 64;                   // rows one work item takes
constexpr int64_t kAChunkBytes = int64_t{4} << 20;  // A's rows packed at once

struct PanelTag;
struct RowsTag;

// Element (r, t) of m minus its zero point.
inline int16_t value16(const Int8Matrix& m, int64_t r, int64_t t) {
  const uint8_t b = m.data[r * m.row + t * m.col];
  const int64_t v = m.is_signed ? int64_t{static_cast<int8_t>(b)} : int64_t{b};
  return static_cast<int16_t>(v - m.zero->at(r));
}

// 32 bytes at p as int16 (int8 or uint8).
__attribute__((target("avx512f,avx512bw"))) inline __m512i widen32(const uint8_t* p, bool is_signed) {
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return is_signed ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
}

// Rows [i0, i0 + rows) of A as out[r * kp + t], t < K, zero past K and past
// the last row (rows_padded of them). A row's bytes adjacent: 32 at a time.
__attribute__((target("avx512f,avx512bw"))) void pack_rows(const Int8Matrix& a, int64_t i0, int64_t rows,
                                                           int64_t rows_padded, int64_t K, int64_t kp, int16_t* out) {
  for (int64_t r = 0; r < rows_padded; ++r) {
    int16_t* o = out + r * kp;
    if (r >= rows) {
      std::memset(o, 0, static_cast<size_t>(kp) * sizeof(int16_t));
      continue;
    }
    int64_t t = 0;
    if (a.col == 1) {
      const uint8_t* src = a.data + (i0 + r) * a.row;
      const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(a.zero->at(i0 + r)));
      for (; t + 32 <= K; t += 32) _mm512_storeu_si512(o + t, _mm512_sub_epi16(widen32(src + t, a.is_signed), z));
    }
    for (; t < K; ++t) o[t] = value16(a, i0 + r, t);
    for (t = K; t < kp; ++t) o[t] = 0;
  }
}

// Columns [j0, j0 + n) of B (bt's rows) as pairs of t, two vectors a pair:
// for a B whose columns are adjacent (bt.row == 1) and a whole panel, the
// pairs interleaved within each 128-bit lane (unpacklo / unpackhi of rows
// 2p and 2p + 1: vector 0 holds columns 0-3, 8-11, 16-19, 24-27, vector 1
// the others; kLaneCol maps them back); otherwise, an element at a time,
// column c's pair in the slot whose kLaneCol entry is c. Zero past K and
// past n.
constexpr int kLaneCol[32] = {0,  1,  2,  3,  8,  9,  10, 11, 16, 17, 18, 19, 24, 25, 26, 27,
                              4,  5,  6,  7,  12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31};

__attribute__((target("avx512f,avx512bw"))) void pack_panel(const Int8Matrix& bt, int64_t j0, int64_t n, int64_t K,
                                                            int64_t pairs, int16_t* out) {
  if (bt.row == 1 && n == kCols) {
    alignas(64) int16_t zs[kCols];
    for (int64_t c = 0; c < kCols; ++c) zs[c] = static_cast<int16_t>(bt.zero->at(j0 + c));
    const __m512i z = _mm512_load_si512(zs);
    for (int64_t p = 0; p < pairs; ++p) {
      const int64_t t0 = 2 * p, t1 = t0 + 1;
      const __m512i x0 = _mm512_sub_epi16(widen32(bt.data + j0 + t0 * bt.col, bt.is_signed), z);
      const __m512i x1 = t1 < K ? _mm512_sub_epi16(widen32(bt.data + j0 + t1 * bt.col, bt.is_signed), z) : _mm512_setzero_si512();
      _mm512_storeu_si512(out + p * 2 * kCols, _mm512_unpacklo_epi16(x0, x1));
      _mm512_storeu_si512(out + p * 2 * kCols + 32, _mm512_unpackhi_epi16(x0, x1));
    }
    return;
  }
  // Slot of column c in a pair's 64 values: the inverse of kLaneCol.
  int slot[kCols];
  for (int k = 0; k < kCols; ++k) slot[kLaneCol[k]] = k;
  std::memset(out, 0, static_cast<size_t>(pairs * 2 * kCols) * sizeof(int16_t));
  for (int64_t c = 0; c < n; ++c)
    for (int64_t t = 0; t < K; ++t) out[(t / 2) * 2 * kCols + slot[c] * 2 + t % 2] = value16(bt, j0 + c, t);
}

// c[r * kCols + j] = sum over t of a(r, t) * b(t, j) for r < kRows, j < kCols.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void tile(const int16_t* a, int64_t kp, const int16_t* panel,
                                                                  int64_t pairs, int32_t* c) {
  __m512i acc[kRows][2];
  for (auto& r : acc) r[0] = r[1] = _mm512_setzero_si512();
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512i b0 = _mm512_loadu_si512(panel + p * 2 * kCols), b1 = _mm512_loadu_si512(panel + p * 2 * kCols + 32);
#pragma GCC unroll 8
    for (int64_t r = 0; r < kRows; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * kp + 2 * p, sizeof pair);
      const __m512i av = _mm512_set1_epi32(pair);
      acc[r][0] = _mm512_dpwssd_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpwssd_epi32(acc[r][1], av, b1);
    }
  }
  for (int64_t r = 0; r < kRows; ++r) {
    _mm512_storeu_si512(c + r * kCols, acc[r][0]);
    _mm512_storeu_si512(c + r * kCols + 16, acc[r][1]);
  }
}

}  // namespace

namespace {
std::atomic<bool> g_vnni_on{true};
}  // namespace

void set_vnni_products(bool on) { g_vnni_on = on; }

bool integer_gemm8_vnni(const Int8Matrix& a, const Int8Matrix& bt, int64_t M, int64_t N, int64_t K, const math::RowSink& sink) {
  static const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vnni");
  if (!vnni || !g_vnni_on || M <= 0 || N <= 0 || K <= 0) return false;
  const int64_t kp = (K + 1) / 2 * 2, pairs = kp / 2, panels = (N + kCols - 1) / kCols;
  // A's rows a chunk at a time (a multiple of the row groups), packed once for every panel.
  const int64_t chunk = std::max<int64_t>(kRowGroup, kAChunkBytes / (2 * kp) / kRowGroup * kRowGroup);
  ThreadScratch<int16_t, RowsTag> ap;
  for (int64_t i0 = 0; i0 < M; i0 += chunk) {
    const int64_t rows = std::min(chunk, M - i0), rows_padded = (rows + kRows - 1) / kRows * kRows;
    ap->resize(static_cast<size_t>(rows_padded * kp));
    pack_rows(a, i0, rows, rows_padded, K, kp, ap->data());
    const int16_t* packed = ap->data();
    const int64_t groups = (rows + kRowGroup - 1) / kRowGroup;
    // Work items: a panel of B by a group of rows; each packs its panel.
    cpu::parallel_for(panels * groups, 1, [&](int64_t lo, int64_t hi) {
      ThreadScratch<int16_t, PanelTag> bp;
      bp->resize(static_cast<size_t>(pairs * 2 * kCols));
      int64_t packed_panel = -1;
      alignas(64) int32_t c[kRows * kCols];
      double v[kCols];
      for (int64_t item = lo; item < hi; ++item) {
        poll_deadline();
        const int64_t panel = item / groups, g = item % groups;
        const int64_t j0 = panel * kCols, n = std::min(kCols, N - j0);
        if (panel != packed_panel) {
          pack_panel(bt, j0, n, K, pairs, bp->data());
          packed_panel = panel;
        }
        const int64_t r_end = std::min(rows_padded, (g + 1) * kRowGroup);
        for (int64_t r0 = g * kRowGroup; r0 < r_end; r0 += kRows) {
          tile(packed + r0 * kp, kp, bp->data(), pairs, c);
          for (int64_t r = 0; r < kRows && r0 + r < rows; ++r) {
            for (int64_t k = 0; k < kCols; ++k) v[kLaneCol[k]] = static_cast<double>(c[r * kCols + k]);
            sink(i0 + r0 + r, j0, v, n);
          }
        }
      }
    });
  }
  return true;
}

}  // namespace onnxscope::ref::detail
