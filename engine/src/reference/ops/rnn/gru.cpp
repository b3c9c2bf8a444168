// Reference kernel: GRU.
//
// Every opset; version 1's output_sequence attribute does not change the
// values and is ignored, layout appears in 14. Inputs are widened to double,
// the recurrence runs in double and each output is rounded once to the input
// type. Semantics follow the operator docs (activations,
// activation_alpha/beta, clip, sequence_lens, direction, layout, GRU
// linear_before_reset, LSTM peepholes and input_forget); onnx's Python
// reference ignores several of these.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
#include <algorithm>
#include <stdexcept>
#include <cmath>
#include <string>
#include <vector>

#include "core/rnn_plan.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"
#include "reference/ops/rnn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Gates in W/R/B are ordered z, r, h.
void GRU(KernelContext& ctx) {
  RnnProblem p = parse_problem(ctx, 3, {"Sigmoid", "Tanh"});
  const RecurrentWeights RT = recurrent_weights(ctx, *p.R, p.dirs, 3 * p.hidden, p.hidden, {{0, 2 * p.hidden}, {2 * p.hidden, p.hidden}});
  const std::vector<Activation>& acts = p.functions;
  const bool linear_before_reset = ctx.attr_int("linear_before_reset", 0) != 0;
  const int64_t H = p.hidden;
  std::vector<double> h = read_state(ctx, p, 5, "initial_h");
  RnnOutputs o;
  const RnnY Y(ctx, p);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = acts[size_t(2 * d)];
    const Activation& g = acts[size_t(2 * d + 1)];
    const double* Wb = p.B.data() + d * 6 * H;  // Wbz, Wbr, Wbh
    const double* Rb = Wb + 3 * H;                // Rbz, Rbr, Rbh
    // Batch entries are independent: each is computed by one thread, in one order.
    const InputWeights wt(ctx, p, d, 3 * H);
    cpu::parallel_for(p.batch, per_thread(p.batch), [&](int64_t b0, int64_t b1) {
      StepProjection proj(ctx, p, wt, d, 3 * H, b0, b1);  // x_t W^T for this range's entries
      const int64_t nb = b1 - b0, G = 3 * H;
      std::vector<double> wx(size_t(nb * G)), rh(size_t(nb * G)), hcur(size_t(nb * H)),
          hin(size_t(nb * H)), rhid(size_t(nb * H)), rmul(size_t(nb * H)), z(size_t(nb * H)), r(size_t(nb * H));
      take_states(p, d, b0, b1, h, hcur);
      StepEntries step;
      for (int64_t s = 0; s < p.seq; ++s) {
        step.at(p, d, s, b0, b1);
        const int64_t n = static_cast<int64_t>(step.b.size());
        if (n == 0) break;
        const StepEntries::Packed in = step.pack(p, b0, b1, hcur, hin, proj.rows(s), G, wx);  // states and x_t W^T
        matvec_n(RT, d, 0, in.h, H, rh.data(), G, n);  // Rz, Rr rows
        for (int64_t j = 0; j < n; ++j) {
          const double* wxj = in.wx + j * G;
          const double* rhj = rh.data() + j * G;
          gate_sums(z.data() + j * H, wxj, rhj, Wb, Rb, H, p.clip);
          gate_sums(r.data() + j * H, wxj + H, rhj + H, Wb + H, Rb + H, H, p.clip);
        }
        f.apply(z.data(), n * H);  // the activations over whole arrays (vectorised)
        f.apply(r.data(), n * H);
        if (linear_before_reset) {
          // ht = g(Xt*(Wh^T) + rt (.) (Ht-1*(Rh^T) + Rbh) + Wbh)
          matvec_n(RT, d, 1, in.h, H, rhid.data(), H, n);
          for (int64_t j = 0; j < n; ++j)
            for (int64_t k = 0; k < H; ++k) {
              const size_t q = size_t(j * H + k);
              rhid[q] = r[q] * (rhid[q] + Rb[2 * H + k]);
            }
        } else {
          // ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)
          product(rmul.data(), r.data(), in.h, n * H);
          matvec_n(RT, d, 1, rmul.data(), H, rhid.data(), H, n);
          for (int64_t j = 0; j < n; ++j)
            for (int64_t k = 0; k < H; ++k) rhid[size_t(j * H + k)] += Rb[2 * H + k];
        }
        for (int64_t j = 0; j < n; ++j) {
          double* row = rhid.data() + j * H;
          const double* xw = in.wx + j * G + 2 * H;
          for (int64_t k = 0; k < H; ++k) row[k] = (xw[k] + row[k]) + Wb[2 * H + k];
          if (p.clip > 0)
            for (int64_t k = 0; k < H; ++k) row[k] = p.clipped(row[k]);
        }
        g.apply(rhid.data(), n * H);  // ht
        for (int64_t j = 0; j < n; ++j) {
          const int64_t b = step.b[size_t(j)], t = step.t[size_t(j)];
          double* hb = hcur.data() + (b - b0) * H;
          gru_state(hb, z.data() + j * H, rhid.data() + j * H, H);
          Y.put_row(p.y_index(t, d, b, 0), hb, H);
        }
      }
      put_states(p, d, b0, b1, hcur, h);
    });
  }
  o.Yh = std::move(h);
  write_outputs(ctx, p, o, false);
}

}  // namespace onnxscope::ref
