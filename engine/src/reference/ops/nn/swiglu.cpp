// Reference kernel: SwiGLU.
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

// Y = A * sigmoid(alpha * A) * B, same shapes, no broadcasting.
void SwiGLU(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& Bt = ctx.input(1);
  real::require_float(ctx, A, "A");
  if (Bt.dtype() != A.dtype()) ctx.fail("A and B must have the same type");
  if (Bt.shape() != A.shape())
    ctx.fail("A and B must have identical shapes (no broadcasting), got " + shape_to_string(A.shape()) + " and " + shape_to_string(Bt.shape()));
  const double alpha = ctx.attr_float("alpha", 1.0f);
  const std::vector<double> a = real_values(A), b = real_values(Bt);
  std::vector<double> y(a.size());
  const DataType t = A.dtype();
  // Swish_alpha(A) is a tensor of A's type (the Swish operator's output) before the product.
  for (size_t i = 0; i < a.size(); ++i) y[i] = round_to(t, a[i] * sigmoid(alpha * a[i])) * b[i];
  real::store_doubles(ctx, ctx.allocate_output(0, A.dtype(), A.shape()), y);
}

}  // namespace onnxscope::ref
