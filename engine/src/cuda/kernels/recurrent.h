// One time step of RNN, GRU and LSTM after its GEMMs: the gates of every
// (direction, batch, hidden unit), one item each, from X·W^T (made for all
// steps at once) and h·R^T (made per step), in float32. A sequence shorter
// than the step (sequence_lens) is left as it is; its Y places stay 0.
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// An activation function of core/rnn_plan.h (same numbering), in float.
struct RecurrentActivation {
  int kind = 1;  // Tanh
  float alpha = 0, beta = 0;
  OS_HD float operator()(float x) const {
    switch (kind) {
      case 0: return x > 0.f ? x : 0.f;                                               // Relu
      case 1: return tanhf(x);                                                        // Tanh
      case 2: return x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x));  // Sigmoid
      case 3: return alpha * x + beta;                                                // Affine
      case 4: return x >= 0.f ? x : alpha * x;                                        // LeakyRelu
      case 5: return x >= alpha ? x : 0.f;                                            // ThresholdedRelu
      case 6: return alpha * tanhf(beta * x);                                         // ScaledTanh
      case 7: return fminf(fmaxf(alpha * x + beta, 0.f), 1.f);                        // HardSigmoid
      case 8: return x >= 0.f ? x : alpha * expm1f(x);                                // Elu
      case 9: return x / (1.f + fabsf(x));                                            // Softsign
      case 10: return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x));              // Softplus
      default: return x;
    }
  }
};

enum class RecurrentCell : int {
  Rnn,         // h = f(xw + rh + Wb + Rb)
  GruLinear,   // linear_before_reset: h·R^T for all three gates
  GruGates,    // the rest, step 1: z and r; z kept, r (.) h_prev for the second GEMM
  GruHidden,   // step 2: h from z and (r (.) h_prev)·Rh^T
  Lstm,        // gates i, o, f, c with peepholes and input_forget
};

struct RecurrentStepKernel {
  RecurrentCell cell;
  int64_t step, seq, batch, hidden, dirs, gates;
  bool batch_first, reverse_only, input_forget;
  float clip;                        // 0: none
  RecurrentActivation act[2][3];     // per direction: f, g (GRU, LSTM), h (LSTM)
  const float* xw;                   // [dirs, seq * batch, gates * hidden], rows in X's order
  const float* rh;                   // [dirs, batch, rh_width]: h·R^T (GruHidden: (r (.) h)·Rh^T)
  int64_t rh_width;
  const float* bias;                 // [dirs, 2 * gates * hidden]: Wb then Rb; nullptr: none
  const float* peephole;             // [dirs, 3 * hidden]: i, o, f; nullptr: none
  const int32_t* lengths;            // [batch]; nullptr: every sequence is seq long
  float *h, *c;                      // states [dirs, batch, hidden], updated in place
  float *z, *reset_h;                // GRU scratch [dirs, batch, hidden]
  float* y;                          // Y in its layout; nullptr: not wanted
  int64_t* fault;
  int64_t site;

  OS_HD float clipped(float v) const { return clip > 0.f ? fminf(fmaxf(v, -clip), clip) : v; }
  OS_HD float b(int64_t d, int64_t j) const { return bias ? bias[d * 2 * gates * hidden + j] + bias[(d * 2 + 1) * gates * hidden + j] : 0.f; }

  OS_HD void operator()(int64_t i) const {
    const int64_t k = i % hidden, bt = (i / hidden) % batch, d = i / (hidden * batch);
    const int64_t len = lengths ? lengths[bt] : seq;
    if (len < 0 || len > seq) {  // the reference refuses it; reported once, nothing written
      if (k == 0 && d == 0) report_fault(fault, site, bt, len, seq + 1);
      return;
    }
    if (step >= len) return;
    const int64_t t = reverse_only || d == 1 ? len - 1 - step : step;
    const int64_t row = batch_first ? bt * seq + t : t * batch + bt;
    const float* x = xw + (d * seq * batch + row) * gates * hidden;
    const float* r = rh + (d * batch + bt) * rh_width;
    const int64_t s = (d * batch + bt) * hidden + k;  // state index
    const RecurrentActivation& f = act[d][0];
    const RecurrentActivation& g = act[d][1];
    float out;
    switch (cell) {
      case RecurrentCell::Rnn:
        out = f(clipped(x[k] + r[k] + b(d, k)));
        break;
      case RecurrentCell::GruLinear: {
        const float zt = f(clipped(x[k] + r[k] + b(d, k)));
        const float rt = f(clipped(x[hidden + k] + r[hidden + k] + b(d, hidden + k)));
        const float rb = bias ? bias[(d * 2 + 1) * gates * hidden + 2 * hidden + k] : 0.f;
        const float wb = bias ? bias[d * 2 * gates * hidden + 2 * hidden + k] : 0.f;
        const float ht = g(clipped(x[2 * hidden + k] + rt * (r[2 * hidden + k] + rb) + wb));
        out = (1.f - zt) * ht + zt * h[s];
        break;
      }
      case RecurrentCell::GruGates: {
        z[s] = f(clipped(x[k] + r[k] + b(d, k)));
        reset_h[s] = f(clipped(x[hidden + k] + r[hidden + k] + b(d, hidden + k))) * h[s];
        return;
      }
      case RecurrentCell::GruHidden: {
        const float ht = g(clipped(x[2 * hidden + k] + r[k] + b(d, 2 * hidden + k)));
        out = (1.f - z[s]) * ht + z[s] * h[s];
        break;
      }
      default: {  // Lstm
        auto pre = [&](int64_t gate) { return x[gate * hidden + k] + r[gate * hidden + k] + b(d, gate * hidden + k); };
        const float* p = peephole ? peephole + d * 3 * hidden : nullptr;
        const float cprev = c[s];
        const float it = f(clipped(pre(0) + (p ? p[k] * cprev : 0.f)));
        const float ft = input_forget ? 1.f - it : f(clipped(pre(2) + (p ? p[2 * hidden + k] * cprev : 0.f)));
        const float ct = g(clipped(pre(3)));
        const float cnew = ft * cprev + it * ct;
        const float ot = f(clipped(pre(1) + (p ? p[hidden + k] * cnew : 0.f)));
        c[s] = cnew;
        out = ot * act[d][2](cnew);
        break;
      }
    }
    h[s] = out;
    if (y) y[batch_first ? ((bt * seq + t) * dirs + d) * hidden + k : ((t * dirs + d) * batch + bt) * hidden + k] = out;
  }
};

}  // namespace onnxscope::cuda
