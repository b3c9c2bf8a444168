// The attention kernels (ops/attention.cpp). AttentionSoftmaxKernel is
// Attention's middle step, a row kernel (kernels/portable.h): one row per
// (batch, query head, query), over the T keys. The scaled logits QK^T come from a GEMM; this applies softcap, the
// additive bias (attn_mask, causal frontier, sliding window, padded keys),
// and the softmax, in place, writing the qk_matmul_output stage asked for.
// As the reference does: a row where every key is masked (decided on the
// bias, not the logits) is all zeros, and a row whose logits are all -inf
// sums to 1 (zeros).
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

struct AttentionSoftmaxKernel {
  static constexpr bool kRows = true;
  int64_t T = 0, Hq = 0, Sq = 0;
  float softcap = 0.f;  // 0: none
  bool causal = false;
  int64_t left = -1, right = -1;  // sliding window; -1: unbounded
  int64_t past = 0;               // query i sits at position past + i (without nonpad)
  const int64_t* nonpad = nullptr;  // per batch: keys at and past it are padding
  // attn_mask broadcast to (B, Hq, Sq, Tm): float (added) or bool (false masks).
  const float* mask_f = nullptr;
  const uint8_t* mask_b = nullptr;
  int64_t Tm = 0;
  int64_t ms[4] = {};
  float* s = nullptr;   // [rows, T]: logits in, probabilities out
  float* qk = nullptr;  // qk_matmul_output, or nullptr
  int mode = 0;         // its stage: 0 QK^T, 1 after softcap, 2 after the bias, 3 the softmax
  // FusedAttention (the unfused graph's values): with `plain`, a row whose
  // largest logit is -inf (every key masked) is NaN, as Softmax gives it,
  // not Attention's zeros; with `nan_to_zero`, NaN probabilities become 0
  // (torch.onnx's Where(IsNaN(P), 0, P)). A float mask's last dim may be 1
  // (broadcast) here: Tm = T with stride 0.
  bool plain = false, nan_to_zero = false;
  // float16 (1) or bfloat16 (2) Q: each stage rounded to Q's type and the
  // softmax computed in `soft` (Q's type, or float32 (0) under
  // softmax_precision 1) as the reference does, its sum in the reference's
  // order by one lane (narrow_row). 0: float32 Q.
  int narrow = 0, soft = 0;

