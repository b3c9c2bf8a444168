// Reference kernel: InstanceNormalization.
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
using rn::put_real;

// y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], statistics per (n, c)
// over the spatial dims.
void InstanceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  const uint64_t c = static_cast<uint64_t>(x.shape()[1]), d = dims_product(x.shape(), 2, x.shape().size());
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]);
  const auto scale = param_values(ctx, ctx.input(1), c, "scale");
  const auto bias = param_values(ctx, ctx.input(2), c, "B");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t nc = 0; nc < n * c; ++nc) {
      const uint64_t base = nc * d, ch = nc % c;
      auto [mean, var] = mean_var(d, [&](uint64_t k) { return static_cast<double>(get<S>(x, base + k)); });
      const double inv = 1.0 / std::sqrt(var + eps);
      for (uint64_t k = 0; k < d; ++k)
        put_real<S>(y, base + k, scale[ch] * (static_cast<double>(get<S>(x, base + k)) - mean) * inv + bias[ch]);
    }
  });
}

}  // namespace onnxscope::ref
