// Reference kernel: NegativeLogLikelihoodLoss.
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

// input holds log-probabilities already.
void NegativeLogLikelihoodLoss(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  rn::require_float(ctx, input, "input");
  nll_output(ctx, real_values(input), input);
}

}  // namespace onnxscope::ref
