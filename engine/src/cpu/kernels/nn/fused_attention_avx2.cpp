// onnxscope.cpu FusedAttention's steps on AVX2 and FMA (fused_attention.h),
// for CPUs without AVX-512: the AVX-512 steps' operations on 8 lanes.
// AVX2's 16 registers hold 6 query rows by 16 keys of scores (or 16
// columns of Y) with the two loads and a broadcast, so rows go 6 at a time
// where AVX-512 takes 8; K^T is packed by 8 x 8 transposes; partial vectors are masked
// loads and stores (AVX2 has no mask registers: a lane past the end is
// neither read nor written).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/nn/fused_attention.h"

namespace onnxscope::cpu::attention {
namespace {

#define ONNXSCOPE_AVX2_FN __attribute__((target("avx2,fma")))

// kt[d * ld + t] = k(t, d) * scale_k, the keys T .. ld as zeros: blocks of 8
// keys by 8 dims through a transpose (a key past T, or a dim past D, read as
// nothing and written as zero or not at all).
ONNXSCOPE_AVX2_FN void pack_kt_impl(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld) {
  const float* k = p.k.row(b, h, 0);
  const int64_t stride = p.k.bshd ? p.H * p.D : p.D;
  const __m256 sk = _mm256_set1_ps(p.scale_k);
  for (int64_t t0 = 0; t0 < ld; t0 += 8) {
    const int64_t keys = std::clamp<int64_t>(p.T - t0, 0, 8);
    for (int64_t d0 = 0; d0 < p.D; d0 += 8) {
      const int64_t dims = std::min<int64_t>(8, p.D - d0);
      const __m256i dm = avx2::tail_mask(dims);
      __m256 r[8];
      for (int64_t t = 0; t < 8; ++t) {
        const float* kr = k + (t0 + t) * stride + d0;
        r[t] = t >= keys ? _mm256_setzero_ps() : _mm256_mul_ps(dims == 8 ? _mm256_loadu_ps(kr) : _mm256_maskload_ps(kr, dm), sk);
      }
      avx2::transpose8(r);
      for (int64_t d = 0; d < dims; ++d) _mm256_storeu_ps(kt + (d0 + d) * ld + t0, r[d]);
    }
  }
}

// Scores of R query rows (q already scaled, [R][D] in qs) against the keys
// t0 .. (C vectors of 8; `cols` of them written): sums over d in order.
template <int R, int C>
ONNXSCOPE_AVX2_FN void scores_block(const float* qs, int64_t D, const float* kt, int64_t ld, int64_t t0, int64_t cols,
                                    float* s, int64_t lds) {
  __m256 acc[R][C];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  const float* kp = kt + t0;
  for (int64_t d = 0; d < D; ++d, kp += ld) {
    __m256 kv[C];
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) kv[c] = _mm256_loadu_ps(kp + 8 * c);  // (kt's padding is zeros)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(qs + r * D + d);
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(a, kv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) {
      float* at = s + r * lds + t0 + 8 * c;
      if (cols >= 8 * (c + 1)) _mm256_storeu_ps(at, acc[r][c]);
      else _mm256_maskstore_ps(at, avx2::tail_mask(cols - 8 * c), acc[r][c]);
    }
}

template <int R>
void scores_rows(const float* qs, int64_t D, const float* kt, int64_t ld, int64_t T, float* s, int64_t lds) {
  int64_t t0 = 0;
  for (; t0 + 8 < T; t0 += 16) scores_block<R, 2>(qs, D, kt, ld, t0, std::min<int64_t>(16, T - t0), s, lds);
  if (t0 < T) scores_block<R, 1>(qs, D, kt, ld, t0, T - t0, s, lds);
}

// One row of scores: * scale, + mask, then the softmax in place and the NaN
// guard. Whole vectors are plain loads and stores; the last partial one is
// masked (a lane past T is read as nothing: -inf for the maximum, 0 for the
// sum, and never stored). Masked stores are slow on AMD's cores.
template <bool Tail>
ONNXSCOPE_AVX2_FN inline __m256 load_part(const float* x, __m256i k) {
  return Tail ? _mm256_maskload_ps(x, k) : _mm256_loadu_ps(x);
}
template <bool Tail>
ONNXSCOPE_AVX2_FN inline void store_part(float* x, __m256i k, __m256 v) {
  if (Tail) _mm256_maskstore_ps(x, k, v);
  else _mm256_storeu_ps(x, v);
}

// x * scale (+ mask) at t, stored, into the running maximum.
template <bool Tail>
ONNXSCOPE_AVX2_FN inline __m256 scaled_masked(float* s, int64_t t, __m256i tail, float scale, const float* mask, bool mask_bcast,
                                             __m256 mx) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 x = load_part<Tail>(s + t, tail);
  if (scale != 1.0f) x = _mm256_mul_ps(x, _mm256_set1_ps(scale));
  if (mask) x = _mm256_add_ps(x, mask_bcast ? _mm256_set1_ps(mask[0]) : load_part<Tail>(mask + t, tail));
  store_part<Tail>(s + t, tail, x);
  if constexpr (Tail) x = _mm256_blendv_ps(ninf, x, _mm256_castsi256_ps(tail));
  // max_ps gives its second operand where either is NaN: a NaN score is
  // skipped here (its e^(x - m) is NaN below).
  return _mm256_max_ps(x, mx);
}

// e at t times 1 / sum, below FLT_MIN as 0, NaN as 0 where guarded.
template <bool Tail>
ONNXSCOPE_AVX2_FN inline void normalized(float* s, int64_t t, __m256i tail, __m256 inv, bool nan_to_zero) {
  __m256 q = _mm256_mul_ps(load_part<Tail>(s + t, tail), inv);
  q = _mm256_andnot_ps(_mm256_cmp_ps(q, _mm256_set1_ps(1.17549435e-38f), _CMP_LT_OQ), q);
  if (nan_to_zero) q = _mm256_andnot_ps(_mm256_cmp_ps(q, q, _CMP_UNORD_Q), q);
  store_part<Tail>(s + t, tail, q);
}

ONNXSCOPE_AVX2_FN void softmax_row(float* s, int64_t T, float scale, const float* mask, bool mask_bcast, bool nan_to_zero) {
  const int64_t whole = T / 8 * 8;
  const __m256i tail = avx2::tail_mask(T - whole);
  __m256 mx = _mm256_set1_ps(-INFINITY);
  for (int64_t t = 0; t < whole; t += 8) mx = scaled_masked<false>(s, t, tail, scale, mask, mask_bcast, mx);
  if (whole < T) mx = scaled_masked<true>(s, whole, tail, scale, mask, mask_bcast, mx);
  const __m256 m = _mm256_set1_ps(avx2::hmax(mx));
  __m256 sum = _mm256_setzero_ps();
  for (int64_t t = 0; t < whole; t += 8) {
    const __m256 e = avx2::exp<true>(_mm256_sub_ps(_mm256_loadu_ps(s + t), m));
    _mm256_storeu_ps(s + t, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (whole < T) {
    const __m256 e = _mm256_and_ps(avx2::exp<true>(_mm256_sub_ps(_mm256_maskload_ps(s + whole, tail), m)), _mm256_castsi256_ps(tail));
    _mm256_maskstore_ps(s + whole, tail, e);
    sum = _mm256_add_ps(sum, e);
  }
  const __m256 inv = _mm256_set1_ps(1.0f / avx2::hsum(sum));
  for (int64_t t = 0; t < whole; t += 8) normalized<false>(s, t, tail, inv, nan_to_zero);
  if (whole < T) normalized<true>(s, whole, tail, inv, nan_to_zero);
}

// Y rows i0 .. i0 + R of the Dv columns c0 .. (C vectors; `cols` of them):
// sum over t of P(i, t) * V(t, :), t in order. V's rows are `vstride`
// floats apart; the R rows share each load of V.
template <int R, int C, bool Whole>
ONNXSCOPE_AVX2_FN void values_block(const float* v, int64_t vstride, int64_t T, const float* s, int64_t lds, int64_t cols,
                                    float* const* y) {
  __m256 acc[R][C];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
  for (int64_t t = 0; t < T; ++t, v += vstride) {
    __m256 vv[C];
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) vv[c] = Whole ? _mm256_loadu_ps(v + 8 * c) : _mm256_maskload_ps(v + 8 * c, avx2::tail_mask(cols - 8 * c));
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(s + r * lds + t);
#pragma GCC unroll 2
      for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(a, vv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int c = 0; c < C; ++c) {
      if (Whole) _mm256_storeu_ps(y[r] + 8 * c, acc[r][c]);
      else _mm256_maskstore_ps(y[r] + 8 * c, avx2::tail_mask(cols - 8 * c), acc[r][c]);
    }
}

// Y's rows i0 .. i0 + R of head (b, h) from R rows of probabilities.
template <int R>
void values_rows(const Problem& p, int64_t b, int64_t h, const float* s, int64_t lds, int64_t i0) {
  const float* v = p.v.row(b, h, 0);
  const int64_t vstride = p.v.bshd ? p.H * p.Dv : p.Dv;
  float* y[R];
  for (int r = 0; r < R; ++r) y[r] = p.y_row(b, h, i0 + r);
  for (int64_t c0 = 0; c0 < p.Dv; c0 += 16) {
    float* yc[R];
    for (int r = 0; r < R; ++r) yc[r] = y[r] + c0;
    const int64_t cols = std::min<int64_t>(16, p.Dv - c0);
    if (cols == 16) values_block<R, 2, true>(v + c0, vstride, p.T, s, lds, cols, yc);
    else if (cols > 8) values_block<R, 2, false>(v + c0, vstride, p.T, s, lds, cols, yc);
    else values_block<R, 1, false>(v + c0, vstride, p.T, s, lds, cols, yc);
  }
}

// Query rows i0 .. i1 of head (b, h); kt: that head's K^T (ld floats a row).
void attend_rows_impl(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                      std::vector<float>& qs, std::vector<float>& s) {
  const int64_t lds = std::max<int64_t>(p.T, 1);
  for (int64_t i = i0; i < i1; i += 6) {  // (qs and s hold 8 rows)
    const int64_t rows = std::min<int64_t>(6, i1 - i);
    for (int64_t r = 0; r < rows; ++r) {
      const float* qr = p.q.row(b, h, i + r);
      for (int64_t d = 0; d < p.D; ++d) qs[static_cast<size_t>(r * p.D + d)] = qr[d] * p.scale_q;
    }
    float* sb = s.data();
    switch (rows) {  // (a work item's 32 rows: five blocks of 6 and one of 2)
      case 6: scores_rows<6>(qs.data(), p.D, kt, ld, p.T, sb, lds); break;
      case 5: scores_rows<5>(qs.data(), p.D, kt, ld, p.T, sb, lds); break;
      case 4: scores_rows<4>(qs.data(), p.D, kt, ld, p.T, sb, lds); break;
      case 3: scores_rows<3>(qs.data(), p.D, kt, ld, p.T, sb, lds); break;
      case 2: scores_rows<2>(qs.data(), p.D, kt, ld, p.T, sb, lds); break;
      default: scores_rows<1>(qs.data(), p.D, kt, ld, p.T, sb, lds);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* mrow = p.has_mask ? p.mask.row(b, h, i + r) : nullptr;
      softmax_row(sb + r * lds, p.T, p.scale, mrow, p.mask.stride[3] == 0, p.nan_to_zero);
    }
    switch (rows) {
      case 6: values_rows<6>(p, b, h, sb, lds, i); break;
      case 5: values_rows<5>(p, b, h, sb, lds, i); break;
      case 4: values_rows<4>(p, b, h, sb, lds, i); break;
      case 3: values_rows<3>(p, b, h, sb, lds, i); break;
      case 2: values_rows<2>(p, b, h, sb, lds, i); break;
      default: values_rows<1>(p, b, h, sb, lds, i);
    }
  }
}

}  // namespace

void pack_kt_avx2(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld) { pack_kt_impl(p, b, h, kt, ld); }

void attend_rows_avx2(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                      std::vector<float>& qs, std::vector<float>& s) {
  attend_rows_impl(p, b, h, i0, i1, kt, ld, qs, s);
}

}  // namespace onnxscope::cpu::attention
