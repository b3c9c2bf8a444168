// RNN, GRU and LSTM's problem as the reference kernel and the CUDA engine
// share it: sizes from X, W and R, the direction, the layout (X and the
// states batch-first or not), the clip, and the activation functions with
// their alpha/beta (the `activations` list per direction, the backward
// direction reusing the forward one's when only those are listed; alphas
// and betas consumed in order by the functions that take them). Every
// input's shape is checked; problems are thrown as std::invalid_argument.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "onnxscope/tensor.h"

namespace onnxscope::rnn {

struct Activation {
  // The numbering is the CUDA kernel's too (cuda/kernels/recurrent.h).
  enum Kind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Kind kind = Tanh;
  double alpha = 0, beta = 0;
};

// The node's attributes, as given (absent: nullopt or empty).
struct Attributes {
  std::string direction = "forward";
  int64_t layout = 0;
  std::optional<int64_t> hidden_size;
  std::optional<float> clip;
  std::vector<std::string> activations;
  std::vector<float> alphas, betas;
};

// The shapes of the inputs after X, W and R; nullptr: absent.
struct OptionalShapes {
  const Shape* b = nullptr;
  const Shape* sequence_lens = nullptr;
  const Shape* initial_h = nullptr;
  const Shape* initial_c = nullptr;
  const Shape* p = nullptr;
};

struct Plan {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1, gates = 1;
  bool batch_first = false;    // layout 1
  bool reverse_only = false;   // direction "reverse"
  float clip = 0;              // 0: none
  std::vector<Activation> acts;  // per direction, in the operator's order (LSTM: f, g, h)

  // X (seq, batch, input) or (batch, seq, input); Y (seq, dirs, batch, hidden)
  // or (batch, seq, dirs, hidden); states (dirs, batch, hidden) or (batch, dirs, hidden).
  Shape y_shape() const { return batch_first ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden}; }
  Shape state_shape() const { return batch_first ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden}; }
  bool backward(int64_t d) const { return reverse_only || d == 1; }
};

// gates: 1 (RNN), 3 (GRU), 4 (LSTM); default_acts: the operator's functions
// for one direction ({"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}).
Plan plan(const Attributes& a, int64_t gates, const std::vector<std::string>& default_acts, const Shape& x, const Shape& w,
          const Shape& r, const OptionalShapes& more);

}  // namespace onnxscope::rnn
