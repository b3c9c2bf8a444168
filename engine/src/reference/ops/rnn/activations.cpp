// The recurrent layers' activations over arrays (rnn/common.h). Sigmoid and
// Tanh, the defaults of every RNN, GRU and LSTM, are made of exp and expm1
// of a value at most 0 (math/exp_f64.h: eight lanes at a time, the same
// bits as one), the rest of each the same operations a lane at a time as
// over an array, so the two give the same bits.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
#include <cmath>
#include <vector>

#include "reference/ops/math/exp_f64.h"
#include "reference/ops/rnn/common.h"

namespace onnxscope::ref {

double rnn_sigmoid(double x) {
  const double e = math::exp_nonpositive(-std::fabs(x));
  return (x >= 0 ? 1.0 : e) / (1.0 + e);
}

double rnn_tanh(double x) {
  const double em = math::expm1_nonpositive(-2.0 * std::fabs(x));
  return std::copysign(-em / (2.0 + em), x);
}

void Activation::apply(double* x, int64_t n) const {
  if (kind != Sigmoid && kind != Tanh) {
    for (int64_t i = 0; i < n; ++i) x[i] = (*this)(x[i]);
    return;
  }
  thread_local std::vector<double> t;
  t.resize(static_cast<size_t>(n));
  if (kind == Sigmoid) {
    for (int64_t i = 0; i < n; ++i) t[size_t(i)] = -std::fabs(x[i]);
    math::exp_nonpositive(t.data(), n);
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] >= 0 ? 1.0 : t[size_t(i)]) / (1.0 + t[size_t(i)]);
  } else {
    for (int64_t i = 0; i < n; ++i) t[size_t(i)] = -2.0 * std::fabs(x[i]);
    math::expm1_nonpositive(t.data(), n);
    for (int64_t i = 0; i < n; ++i) x[i] = std::copysign(-t[size_t(i)] / (2.0 + t[size_t(i)]), x[i]);
  }
}

}  // namespace onnxscope::ref
