// onnxscope.cpu FusedAttention (cpu/fused_ops.h) on AVX-512. A work item is
// up to 32 query rows of one head; 8 of them at a time, their scores against
// every key stay in an 8 x T buffer (L1/L2), the softmax runs on it, and the
// rows of Y are summed from V's rows and written where Y keeps them: the
// scores never go through memory as a [B, H, Sq, T] tensor, and Q, K, V and
// Y are read and written in either head layout (bshd_in / bshd_out: no
// Transposes).
//
// The float operations are the unfused graph's, in its order: q * scale_q
// and k * scale_k rounded to float, the scores as float sums of products
// (fused multiply-adds, as oneDNN's products), * scale, + mask, the softmax
// as the cpu engine's Softmax computes it (softmax_rows.cpp: the maximum,
// e^(s - max) within 3.2 ulp, their sum, times 1 / sum, quotients below
// FLT_MIN as 0), the NaN guard, and Y as float sums over the keys. Only the
// order of the terms of each sum may differ from oneDNN's.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_math_avx512.h"
#include "cpu/kernels/output.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

namespace v = avx512;

constexpr int64_t kRows = 32;  // query rows a work item takes (8 at a time through the scores)

// Where element (b, h, s, d) of a [B, H, S, D] operand lies, given either layout.
struct HeadView {
  const float* data = nullptr;
  int64_t H = 0, S = 0, D = 0;
  bool bshd = false;
  const float* row(int64_t b, int64_t h, int64_t s) const {
    return data + (bshd ? ((b * S + s) * H + h) * D : ((b * H + h) * S + s) * D);
  }
};

// The mask's element for scores (b, h, i, t), rank <= 4 aligned to the right,
// a stride of 0 on every broadcast dim.
struct MaskView {
  const float* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};  // b, h, i, t
  const float* row(int64_t b, int64_t h, int64_t i) const {
    return data + b * stride[0] + h * stride[1] + i * stride[2];
  }
};

struct Problem {
  HeadView q, k, v;
  MaskView mask;
  bool has_mask = false;
  int64_t B = 0, H = 0, Sq = 0, T = 0, D = 0, Dv = 0;
  float scale_q = 1, scale_k = 1, scale = 1;
  bool nan_to_zero = false, bshd_out = false;
  float* y = nullptr;
  float* y_row(int64_t b, int64_t h, int64_t i) const {  // Y's row (b, h, i) in its layout
    return y + (bshd_out ? ((b * Sq + i) * H + h) * Dv : ((b * H + h) * Sq + i) * Dv);
  }
};

// kt[d * ld + t] = k(t, d) * scale_k: K^T of one head, rows of T padded
// with zeros to ld (a multiple of 16, so the products load whole vectors).
// Sixteen keys at a time: a gather down a column of K, a store along kt.
__attribute__((target("avx512f"))) void pack_kt(const Problem& p, int64_t b, int64_t h, float* kt, int64_t ld) {
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
void attend_rows(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t i1, const float* kt, int64_t ld,
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

int64_t bshd_bits(const KernelContext& ctx) { return ctx.attr_int("bshd_in", 0); }

// Float32 Q, K, V of rank 4 whose dims agree, a float mask of rank <= 4 that
// broadcasts into the scores without enlarging them; anything else is the
// fused-reference kernel's (the unfused steps, or their error).
bool accepts(const KernelContext& ctx) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512 || ctx.input_count() < 3 || ctx.input_count() > 4) return false;
  const int64_t bits = bshd_bits(ctx), out = ctx.attr_int("bshd_out", 0);
  if (bits < 0 || bits > 7 || out < 0 || out > 1) return false;
  Shape s[3];
  for (size_t i = 0; i < 3; ++i) {
    const Value* x = ctx.input_value(i);
    if (!x || !x->is_tensor() || x->tensor().dtype() != DataType::Float || x->tensor().rank() != 4) return false;
    s[i] = x->tensor().shape();
    if (bits & (int64_t{1} << i)) std::swap(s[i][1], s[i][2]);  // as [B, H, S, D]
  }
  if (s[1][0] != s[0][0] || s[2][0] != s[0][0] || s[1][1] != s[0][1] || s[2][1] != s[0][1] || s[1][3] != s[0][3] ||
      s[2][2] != s[1][2])
    return false;
  if (ctx.input_count() == 4 && ctx.input_value(3)) {
    const Value* m = ctx.input_value(3);
    if (!m->is_tensor() || m->tensor().dtype() != DataType::Float || m->tensor().rank() > 4) return false;
    const Shape& ms = m->tensor().shape();
    const Shape scores = {s[0][0], s[0][1], s[0][2], s[1][2]};
    for (size_t i = 0; i < ms.size(); ++i) {
      const int64_t d = ms[ms.size() - 1 - i];
      if (d != 1 && d != scores[3 - i]) return false;
    }
  }
  return true;
}

