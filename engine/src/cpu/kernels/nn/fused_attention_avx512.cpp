// onnxscope.cpu FusedAttention's steps on AVX-512 (fused_attention.h): K^T
// packed by gathers sixteen keys at a time; scores of 8 query rows by 32
// keys in registers; the softmax row by row; Y's 8 rows by 32 columns, 8
// rows sharing each load of V.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cpu/kernels/math/vector_math_avx512.h"
#include "cpu/kernels/nn/fused_attention.h"

namespace onnxscope::cpu::attention {
namespace {

namespace v = avx512;

// kt[d * ld + t] = k(t, d) * scale_k: K^T of one head, rows of T padded
// with zeros to ld (a multiple of 16, so the products load whole vectors).
// Sixteen keys at a time: a gather down a column of K, a store along kt.
__attribute__((target("avx512f"))) void pack_kt_impl(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld) {
  const float* k = p.k.row(b, h, 0);
  const int64_t stride = p.k.bshd ? p.H * p.D : p.D;
  const __m512 sk = _mm512_set1_ps(p.scale_k);
  const __m512i lanes = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                           _mm512_set1_epi32(static_cast<int>(stride)));
  for (int64_t t0 = 0; t0 < p.T; t0 += 16) {
    const __mmask16 m = v::tail_mask(p.T - t0);
    const float* kt0 = k + t0 * stride;
    for (int64_t d = 0; d < p.D; ++d) {
      const __m512 x = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, lanes, kt0 + d, 4);
      _mm512_storeu_ps(kt + d * ld + t0, _mm512_maskz_mul_ps(m, x, sk));
    }
  }
}

// Scores of R query rows (q already scaled, [R][D] in qs) against the keys
// t0 .. (C vectors of 16; `cols` of them written): sums over d in order.
template <int R, int C>
__attribute__((target("avx512f"))) void scores_block(const float* qs, int64_t D, const float* kt, int64_t ld,
                                                     int64_t t0, int64_t cols, float* s, int64_t lds) {
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  const float* kp = kt + t0;
  for (int64_t d = 0; d < D; ++d, kp += ld) {
    __m512 kv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) kv[c] = _mm512_loadu_ps(kp + 16 * c);  // (kt's padding is zeros)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(qs[r * D + d]);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(a, kv[c], acc[r][c]);
    }
  }
  const __mmask16 last = v::tail_mask(cols - 16 * (C - 1));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C - 1; ++c) _mm512_storeu_ps(s + r * lds + t0 + 16 * c, acc[r][c]);
    _mm512_mask_storeu_ps(s + r * lds + t0 + 16 * (C - 1), last, acc[r][C - 1]);
  }
}

template <int R>
void scores_rows(const float* qs, int64_t D, const float* kt, int64_t ld, int64_t T, float* s, int64_t lds) {
  int64_t t0 = 0;
  for (; t0 + 16 < T; t0 += 32) scores_block<R, 2>(qs, D, kt, ld, t0, std::min<int64_t>(32, T - t0), s, lds);
  if (t0 < T) scores_block<R, 1>(qs, D, kt, ld, t0, T - t0, s, lds);
}

// One row of scores: * scale, + mask, then the softmax in place and the NaN guard.
__attribute__((target("avx512f"))) void softmax_row(float* s, int64_t T, float scale, const float* mask, bool mask_bcast,
                                                    bool nan_to_zero) {
  const __m512 vs = _mm512_set1_ps(scale);
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t t = 0; t < T; t += 16) {
    const __mmask16 k = v::tail_mask(T - t);
    __m512 x = _mm512_maskz_loadu_ps(k, s + t);
    if (scale != 1.0f) x = _mm512_mul_ps(x, vs);
    if (mask) x = _mm512_add_ps(x, mask_bcast ? _mm512_set1_ps(mask[0]) : _mm512_maskz_loadu_ps(k, mask + t));
    _mm512_mask_storeu_ps(s + t, k, x);
    mx = _mm512_mask_max_ps(mx, k, x, mx);  // NaN skipped here; it still makes its e^(x - m) NaN below
  }
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t t = 0; t < T; t += 16) {
    const __mmask16 k = v::tail_mask(T - t);
    const __m512 e = v::exp<true>(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + t), m));
    _mm512_mask_storeu_ps(s + t, k, e);
    sum = _mm512_mask_add_ps(sum, k, sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum)), tiny = _mm512_set1_ps(1.17549435e-38f);
  for (int64_t t = 0; t < T; t += 16) {
    const __mmask16 k = v::tail_mask(T - t);
    __m512 q = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + t), inv);
    q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(q, tiny, _CMP_LT_OQ), _mm512_setzero_ps());
    if (nan_to_zero) q = _mm512_mask_mov_ps(q, _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q), _mm512_setzero_ps());
    _mm512_mask_storeu_ps(s + t, k, q);
  }
}