  OS_HD float bias(int64_t b, int64_t h, int64_t i, int64_t j, int64_t pos, int64_t valid) const {
    if ((causal && j > pos) || (left >= 0 && pos - j > left) || (right >= 0 && j - pos > right) || j >= valid)
      return -INFINITY;
    if (mask_f || mask_b) {
      if (j >= Tm) return -INFINITY;
      const int64_t at = b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3];
      return mask_b ? (mask_b[at] ? 0.f : -INFINITY) : mask_f[at];
    }
    return 0.f;
  }

  // A narrow row, by one lane: the logits rounded to Q's type after the
  // product, the softcap and the bias; the softmax's exponentials, sum and
  // quotients each rounded to its type, the sum kept in float for float16,
  // in bfloat16 for bfloat16, in double for float32, in key order (numpy's
  // and ml_dtypes' sums, which the reference follows); the probabilities
  // rounded to Q's type.
  OS_HD void narrow_row(float* x, float* out, int64_t b, int64_t h, int64_t i, int64_t pos, int64_t valid) const {
    float m = -INFINITY;
    bool open = false;
    for (int64_t j = 0; j < T; ++j) {
      float v = round_to_narrow(x[j], narrow);
      if (out && mode == 0) out[j] = v;
      if (softcap > 0.f) v = round_to_narrow(softcap * tanhf(v / softcap), narrow);
      if (out && mode == 1) out[j] = v;
      const float bj = round_to_narrow(bias(b, h, i, j, pos, valid), narrow);  // a float32 mask's -7e4 is -inf in float16
      if (bj != -INFINITY) open = true;
      v = round_to_narrow(v + bj, narrow);
      if (out && mode == 2) out[j] = v;
      x[j] = round_to_narrow(v, soft);
      m = fmaxf(m, x[j]);
    }
    const float shift = m == -INFINITY ? 0.f : m;
    double sum = 0;
    for (int64_t j = 0; j < T; ++j) {
      x[j] = round_to_narrow(expf(round_to_narrow(x[j] - shift, soft)), soft);
      sum = soft == 0 ? sum + x[j] : round_to_narrow(static_cast<float>(sum) + x[j], soft == 2 ? 2 : 0);
    }
    float total = round_to_narrow(static_cast<float>(sum), soft);
    if (total == 0.f) total = 1.f;
    for (int64_t j = 0; j < T; ++j) {
      x[j] = open ? round_to_narrow(round_to_narrow(x[j] / total, soft), narrow) : 0.f;
      if (out && mode == 3) out[j] = x[j];
    }
  }

  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const int64_t i = r % Sq, h = (r / Sq) % Hq, b = r / (Sq * Hq);
    // A length from data only meets comparisons: held to +-2^40 (as the reference does), no overflow.
    const int64_t np = nonpad ? (nonpad[b] < -(int64_t{1} << 40) ? -(int64_t{1} << 40)
                                 : nonpad[b] > (int64_t{1} << 40) ? (int64_t{1} << 40) : nonpad[b])
                              : 0;
    const int64_t valid = nonpad ? np : T;
    const int64_t pos = i + (nonpad ? np - Sq : past);
    float* x = s + r * T;
    float* out = qk ? qk + r * T : nullptr;
    if (narrow != 0) {  // no shuffles on this path: the other lanes only return
      if (lanes.lane() == 0) narrow_row(x, out, b, h, i, pos, valid);
      return;
    }
    // Pass 1: the biased logits (written back, and to qk at their stage),
    // their maximum, and whether any key is attendable.
    float m = -INFINITY, open = 0.f;
    for (int64_t j = lanes.lane(); j < T; j += lanes.count()) {
      float v = x[j];
      if (out && mode == 0) out[j] = v;
      if (softcap > 0.f) v = softcap * tanhf(v / softcap);
      if (out && mode == 1) out[j] = v;
      const float bj = bias(b, h, i, j, pos, valid);
      if (bj != -INFINITY) open = 1.f;
      v += bj;
      if (out && mode == 2) out[j] = v;
      x[j] = v;
      m = fmaxf(m, v);
    }
    m = lanes.max(m);
    const bool none = lanes.max(open) == 0.f;
    const float shift = m == -INFINITY ? 0.f : m;
    float sum = 0.f;
    for (int64_t j = lanes.lane(); j < T; j += lanes.count()) sum += expf(x[j] - shift);
    sum = lanes.sum(sum);
    const float inv = 1.f / (sum == 0.f ? 1.f : sum);
    const bool nan_row = plain && m == -INFINITY;
    for (int64_t j = lanes.lane(); j < T; j += lanes.count()) {
      float p = nan_row ? NAN : none ? 0.f : expf(x[j] - shift) * inv;
      if (nan_to_zero && p != p) p = 0.f;
      x[j] = p;
      if (out && mode == 3) out[j] = p;
    }
  }
};

// y = x * scale rounded to float16 (narrow 1) or bfloat16 (2): a narrow
// Attention's Q and K each scaled by the square root of its scale (itself
// rounded), as the reference scales them before the product.
struct ScaleRoundKernel {
  float scale = 1.f;
  int narrow = 0;
  const float* x = nullptr;
  float* y = nullptr;
  OS_HD void operator()(int64_t i) const { y[i] = round_to_narrow(x[i] * scale, narrow); }
};

// RotaryEmbedding: one item per (b, s, h, i), i < half = rotary_dim / 2,
// rotating the pair (d1, d2) of that head by the cache row of position
// (b, s): d1 = 2i, d2 = 2i + 1 when interleaved, else i and i + half.
// y holds a copy of x first (dims past rotary_dim pass through). A position
// id outside [0, rows) is reported through `fault` and its pair left as x.
struct RotaryKernel {
  int64_t S = 0, H = 0, D = 0, half = 0, rows = 0;
  bool packed = false, interleaved = false;  // packed: x is (B, S, H * D), else (B, H, S, D)
  const float *x = nullptr, *cosines = nullptr, *sines = nullptr;  // [rows, half]
  const int64_t* pos = nullptr;  // (B, S) rows of the caches, or nullptr: row b * S + s
  float* y = nullptr;
  int64_t* fault = nullptr;
  int64_t site = 0;
  OS_HD void operator()(int64_t item) const {
    const int64_t i = item % half, h = (item / half) % H, bs = item / (half * H);
    const int64_t s = bs % S, b = bs / S;
    int64_t row = bs;
    if (pos) {
      row = pos[bs];
      if (row < 0 || row >= rows) {
        if (i == 0 && h == 0) report_fault(fault, site, bs, row, rows);
        return;
      }
    }
    const int64_t base = packed ? (bs * H + h) * D : ((b * H + h) * S + s) * D;
    const int64_t d1 = base + (interleaved ? 2 * i : i), d2 = base + (interleaved ? 2 * i + 1 : i + half);
    const float c = cosines[row * half + i], sn = sines[row * half + i];
    const float x1 = x[d1], x2 = x[d2];
    y[d1] = c * x1 - sn * x2;
    y[d2] = sn * x1 + c * x2;
  }
};

}  // namespace onnxscope::cuda
