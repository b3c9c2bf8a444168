// Reference kernel: BatchNormalization (inference and training modes).
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::dims_product;
using rn::put_real;

// y = scale * (x - mean) / sqrt(var + epsilon) + B per channel, X of shape
// (N, C, D1, ...). Inference uses the given mean and var. Training uses the
// batch statistics (population variance over N and D) and outputs the running
// statistics input * momentum + batch * (1 - momentum).
//  - opset 14+: training_mode attribute; outputs Y, running_mean, running_var
//    (of the mean input's type, which may differ from X's from opset 15).
//  - opset < 14: training when the node has the optional outputs (Y, mean, var,
//    saved_mean, saved_var; saved_* are the batch mean and variance); opsets 1
//    and 6 also need is_test = 0. Before opset 9 spatial = 0 gives every
//    activation its own statistics: scale etc. then have shape (C, D1, ...).
void BatchNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t version = ctx.opset_version();
  if (x.rank() < 2) ctx.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  rn::require_float(ctx, x, "X");
  const bool spatial = version >= 9 || ctx.attr_int("spatial", 1) != 0;
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]), c = static_cast<uint64_t>(x.shape()[1]);
  const uint64_t d = dims_product(x.shape(), 2, x.shape().size());
  // X viewed as [N, P, inner]: P parameters, each shared by `inner` elements of a sample.
  const uint64_t params = spatial ? c : c * d, inner = spatial ? d : 1;
  const auto scale = param_values(ctx, ctx.input(1), params, "scale");
  const auto bias = param_values(ctx, ctx.input(2), params, "B");
  const auto in_mean = param_values(ctx, ctx.input(3), params, "mean");
  const auto in_var = param_values(ctx, ctx.input(4), params, "var");
  const double eps = ctx.attr_float("epsilon", 1e-5f), momentum = ctx.attr_float("momentum", 0.9f);

  bool training;
  if (version >= 14) {
    training = ctx.attr_int("training_mode", 0) != 0;
  } else {
    bool extra_outputs = false;
    for (size_t k = 1; k < ctx.output_count(); ++k) extra_outputs = extra_outputs || ctx.output_wanted(k);
    training = extra_outputs && (version >= 7 || ctx.attr_int("is_test", 0) == 0);
  }
  for (size_t k = 1; k < ctx.output_count() && !training; ++k)
    if (ctx.output_wanted(k)) ctx.fail("outputs after Y are only produced in training mode");

  std::vector<double> mean = in_mean, var = in_var;
  if (training) {
    for (uint64_t p = 0; p < params; ++p) {
      auto at = [&](uint64_t k) { return x.element_as_double(((k / inner) * params + p) * inner + k % inner); };
      std::tie(mean[p], var[p]) = mean_var(n * inner, at);
    }
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  std::vector<double> root(params);  // sqrt(var + epsilon), once per parameter (the same value per element)
  for (uint64_t p = 0; p < params; ++p) root[p] = std::sqrt(var[p] + eps);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* const px = x.raw();
    std::byte* const py = y.mutable_raw();
    // Blocks of `inner` elements share one parameter: spread over the threads.
    for_rows(n * params, inner, [&](uint64_t b0, uint64_t b1) {
      const std::byte* const in = px;  // locals (math/common.h's unary)
      std::byte* const out = py;
      for (uint64_t blk = b0; blk < b1; ++blk) {
        const uint64_t p = blk % params;
        const double sc = scale[p], mu = mean[p], r = root[p], bi = bias[p];
        for (uint64_t i = blk * inner; i < (blk + 1) * inner; ++i) {
          const double v = static_cast<double>(to_compute(load_at<S>(in, i)));
          store_at<S>(out, i, from_compute<S>(static_cast<compute_t<S>>(sc * (v - mu) / r + bi)));
        }
      }
    });
  });
  if (!training) return;
  std::vector<double> running_mean(params), running_var(params);
  for (uint64_t p = 0; p < params; ++p) {
    running_mean[p] = in_mean[p] * momentum + mean[p] * (1 - momentum);
    running_var[p] = in_var[p] * momentum + var[p] * (1 - momentum);
  }
  const DataType stat_type = ctx.input(3).dtype();
  const Shape stat_shape = ctx.input(3).shape();
  const std::vector<double>* outs[] = {&running_mean, &running_var, &mean, &var};
  for (size_t k = 1; k < ctx.output_count() && k <= (version >= 14 ? 2u : 4u); ++k)
    if (ctx.output_wanted(k)) rn::store_reals(ctx, ctx.allocate_output(k, stat_type, stat_shape), *outs[k - 1]);
}

}  // namespace onnxscope::ref
