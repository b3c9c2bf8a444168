// The recurrent layers' matrix-vector step (rnn/common.h), compiled for
// AVX-512, AVX2 and plain x86-64; the sums are the plain loop's in every one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_pd.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "reference/ops/rnn/common.h"

#include <immintrin.h>

#include <algorithm>

namespace onnxscope::ref {
namespace {

__attribute__((target_clones("avx512f", "avx2", "default")))
void matvec_n_clones(const std::vector<double>& MT, int64_t d, int64_t total_rows, int64_t row0, int64_t rows, int64_t cols,
                     const double* v, int64_t vs, double* out, int64_t os, int64_t n) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < rows; ++g) out[b * os + g] = 0.0;
  auto col = [&](int64_t i) { return MT.data() + (d * cols + i) * total_rows + row0; };
  int64_t i = 0;
  for (; i + 4 <= cols; i += 4) {
    const double *c0 = col(i), *c1 = col(i + 1), *c2 = col(i + 2), *c3 = col(i + 3);
    for (int64_t b = 0; b < n; ++b) {
      const double* vb = v + b * vs + i;
      const double v0 = vb[0], v1 = vb[1], v2 = vb[2], v3 = vb[3];
      double* o = out + b * os;
      for (int64_t g = 0; g < rows; ++g) {
        double acc = o[g];
        const double p0 = c0[g] * v0;
        acc = acc + p0;
        const double p1 = c1[g] * v1;
        acc = acc + p1;
        const double p2 = c2[g] * v2;
        acc = acc + p2;
        const double p3 = c3[g] * v3;
        acc = acc + p3;
        o[g] = acc;
      }
    }
  }
  for (; i < cols; ++i) {
    const double* c0 = col(i);
    for (int64_t b = 0; b < n; ++b) {
      const double vi = v[b * vs + i];
      double* o = out + b * os;
      for (int64_t g = 0; g < rows; ++g) {
        const double p = c0[g] * vi;
        o[g] = o[g] + p;
      }
    }
  }
}

// The same sums with the outputs in registers: blocks of 32 rows for NB
// vectors at a time, each accumulator taking the columns i = 0, 1, ... in
// order from 0.0 as the loop above does (a multiply, then an add).
template <int NB>
__attribute__((target("avx512f"))) void matvec_block_avx512(const double* M0, int64_t total_rows, int64_t rows, int64_t cols,
                                                           const double* v, int64_t vs, double* out, int64_t os) {
  for (int64_t g0 = 0; g0 < rows; g0 += 32) {
    __mmask8 m[4];
    for (int k = 0; k < 4; ++k) {
      const int64_t left = std::clamp<int64_t>(rows - g0 - 8 * k, 0, 8);
      m[k] = static_cast<__mmask8>((1u << left) - 1u);
    }
    __m512d acc[NB][4];
    for (int b = 0; b < NB; ++b)
      for (int k = 0; k < 4; ++k) acc[b][k] = _mm512_setzero_pd();
    for (int64_t i = 0; i < cols; ++i) {
      const double* col = M0 + i * total_rows + g0;
      __m512d c[4];
      for (int k = 0; k < 4; ++k) c[k] = _mm512_maskz_loadu_pd(m[k], col + 8 * k);
      for (int b = 0; b < NB; ++b) {
        const __m512d vb = _mm512_set1_pd(v[b * vs + i]);
        for (int k = 0; k < 4; ++k) acc[b][k] = _mm512_add_pd(acc[b][k], _mm512_mul_pd(c[k], vb));
      }
    }
    for (int b = 0; b < NB; ++b)
      for (int k = 0; k < 4; ++k) _mm512_mask_storeu_pd(out + b * os + g0 + 8 * k, m[k], acc[b][k]);
  }
}

__attribute__((target("avx512f"))) void matvec_avx512(const double* M0, int64_t total_rows, int64_t rows, int64_t cols,
                                                     const double* v, int64_t vs, double* out, int64_t os, int64_t n) {
  // Threes, and twos rather than a one left alone (4 = 2 + 2): a block of
  // one vector reads each column for a third of the work.
  int64_t b = 0;
  for (; n - b > 4 || n - b == 3; b += 3) matvec_block_avx512<3>(M0, total_rows, rows, cols, v + b * vs, vs, out + b * os, os);
  for (; n - b >= 2; b += 2) matvec_block_avx512<2>(M0, total_rows, rows, cols, v + b * vs, vs, out + b * os, os);
  if (n - b == 1) matvec_block_avx512<1>(M0, total_rows, rows, cols, v + b * vs, vs, out + b * os, os);
}

bool has_avx512() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

}  // namespace

// (A plain function around the clones: clang resolves multiversioned
// functions only for callers in their own file.)
void matvec_n(const std::vector<double>& MT, int64_t d, int64_t total_rows, int64_t row0, int64_t rows, int64_t cols,
              const double* v, int64_t vs, double* out, int64_t os, int64_t n) {
  if (has_avx512()) return matvec_avx512(MT.data() + d * cols * total_rows + row0, total_rows, rows, cols, v, vs, out, os, n);
  matvec_n_clones(MT, d, total_rows, row0, rows, cols, v, vs, out, os, n);
}

}  // namespace onnxscope::ref
