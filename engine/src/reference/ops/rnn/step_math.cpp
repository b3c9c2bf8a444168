// The recurrent layers' elementwise arithmetic of one step over a row of
// hidden values (rnn/common.h), compiled for AVX-512, AVX2 and x86-64: the
// same operations in the same order in every lane as the scalar loop, so each
// form gives the same bits.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
#include <algorithm>

#include "core/target_clones.h"
#include "reference/ops/rnn/common.h"

namespace onnxscope::ref {
namespace {

inline double clip_to(double v, double clip) { return clip > 0 ? std::min(std::max(v, -clip), clip) : v; }

}  // namespace

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void gate_sums(double* out, const double* a, const double* b, const double* c, const double* d, int64_t n, double clip) {
  for (int64_t k = 0; k < n; ++k) out[k] = clip_to(((a[k] + b[k]) + c[k]) + d[k], clip);
}

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void gate_sums_peephole(double* out, const double* a, const double* b, const double* c, const double* d, const double* p,
                        const double* s, int64_t n, double clip) {
  for (int64_t k = 0; k < n; ++k) out[k] = clip_to((((a[k] + b[k]) + c[k]) + d[k]) + p[k] * s[k], clip);
}

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void lstm_cell(double* c, double* o, double* hc, const double* i, const double* f, const double* g, bool input_forget,
               const double* a, const double* b, const double* wb, const double* rb, const double* po, int64_t n,
               double clip) {
  for (int64_t k = 0; k < n; ++k) {
    const double cprev = c[k];
    // input_forget couples the gates: the forget gate is 1 - it.
    const double f_t = input_forget ? 1 - i[k] : f[k];
    const double ct = f_t * cprev + i[k] * g[k];
    o[k] = clip_to((((a[k] + b[k]) + wb[k]) + rb[k]) + po[k] * ct, clip);
    c[k] = ct;
    hc[k] = ct;
  }
}

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void gru_state(double* h, const double* z, const double* hnew, int64_t n) {
  for (int64_t k = 0; k < n; ++k) h[k] = (1 - z[k]) * hnew[k] + z[k] * h[k];
}

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void product(double* out, const double* a, const double* b, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = a[k] * b[k];
}

}  // namespace onnxscope::ref
