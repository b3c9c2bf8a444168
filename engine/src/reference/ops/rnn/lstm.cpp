// Reference kernel: LSTM.
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

// Gates in W/R/B are ordered i, o, f, c; peepholes P are ordered i, o, f.
void LSTM(KernelContext& ctx) {
  RnnProblem p = parse_problem(ctx, 4, {"Sigmoid", "Tanh", "Tanh"});
  const RecurrentWeights RT = recurrent_weights(ctx, *p.R, p.dirs, 4 * p.hidden, p.hidden, {{0, 4 * p.hidden}});
  const std::vector<Activation>& acts = p.functions;
  const bool input_forget = ctx.attr_int("input_forget", 0) != 0;
  const int64_t H = p.hidden;
  std::vector<double> h = read_state(ctx, p, 5, "initial_h");
  std::vector<double> c = read_state(ctx, p, 6, "initial_c");
  std::vector<double> P(size_t(p.dirs * 3 * H), 0.0);
  if (const Tensor* Pt = ctx.optional_input(7)) {
    if (Pt->dtype() != p.dtype) ctx.fail("P must have the type of X");
    P = real_values(*Pt);
  }
  RnnOutputs o;
  const RnnY Y(ctx, p);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = acts[size_t(3 * d)];
    const Activation& g = acts[size_t(3 * d + 1)];
    const Activation& hact = acts[size_t(3 * d + 2)];
    const double* Wb = p.B.data() + d * 8 * H;
    const double* Rb = Wb + 4 * H;
    const double* Pi = P.data() + d * 3 * H;
    const double* Po = Pi + H;
    const double* Pf = Pi + 2 * H;
    // Batch entries are independent: each is computed by one thread, in one order.
    const InputWeights wt(ctx, p, d, 4 * H);
    cpu::parallel_for(p.batch, per_thread(p.batch), [&](int64_t b0, int64_t b1) {
      StepProjection proj(ctx, p, wt, d, 4 * H, b0, b1);  // x_t W^T for this range's entries
      const int64_t nb = b1 - b0, G = 4 * H;
      std::vector<double> wx(size_t(nb * G)), rh(size_t(nb * G)), hcur(size_t(nb * H)),
          ccur(size_t(nb * H)), hin(size_t(nb * H));
      // Each gate for the step's entries, [n, H]: pre-activations, then the
      // activation over the whole array (vectorised).
      std::vector<double> it(size_t(nb * H)), ft(size_t(nb * H)), ct(size_t(nb * H)), ot(size_t(nb * H)),
          hc(size_t(nb * H));
      take_states(p, d, b0, b1, h, hcur);
      take_states(p, d, b0, b1, c, ccur);
      StepEntries step;
      for (int64_t s = 0; s < p.seq; ++s) {
        step.at(p, d, s, b0, b1);
        const int64_t n = static_cast<int64_t>(step.b.size());
        if (n == 0) break;
        const StepEntries::Packed in = step.pack(p, b0, b1, hcur, hin, proj.rows(s), G, wx);  // states and x_t W^T
        matvec_n(RT, d, 0, in.h, H, rh.data(), G, n);
        for (int64_t j = 0; j < n; ++j) {
          const double* cb = ccur.data() + (step.b[size_t(j)] - b0) * H;
          const double* wxj = in.wx + j * G;
          const double* rhj = rh.data() + j * G;
          gate_sums_peephole(it.data() + j * H, wxj, rhj, Wb, Rb, Pi, cb, H, p.clip);
          if (!input_forget) gate_sums_peephole(ft.data() + j * H, wxj + 2 * H, rhj + 2 * H, Wb + 2 * H, Rb + 2 * H, Pf, cb, H, p.clip);
          gate_sums(ct.data() + j * H, wxj + 3 * H, rhj + 3 * H, Wb + 3 * H, Rb + 3 * H, H, p.clip);
        }
        f.apply(it.data(), n * H);
        if (!input_forget) f.apply(ft.data(), n * H);
        g.apply(ct.data(), n * H);
        for (int64_t j = 0; j < n; ++j) {
          double* cb = ccur.data() + (step.b[size_t(j)] - b0) * H;
          const size_t q = size_t(j * H);
          lstm_cell(cb, ot.data() + q, hc.data() + q, it.data() + q, ft.data() + q, ct.data() + q, input_forget,
                    in.wx + j * G + H, rh.data() + j * G + H, Wb + H, Rb + H, Po, H, p.clip);
        }
        f.apply(ot.data(), n * H);
        hact.apply(hc.data(), n * H);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t b = step.b[size_t(j)], t = step.t[size_t(j)];
          double* hb = hcur.data() + (b - b0) * H;
          product(hb, ot.data() + j * H, hc.data() + j * H, H);
          Y.put_row(p.y_index(t, d, b, 0), hb, H);
        }
      }
      put_states(p, d, b0, b1, hcur, h);
      put_states(p, d, b0, b1, ccur, c);
    });
  }
  o.Yh = std::move(h);
  o.Yc = std::move(c);
  write_outputs(ctx, p, o, true);
}

}  // namespace onnxscope::ref
