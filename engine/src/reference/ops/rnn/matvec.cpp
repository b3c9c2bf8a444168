// The recurrent layers' matrix-vector step (rnn/common.h), compiled for
// AVX-512, AVX2 and plain x86-64; the sums are the plain loop's in every one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
#include "reference/ops/rnn/common.h"

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

}  // namespace

// (A plain function around the clones: clang resolves multiversioned
// functions only for callers in their own file.)
void matvec_n(const std::vector<double>& MT, int64_t d, int64_t total_rows, int64_t row0, int64_t rows, int64_t cols,
              const double* v, int64_t vs, double* out, int64_t os, int64_t n) {
  matvec_n_clones(MT, d, total_rows, row0, rows, cols, v, vs, out, os, n);
}

}  // namespace onnxscope::ref
