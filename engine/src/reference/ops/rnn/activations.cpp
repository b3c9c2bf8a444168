// The recurrent layers' activations over arrays (rnn/common.h). Sigmoid and
// Tanh, the defaults of every RNN, GRU and LSTM, are made of exp and expm1
// of a value at most 0 (math/exp_f64.h: eight lanes at a time, the same
// bits as one), the rest of each the same operations a lane at a time as
// over an array, so the two give the same bits.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
#include <cmath>

#include "reference/ops/math/exp_f64.h"
#include "reference/ops/rnn/common.h"

namespace onnxscope::ref {

void Activation::apply(double* x, int64_t n) const {
  if (kind == Sigmoid) return math::sigmoid_by_exp(x, n);
  if (kind == Tanh) return math::tanh_by_expm1(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = (*this)(x[i]);
}

}  // namespace onnxscope::ref
