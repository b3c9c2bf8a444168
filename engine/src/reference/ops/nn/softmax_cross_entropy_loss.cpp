// Reference kernel: SoftmaxCrossEntropyLoss.
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::dims_product;

// log_prob = LogSoftmax(scores) along axis 1, then the NLL loss of it;
// log_prob is the optional second output.
void SoftmaxCrossEntropyLoss(KernelContext& ctx) {
  const Tensor& scores = ctx.input(0);
  rn::require_float(ctx, scores, "scores");
  const Shape& s = scores.shape();
  if (s.size() < 2) ctx.fail("scores must have shape (N, C, ...), got " + shape_to_string(s));
  std::vector<double> logp = real_values(scores);
  const uint64_t n = static_cast<uint64_t>(s[0]), c = static_cast<uint64_t>(s[1]), d = dims_product(s, 2, s.size());
  for (uint64_t b = 0; b < n; ++b)
    for (uint64_t k = 0; k < d; ++k) {
      auto at = [&](uint64_t j) -> double& { return logp[(b * c + j) * d + k]; };
      double mx = -std::numeric_limits<double>::infinity();
      for (uint64_t j = 0; j < c; ++j) mx = std::max(mx, at(j));
      double sum = 0;
      for (uint64_t j = 0; j < c; ++j) sum += std::exp(at(j) - mx);
      const double log_sum = std::log(sum);
      for (uint64_t j = 0; j < c; ++j) at(j) = at(j) - mx - log_sum;
    }
  nll_output(ctx, logp, scores);
  if (ctx.output_wanted(1)) rn::store_reals(ctx, ctx.allocate_output(1, scores.dtype(), s), logp);
}

}  // namespace onnxscope::ref
