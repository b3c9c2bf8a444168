// Reference kernel: RNN.
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

// Ht = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Wbi + Rbi)
void RNN(KernelContext& ctx) {
  RnnProblem p = parse_problem(ctx, 1, {"Tanh"});
  const RecurrentWeights RT = recurrent_weights(ctx, *p.R, p.dirs, p.hidden, p.hidden, {{0, p.hidden}});
  const std::vector<Activation>& acts = p.functions;
  const int64_t H = p.hidden;
  std::vector<double> h = read_state(ctx, p, 5, "initial_h");
  RnnOutputs o;
  const RnnY Y(ctx, p);
  for (int64_t d = 0; d < p.dirs; ++d) {
    const Activation& f = acts[size_t(d)];
    const double* Wb = p.B.data() + d * 2 * H;
    const double* Rb = Wb + H;
    // Batch entries are independent: each is computed by one thread, in one order.
    const InputWeights wt(ctx, p, d, H);
    cpu::parallel_for(p.batch, per_thread(p.batch), [&](int64_t b0, int64_t b1) {
      StepProjection proj(ctx, p, wt, d, H, b0, b1);  // x_t W^T for this range's entries
      const int64_t nb = b1 - b0;
      std::vector<double> wx(size_t(nb * H)), rh(size_t(nb * H)), hcur(size_t(nb * H)),
          hin(size_t(nb * H));
      take_states(p, d, b0, b1, h, hcur);
      StepEntries step;
      for (int64_t s = 0; s < p.seq; ++s) {
        step.at(p, d, s, b0, b1);
        const int64_t n = static_cast<int64_t>(step.b.size());
        if (n == 0) break;
        const StepEntries::Packed in = step.pack(p, b0, b1, hcur, hin, proj.rows(s), H, wx);  // states and x_t W^T
        matvec_n(RT, d, 0, in.h, H, rh.data(), H, n);
        for (int64_t j = 0; j < n; ++j)
          gate_sums(rh.data() + j * H, in.wx + j * H, rh.data() + j * H, Wb, Rb, H, p.clip);
        f.apply(rh.data(), n * H);  // the activation over the whole array (vectorised)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t b = step.b[size_t(j)], t = step.t[size_t(j)];
          double* hb = hcur.data() + (b - b0) * H;
          std::copy(rh.data() + j * H, rh.data() + (j + 1) * H, hb);
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
