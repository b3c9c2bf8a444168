// Reference kernel: CausalConvWithState.
//
// Inputs are widened to double and sums accumulate in double; where the
// spec's computation graph has an intermediate tensor of the input type
// (Attention's QK^T, its softmax output) the value is rounded to that type
// there, so narrow-float results follow the spec's precision.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/attention_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using real::round_to;
using real::sigmoid;

// Depthwise causal conv over concat(past_state or zeros, input); optional fused SiLU.
void CausalConvWithState(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& weight = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  const Tensor* past = ctx.optional_input(3);
  real::require_float(ctx, input, "input");
  if (input.rank() != 3) ctx.fail("input must be 3-D (batch, channels, length), got " + shape_to_string(input.shape()));
  const int64_t B = input.shape()[0], C = input.shape()[1], L = input.shape()[2];
  if (weight.dtype() != input.dtype() || weight.rank() != 3 || weight.shape()[0] != C || weight.shape()[1] != 1 || weight.shape()[2] < 1)
    ctx.fail("weight must have shape (channels, 1, k) and the type of input, got " + shape_to_string(weight.shape()));
  const int64_t k = weight.shape()[2];
  if (bias && (bias->dtype() != input.dtype() || bias->shape() != Shape{C}))
    ctx.fail("bias must have shape [" + std::to_string(C) + "] and the type of input");
  if (past && (past->dtype() != input.dtype() || past->shape() != Shape{B, C, k - 1}))
    ctx.fail("past_state must have shape " + shape_to_string(Shape{B, C, k - 1}) + " and the type of input, got " + shape_to_string(past->shape()));
  const std::string act = ctx.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") ctx.fail("unknown activation '" + act + "'");
  const bool silu = act != "none";
  real::check_work(ctx, Shape{B, C, k - 1}, "present_state");
  const std::vector<double> x = real_values(input), w = real_values(weight);
  const std::vector<double> bv = bias ? real_values(*bias) : std::vector<double>(size_t(C), 0.0);
  const std::vector<double> ps = past ? real_values(*past) : std::vector<double>(size_t(B * C * (k - 1)), 0.0);
  const DataType t = input.dtype();
  check_work_buffer(ctx, {B, C, L}, "the output");
  check_work_buffer(ctx, {B, C, k - 1}, "the state");
  check_work_buffer(ctx, {L + k - 1}, "a padded row");
  std::vector<double> y(size_t(B * C * L)), state(size_t(B * C * (k - 1)));
  std::vector<double> padded(size_t(L + k - 1));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t j = 0; j < k - 1; ++j) padded[size_t(j)] = ps[size_t((b * C + c) * (k - 1) + j)];
      for (int64_t j = 0; j < L; ++j) padded[size_t(k - 1 + j)] = x[size_t((b * C + c) * L + j)];
      for (int64_t tpos = 0; tpos < L; ++tpos) {
        double acc = bv[size_t(c)];
        for (int64_t j = 0; j < k; ++j) acc += w[size_t(c * k + j)] * padded[size_t(tpos + j)];
        // The convolution's result is a tensor of the input type before the activation.
        const double conv = round_to(t, acc);
        y[size_t((b * C + c) * L + tpos)] = silu ? conv * sigmoid(conv) : conv;
      }
      for (int64_t j = 0; j < k - 1; ++j) state[size_t((b * C + c) * (k - 1) + j)] = padded[size_t(L + j)];
    }
  real::store_doubles(ctx, ctx.allocate_output(0, t, input.shape()), y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) real::store_doubles(ctx, ctx.allocate_output(1, t, {B, C, k - 1}), state);
}

}  // namespace onnxscope::ref