// Y rows i0 .. i0 + R of the Dv columns c0 .. (C vectors, the last `cols`
// of them partial): sum over t of P(i, t) * V(t, :), t in order. V's rows
// are `vstride` floats apart; R = 8 rows share each load of V (V of a head
// is past L1: fewer rows a load made this L2-bound).
template <int R, int C>
__attribute__((target("avx512f"))) void values_block(const float* v, int64_t vstride, int64_t T, const float* s,
                                                     int64_t lds, int64_t cols, float* const* y) {
  __m512 acc[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int c = 0; c < C; ++c) acc[r][c] = _mm512_setzero_ps();
  const __mmask16 last = v::tail_mask(cols - 16 * (C - 1));
  for (int64_t t = 0; t < T; ++t, v += vstride) {
    __m512 vv[C];
#pragma GCC unroll 8
    for (int c = 0; c < C - 1; ++c) vv[c] = _mm512_loadu_ps(v + 16 * c);
    vv[C - 1] = _mm512_maskz_loadu_ps(last, v + 16 * (C - 1));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(s[r * lds + t]);
#pragma GCC unroll 8
      for (int c = 0; c < C; ++c) acc[r][c] = _mm512_fmadd_ps(a, vv[c], acc[r][c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int c = 0; c < C - 1; ++c) _mm512_storeu_ps(y[r] + 16 * c, acc[r][c]);
    _mm512_mask_storeu_ps(y[r] + 16 * (C - 1), last, acc[r][C - 1]);
  }
}

// Y's rows i0 .. i0 + R of head (b, h) from R rows of probabilities.
template <int R>
void values_rows(const Problem& p, int64_t b, int64_t h, const float* s, int64_t lds, int64_t i0) {
  const float* v = p.v.row(b, h, 0);
  const int64_t vstride = p.v.bshd ? p.H * p.Dv : p.Dv;
  float* y[R];
  for (int r = 0; r < R; ++r) y[r] = p.y_row(b, h, i0 + r);
  int64_t c0 = 0;
  for (; c0 + 32 <= p.Dv; c0 += 32) {
    float* yc[R];
    for (int r = 0; r < R; ++r) yc[r] = y[r] + c0;
    values_block<R, 2>(v + c0, vstride, p.T, s, lds, 32, yc);
  }
  if (c0 < p.Dv) {
    float* yc[R];
    for (int r = 0; r < R; ++r) yc[r] = y[r] + c0;
    if (p.Dv - c0 > 16) values_block<R, 2>(v + c0, vstride, p.T, s, lds, p.Dv - c0, yc);
    else values_block<R, 1>(v + c0, vstride, p.T, s, lds, p.Dv - c0, yc);
  }
}

// Query rows i0 .. i1 of head (b, h); kt: that head's K^T (ld floats a row).
void attend_rows_impl(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                 std::vector<float>& qs, std::vector<float>& s) {
  const int64_t lds = std::max<int64_t>(p.T, 1);
  for (int64_t i = i0; i < i1; i += 8) {
    const int64_t rows = std::min<int64_t>(8, i1 - i);
    for (int64_t r = 0; r < rows; ++r) {
      const float* qr = p.q.row(b, h, i + r);
      for (int64_t d = 0; d < p.D; ++d) qs[static_cast<size_t>(r * p.D + d)] = qr[d] * p.scale_q;
    }
    float* sb = s.data();
    switch (rows) {
      case 8: scores_rows<8>(qs.data(), p.D, kt, ld, p.T, sb, lds); break;
      default:
        for (int64_t r = 0; r < rows; ++r) scores_rows<1>(qs.data() + r * p.D, p.D, kt, ld, p.T, sb + r * lds, lds);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const float* mrow = p.has_mask ? p.mask.row(b, h, i + r) : nullptr;
      softmax_row(sb + r * lds, p.T, p.scale, mrow, p.mask.stride[3] == 0, p.nan_to_zero);
    }
    if (rows == 8) {
      values_rows<8>(p, b, h, sb, lds, i);
    } else {
      int64_t r = 0;
      for (; r + 4 <= rows; r += 4) values_rows<4>(p, b, h, sb + r * lds, lds, i + r);
      for (; r < rows; ++r) values_rows<1>(p, b, h, sb + r * lds, lds, i + r);
    }
  }
}

}  // namespace

void pack_kt_avx512(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld) { pack_kt_impl(p, b, h, kt, ld); }

void attend_rows_avx512(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
                        std::vector<float>& qs, std::vector<float>& s) {
  attend_rows_impl(p, b, h, i0, i1, kt, ld, qs, s);
}

}  // namespace onnxscope::cpu::attention
