// The recurrent layers' matrix-vector step (rnn/common.h) over the panels of
// RecurrentWeights: AVX-512 or AVX2 with the sums in registers, or a plain loop
// compiled for AVX-512, FMA and x86-64; the same sums in every one. Each
// term is one fused multiply-add into the running sum (one rounding per
// term): the state is double, so the product of a weight and a state value
// is not exact in double, and rounding it before the add as well made the
// step twice the instructions on the same pipes (13.4 against 19.5 GMAC/s
// for a [384, 128] step of two vectors). std::fma is exact on every
// machine (in software where the CPU has no FMA), so the bits do not
// depend on the machine.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // no contraction but the fused multiply-adds written
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_pd.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "core/target_clones.h"
#include "reference/ops/rnn/common.h"
#include "reference/ops/math/vector_isa.h"

#include "cpu/thread_pool.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

namespace onnxscope::ref {
namespace {

constexpr int64_t P = RecurrentWeights::kPanel;
// Multiply-adds a thread's share of one step must have before the step is
// shared out: starting the other threads costs a few microseconds.
constexpr int64_t kPanelsWork = int64_t{1} << 17;

// The plain form: per vector and panel, 32 sums taking the columns in order.
template <typename T>
ONNXSCOPE_TARGET_CLONES("avx512f", "fma", "default")
void matvec_plain(const RecurrentWeights& w, const T* data, int64_t d, size_t s, const double* v, int64_t vs, double* out,
                  int64_t os, int64_t n, int64_t q0, int64_t q1) {
  const int64_t rows = w.segments[s].second, cols = w.cols;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t q = q0; q < q1; ++q) {
      const T* panel = data + w.panel_start(d, s, q);
      double acc[P] = {};
      for (int64_t i = 0; i < cols; ++i) {
        const double vi = v[b * vs + i];
        for (int64_t r = 0; r < P; ++r) acc[r] = std::fma(static_cast<double>(panel[i * P + r]), vi, acc[r]);
      }
      for (int64_t r = 0; r < P && q * P + r < rows; ++r) out[b * os + q * P + r] = acc[r];
    }
}

// Eight of a panel's values widened to double.
__attribute__((target("avx512f"))) inline __m512d load8(const double* p) { return _mm512_loadu_pd(p); }
__attribute__((target("avx512f"))) inline __m512d load8(const float* p) { return _mm512_cvtps_pd(_mm256_loadu_ps(p)); }

// The same sums with the accumulators in registers for NB vectors and Q
// panels at a time: each sum is a chain of dependent multiply-adds (4
// cycles each), so a block keeps at least 16 of them going (NB * Q * 4
// registers; two pipes need 8, and 8 left a GRU's step at 45% of the
// peak), and the panels' values are loaded once for the NB vectors.
template <int NB, int Q, typename T>
__attribute__((target("avx512f"))) void matvec_block_avx512(const RecurrentWeights& w, const T* data, int64_t d, size_t s,
                                                           const double* v, int64_t vs, double* out, int64_t os, int64_t q0,
                                                           int64_t q1) {
  const int64_t rows = w.segments[s].second, cols = w.cols;
  int64_t q = q0;
  for (; q + Q <= q1; q += Q) {
    const T* panel[Q];
    for (int j = 0; j < Q; ++j) panel[j] = data + w.panel_start(d, s, q + j);
    __m512d acc[NB][Q][4];
    for (int b = 0; b < NB; ++b)
      for (int j = 0; j < Q; ++j)
        for (int k = 0; k < 4; ++k) acc[b][j][k] = _mm512_setzero_pd();
    for (int64_t i = 0; i < cols; ++i) {
      __m512d c[Q][4];
      for (int j = 0; j < Q; ++j)
        for (int k = 0; k < 4; ++k) c[j][k] = load8(panel[j] + i * P + 8 * k);  // 32 adjacent values (zeros past the segment)
      for (int b = 0; b < NB; ++b) {
        const __m512d vb = _mm512_set1_pd(v[b * vs + i]);
        for (int j = 0; j < Q; ++j)
          for (int k = 0; k < 4; ++k) acc[b][j][k] = _mm512_fmadd_pd(c[j][k], vb, acc[b][j][k]);
      }
    }
    for (int j = 0; j < Q; ++j)
      for (int k = 0; k < 4; ++k) {
        const int64_t left = std::clamp<int64_t>(rows - (q + j) * P - 8 * k, 0, 8);
        const auto m = static_cast<__mmask8>((1u << left) - 1u);
        for (int b = 0; b < NB; ++b) _mm512_mask_storeu_pd(out + b * os + (q + j) * P + 8 * k, m, acc[b][j][k]);
      }
  }
  if constexpr (Q > 1) {
    if (q < q1) matvec_block_avx512<NB, 1>(w, data, d, s, v, vs, out, os, q, q1);  // the panels left over, one at a time
  }
}

template <typename T>
__attribute__((target("avx512f"))) void matvec_avx512(const RecurrentWeights& w, const T* data, int64_t d, size_t s,
                                                     const double* v, int64_t vs, double* out, int64_t os, int64_t n,
                                                     int64_t q0, int64_t q1) {
  // Fours (16 sums, 21 registers), then threes, and twos rather than a one
  // left alone (5 = 3 + 2): a block of one vector reads each panel for a
  // quarter of the work. Blocks of fewer vectors take more panels at once.
  int64_t b = 0;
  for (; n - b >= 6 || n - b == 4; b += 4) matvec_block_avx512<4, 1>(w, data, d, s, v + b * vs, vs, out + b * os, os, q0, q1);
  for (; n - b >= 3 && n - b != 4; b += 3) matvec_block_avx512<3, 1>(w, data, d, s, v + b * vs, vs, out + b * os, os, q0, q1);
  for (; n - b >= 2; b += 2) matvec_block_avx512<2, 2>(w, data, d, s, v + b * vs, vs, out + b * os, os, q0, q1);
  if (n - b == 1) matvec_block_avx512<1, 4>(w, data, d, s, v + b * vs, vs, out + b * os, os, q0, q1);
}

// The same sums in AVX2: a half panel (16 rows: 4 registers) for NB <= 2
// vectors at a time, the half panel's values loaded once for the NB.
__attribute__((target("avx2,fma"))) inline __m256d load4(const double* p) { return _mm256_loadu_pd(p); }
__attribute__((target("avx2,fma"))) inline __m256d load4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }

