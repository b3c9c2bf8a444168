// The reference's double-precision matrix product (gemm_f64.h): blocks of
// 96 rows x 256 columns of the result are independent work items on the
// thread pool; each is packed into double and computed in tiles of 6 x 16
// kept in registers while t runs from 0 to K - 1. The compiler may not
// contract a multiply and an add into an FMA (which rounds once where the
// plain loop rounds twice); the tile uses FMA itself only where the products
// are exact (float operands), where it rounds as the pair does. So AVX-512,
// the plain loop and any blocking give the same bits.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_pd.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "reference/ops/math/gemm_f64.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"

namespace onnxscope::ref::math {
namespace {

constexpr int64_t kMR = 6, kNR = 16;            // a register tile
constexpr int64_t kMC = 16 * kMR, kNC = 16 * kNR;  // a work item: its packing is 1/96 + 1/256 of its products

// c[r][j] = sum over t of a[t][r] * b[t][j], t in order. Fused: with
// fused multiply-adds, for exact products (gemm_f64.h), where acc + a * b
// rounds once either way; otherwise a multiply and an add.
template <bool Fused>
__attribute__((target("avx512f"))) void tile_avx512(int64_t K, const double* a, const double* b, double* c) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  __m512d acc[kMR][2];
  for (int r = 0; r < kMR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
  for (int64_t t = 0; t < K; ++t) {
    const __m512d b0 = _mm512_loadu_pd(b + t * kNR), b1 = _mm512_loadu_pd(b + t * kNR + 8);
    for (int r = 0; r < kMR; ++r) {
      const __m512d av = _mm512_set1_pd(a[t * kMR + r]);
      if constexpr (Fused) {
        acc[r][0] = _mm512_fmadd_pd(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_pd(av, b1, acc[r][1]);
      } else {
        acc[r][0] = _mm512_add_pd(acc[r][0], _mm512_mul_pd(av, b0));
        acc[r][1] = _mm512_add_pd(acc[r][1], _mm512_mul_pd(av, b1));
      }
    }
  }
  for (int r = 0; r < kMR; ++r) {
    _mm512_storeu_pd(c + r * kNR, acc[r][0]);
    _mm512_storeu_pd(c + r * kNR + 8, acc[r][1]);
  }
}

void tile_plain(int64_t K, const double* a, const double* b, double* c) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  double acc[kMR][kNR] = {};
  for (int64_t t = 0; t < K; ++t)
    for (int r = 0; r < kMR; ++r) {
      const double av = a[t * kMR + r];
      for (int j = 0; j < kNR; ++j) {
        const double p = av * b[t * kNR + j];
        acc[r][j] = acc[r][j] + p;
      }
    }
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) c[r * kNR + j] = acc[r][j];
}

using TileFn = void (*)(int64_t, const double*, const double*, double*);

}  // namespace

namespace {

__attribute__((target_clones("avx512f", "avx2", "default"))) void widen_rows(const float* src, int64_t stride, double* dst,
                                                                          int64_t K, int64_t groups, int64_t width) {
  for (int64_t t = 0; t < K; ++t)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t k = 0; k < width; ++k) dst[(g * K + t) * width + k] = static_cast<double>(src[t * stride + g * width + k]);
}
}  // namespace

// (A plain function around the clones: clang resolves multiversioned
// functions only for callers in their own file.)
void detail::widen(const float* src, int64_t stride, double* dst, int64_t K, int64_t groups, int64_t width) {
  widen_rows(src, stride, dst, K, groups, width);
}

namespace {

TileFn best_tile(bool exact_products) {
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  return !avx512 ? tile_plain : exact_products ? tile_avx512<true> : tile_avx512<false>;
}

}  // namespace

void gemm_packed(const Packer& a, const Packer& b, int64_t M, int64_t N, int64_t K, const RowSink& sink,
                 bool exact_products) {
  if (M <= 0 || N <= 0) return;
  const int64_t row_groups = (M + kMC - 1) / kMC, col_groups = (N + kNC - 1) / kNC;
  const TileFn tile = best_tile(exact_products);
  cpu::parallel_for(row_groups * col_groups, 1, [&](int64_t lo, int64_t hi) {
    thread_local std::vector<double> ap, bp;
    double c[kMR * kNR];
    for (int64_t item = lo; item < hi; ++item) {
      poll_deadline();  // a run's time limit holds inside one long product too
      const int64_t i0 = (item / col_groups) * kMC, j0 = (item % col_groups) * kNC;
      const int64_t rows = std::min(kMC, M - i0), cols = std::min(kNC, N - j0);
      const int64_t rb = (rows + kMR - 1) / kMR, cb = (cols + kNR - 1) / kNR;
      ap.resize(static_cast<size_t>(rb * K * kMR + 1));
      bp.resize(static_cast<size_t>(cb * K * kNR + 1));
      a.fn(a.ctx, i0, rows, K, kMR, ap.data());
      b.fn(b.ctx, j0, cols, K, kNR, bp.data());
      for (int64_t p = 0; p < cb; ++p)
        for (int64_t r = 0; r < rb; ++r) {
          tile(K, ap.data() + r * K * kMR, bp.data() + p * K * kNR, c);
          const int64_t n = std::min(kNR, cols - p * kNR);
          for (int64_t rr = 0; rr < kMR && r * kMR + rr < rows; ++rr) sink(i0 + r * kMR + rr, j0 + p * kNR, c + rr * kNR, n);
        }
    }
  });
}

}  // namespace onnxscope::ref::math