void FusedAttentionAvx512(KernelContext& ctx) {
  const int64_t bits = bshd_bits(ctx);
  Problem p;
  HeadView* views[3] = {&p.q, &p.k, &p.v};
  for (size_t i = 0; i < 3; ++i) {
    const Tensor& x = ctx.input(i);
    const bool bshd = (bits & (int64_t{1} << i)) != 0;
    const Shape& xs = x.shape();
    *views[i] = HeadView{x.data<float>(), bshd ? xs[2] : xs[1], bshd ? xs[1] : xs[2], xs[3], bshd};
  }
  p.B = ctx.input(0).shape()[0];
  p.H = p.q.H;
  p.Sq = p.q.S;
  p.T = p.k.S;
  p.D = p.q.D;
  p.Dv = p.v.D;
  p.scale_q = ctx.attr_float("scale_q", 1.f);
  p.scale_k = ctx.attr_float("scale_k", 1.f);
  p.scale = ctx.attr_float("scale", 1.f);
  p.nan_to_zero = ctx.attr_int("nan_to_zero", 0) != 0;
  p.bshd_out = ctx.attr_int("bshd_out", 0) != 0;
  if (const Tensor* m = ctx.optional_input(3)) {
    p.has_mask = true;
    p.mask.data = m->data<float>();
    const Shape& ms = m->shape();
    int64_t stride = 1;
    for (size_t i = 0; i < ms.size(); ++i) {
      const size_t at = ms.size() - 1 - i;  // the mask's dim `at` is the scores' dim 3 - i
      p.mask.stride[3 - i] = ms[at] == 1 ? 0 : stride;
      stride *= ms[at];
    }
  }
  const Shape yshape =
      p.bshd_out ? Shape{p.B, p.Sq, p.H, p.Dv} : Shape{p.B, p.H, p.Sq, p.Dv};
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, yshape);
  p.y = y.mutable_data<float>();
  if (y.element_count() == 0) return;
  const int64_t blocks = (p.Sq + kRows - 1) / kRows, items = p.B * p.H * blocks;
  const int64_t ld = ((std::max<int64_t>(p.T, 1) + 15) / 16) * 16;
  // Work per item: two products of its rows by the keys; a few items a
  // thread where the heads are small (a decoder's one query).
  const int64_t per_item = std::min<int64_t>(kRows, p.Sq) * std::max<int64_t>(p.T, 1) * (p.D + p.Dv + 8);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(per_item, 1));
  parallel_for(items, grain, [&](int64_t lo, int64_t hi) {
    std::vector<float> kt(static_cast<size_t>(std::max<int64_t>(p.D, 1) * ld));
    std::vector<float> qs(static_cast<size_t>(8 * std::max<int64_t>(p.D, 1)));
    std::vector<float> s(static_cast<size_t>(8 * std::max<int64_t>(p.T, 1)));
    int64_t packed = -1;  // the head whose K^T is in kt
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t head = item / blocks, blk = item % blocks, b = head / p.H, h = head % p.H;
      if (head != packed) {
        pack_kt(p, b, h, kt.data(), ld);
        packed = head;
      }
      const int64_t i0 = blk * kRows, i1 = std::min(p.Sq, i0 + kRows);
      if (p.T == 0) {  // no keys: every row of Y is an empty sum
        for (int64_t i = i0; i < i1; ++i)
          std::fill_n(p.y_row(b, h, i), p.Dv, 0.0f);
        continue;
      }
      attend_rows(p, b, h, i0, i1, kt.data(), ld, qs, s);
    }
  });
}

}  // namespace

void register_fused_attention_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kFusedAttention, 1, INT_MAX, "cpu-avx512", FusedAttentionAvx512, accepts});
}

}  // namespace onnxscope::cpu
