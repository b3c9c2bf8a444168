// The kernels of the operators recent LLM blocks export as one node
// (ops/llm_blocks.cpp): SwiGLU (opset 28), CausalConvWithState and
// LinearAttention (opset 27, Gated DeltaNet and Mamba layers). float32
// storage (float16 / bfloat16 widened first); sums in double, and the
// intermediate values the reference rounds to the input's type rounded the
// same way (`narrow`: 1 float16, 2 bfloat16, 0 float32).
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// The reference's logistic function, in double.
OS_HD double block_sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

// The input's type as the reference rounds to it: float32, or float16 / bfloat16.
OS_HD double block_round(double v, int narrow) { return round_to_narrow(static_cast<float>(v), narrow); }

// y = Swish_alpha(a) * b, Swish's result rounded to the input's type first.
struct SwiGluKernel {
  float alpha = 1.f;
  int narrow = 0;
  const float *a = nullptr, *b = nullptr;
  float* y = nullptr;
  OS_HD void operator()(int64_t i) const {
    const double x = a[i];
    y[i] = static_cast<float>(block_round(x * block_sigmoid(static_cast<double>(alpha) * x), narrow) * static_cast<double>(b[i]));
  }
};

// CausalConvWithState, an item per output element (b, c, t) of [B, C, L]:
// the depthwise convolution over concat(past state or zeros, x) with
// channel c's k taps and bias, rounded to the input's type, then SiLU when
// asked. Position p of the padded line is past[p] for p < k - 1, else
// x[p - (k - 1)].
struct CausalConvKernel {
  int64_t C = 0, L = 0, k = 1;
  bool silu = false;
  int narrow = 0;
  const float *x = nullptr, *w = nullptr, *bias = nullptr, *past = nullptr;  // bias, past: nullptr for none
  float* y = nullptr;
  OS_HD double padded(int64_t bc, int64_t p) const {
    if (p >= k - 1) return x[bc * L + p - (k - 1)];
    return past ? static_cast<double>(past[bc * (k - 1) + p]) : 0.0;
  }
  OS_HD void operator()(int64_t i) const {
    const int64_t t = i % L, bc = i / L, c = bc % C;
    double acc = bias ? static_cast<double>(bias[c]) : 0.0;
    for (int64_t j = 0; j < k; ++j) acc += static_cast<double>(w[c * k + j]) * padded(bc, t + j);
    const double conv = block_round(acc, narrow);
    y[i] = static_cast<float>(silu ? conv * block_sigmoid(conv) : conv);
  }
};

// CausalConvWithState's present state, an item per element (b, c, j) of
// [B, C, k - 1]: the padded line's last k - 1 positions.
struct CausalConvStateKernel {
  CausalConvKernel conv;
  float* state = nullptr;
  OS_HD void operator()(int64_t i) const {
    const int64_t j = i % (conv.k - 1), bc = i / (conv.k - 1);
    state[i] = static_cast<float>(conv.padded(bc, conv.L + j));
  }
};

// LinearAttention, an item per column m of one key/value head's state
// (b, h, m): the column's recurrence over the T tokens in order, as the
// reference runs it (every rule reads and writes only its own column:
// S[:, m] *= exp(g_t); v' = beta_t (v_t[m] - S[:, m] . k_t);
// S[:, m] += k_t v'), writing each query head of the group's output
// o_t[m] = scale q_t . S[:, m]. The state is held in double (`work`,
// [B, Hkv, dk, dv]) and written to `present` as float at the end.
struct LinearAttentionKernel {
  int64_t T = 0, Hq = 0, Hkv = 0, dk = 0, dv = 0;
  int64_t decay_width = 0;  // 0 no gating; 1 per head; dk per key dimension
  int64_t beta_heads = 0;   // 0 no delta rule; 1 shared; Hkv per head
  double scale = 1;
  const float *q = nullptr, *k = nullptr, *v = nullptr, *past = nullptr, *decay = nullptr, *beta = nullptr;
  double* work = nullptr;
  float *out = nullptr, *present = nullptr;  // present: nullptr when not asked for
  OS_HD void operator()(int64_t item) const {
    const int64_t m = item % dv, bh = item / dv, h = bh % Hkv, b = bh / Hkv;
    double* S = work + bh * dk * dv + m;  // S[i] is S[i * dv]
    for (int64_t i = 0; i < dk; ++i) S[i * dv] = past ? static_cast<double>(past[bh * dk * dv + i * dv + m]) : 0.0;
    const int64_t group = Hq / Hkv;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t bt = b * T + t;
      const float* kt = k + (bt * Hkv + h) * dk;
      if (decay_width)
        for (int64_t i = 0; i < dk; ++i) S[i * dv] *= exp(static_cast<double>(decay[(bt * Hkv + h) * decay_width + (decay_width == 1 ? 0 : i)]));
      double vt = v[(bt * Hkv + h) * dv + m];
      if (beta_heads) {
        double retrieved = 0;
        for (int64_t i = 0; i < dk; ++i) retrieved += S[i * dv] * static_cast<double>(kt[i]);
        vt = static_cast<double>(beta[bt * beta_heads + (beta_heads == 1 ? 0 : h)]) * (vt - retrieved);
      }
      for (int64_t i = 0; i < dk; ++i) S[i * dv] += static_cast<double>(kt[i]) * vt;
      for (int64_t hq = h * group; hq < (h + 1) * group; ++hq) {
        const float* qt = q + (bt * Hq + hq) * dk;
        double acc = 0;
        for (int64_t i = 0; i < dk; ++i) acc += static_cast<double>(qt[i]) * S[i * dv];
        out[(bt * Hq + hq) * dv + m] = static_cast<float>(scale * acc);
      }
    }
    if (present)
      for (int64_t i = 0; i < dk; ++i) present[bh * dk * dv + i * dv + m] = static_cast<float>(S[i * dv]);
  }
};

}  // namespace onnxscope::cuda