template <int NB, typename T>
__attribute__((target("avx2,fma"))) void matvec_block_avx2(const RecurrentWeights& w, const T* data, int64_t d, size_t s,
                                                          const double* v, int64_t vs, double* out, int64_t os, int64_t q0,
                                                          int64_t q1) {
  constexpr int64_t H = P / 2;
  const int64_t rows = w.segments[s].second, cols = w.cols;
  for (int64_t q = q0; q < q1; ++q) {
    const T* panel = data + w.panel_start(d, s, q);
    for (int64_t h = 0; h < P; h += H) {
      const int64_t left = std::clamp<int64_t>(rows - q * P - h, 0, H);
      if (left == 0) break;
      __m256d acc[NB][4];
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) acc[b][k] = _mm256_setzero_pd();
      for (int64_t i = 0; i < cols; ++i) {
        const T* col = panel + i * P + h;
        __m256d c[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) c[k] = load4(col + 4 * k);
#pragma GCC unroll 4
        for (int b = 0; b < NB; ++b) {
          const __m256d vb = _mm256_broadcast_sd(v + b * vs + i);
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) acc[b][k] = _mm256_fmadd_pd(c[k], vb, acc[b][k]);
        }
      }
#pragma GCC unroll 4
      for (int b = 0; b < NB; ++b) {
        alignas(32) double sums[H];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) _mm256_store_pd(sums + 4 * k, acc[b][k]);
        std::copy(sums, sums + left, out + b * os + q * P + h);
      }
    }
  }
}

template <typename T>
__attribute__((target("avx2,fma"))) void matvec_avx2(const RecurrentWeights& w, const T* data, int64_t d, size_t s,
                                                   const double* v, int64_t vs, double* out, int64_t os, int64_t n,
                                                   int64_t q0, int64_t q1) {
  int64_t b = 0;
  for (; n - b >= 2; b += 2) matvec_block_avx2<2>(w, data, d, s, v + b * vs, vs, out + b * os, os, q0, q1);
  if (n - b == 1) matvec_block_avx2<1>(w, data, d, s, v + b * vs, vs, out + b * os, os, q0, q1);
}

}  // namespace

void matvec_n(const RecurrentWeights& w, int64_t d, size_t s, const double* v, int64_t vs, double* out, int64_t os, int64_t n) {
  // Panels shared out to the threads when the step is large enough (a
  // batch of one leaves every thread but one idle otherwise; inside the
  // layer's own split over batch entries this runs inline). Each row is
  // still one thread's sum in one order: the bits do not change.
  const int64_t panels = (w.segments[s].second + P - 1) / P;
  const int64_t grain = std::max<int64_t>(1, kPanelsWork / std::max<int64_t>(1, P * w.cols * n));
  cpu::parallel_for(panels, grain, [&](int64_t q0, int64_t q1) {
    const math::VectorIsa isa = math::vector_isa();
    auto run = [&](const auto* data) {
      if (isa == math::VectorIsa::Avx512) return matvec_avx512(w, data, d, s, v, vs, out, os, n, q0, q1);
      if (isa == math::VectorIsa::Avx2) return matvec_avx2(w, data, d, s, v, vs, out, os, n, q0, q1);
      matvec_plain(w, data, d, s, v, vs, out, os, n, q0, q1);
    };
    if (w.is_float()) return run(w.floats->data());
    run(w.doubles->data());
  });
}

void matvec_n_plain(const RecurrentWeights& w, int64_t d, size_t s, const double* v, int64_t vs, double* out, int64_t os,
                    int64_t n) {
  const int64_t panels = (w.segments[s].second + P - 1) / P;
  if (w.is_float()) return matvec_plain(w, w.floats->data(), d, s, v, vs, out, os, n, 0, panels);
  matvec_plain(w, w.doubles->data(), d, s, v, vs, out, os, n, 0, panels);
}

}  // namespace onnxscope::ref
