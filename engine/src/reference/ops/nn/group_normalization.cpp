// Reference kernel: GroupNormalization.
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

// Statistics per (n, group) over the group's C/G channels and the spatial dims;
// Normalized is rounded to X's type, then y = scale * Normalized + bias.
// Opset 18 has one scale/bias per group, opset 21 one per channel.
void GroupNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  ctx.required_attr("num_groups");
  const int64_t groups = ctx.attr_int("num_groups", 0);
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]), c = static_cast<uint64_t>(x.shape()[1]);
  const uint64_t d = dims_product(x.shape(), 2, x.shape().size());
  if (groups <= 0 || c % static_cast<uint64_t>(groups) != 0)
    ctx.fail("num_groups (" + std::to_string(groups) + ") must be positive and divide the channel count " +
             std::to_string(c));
  const uint64_t g_count = static_cast<uint64_t>(groups), per_group = c / g_count;
  const bool per_channel = ctx.opset_version() >= 21;
  const auto scale = param_values(ctx, ctx.input(1), per_channel ? c : g_count, "scale");
  const auto bias = param_values(ctx, ctx.input(2), per_channel ? c : g_count, "bias");
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const uint64_t block = per_group * d;  // a group's elements are contiguous
    for (uint64_t ng = 0; ng < n * g_count; ++ng) {
      const uint64_t base = ng * block, g = ng % g_count;
      auto [mean, var] = mean_var(block, [&](uint64_t k) { return static_cast<double>(get<S>(x, base + k)); });
      const double inv = 1.0 / std::sqrt(var + eps);
      for (uint64_t k = 0; k < block; ++k) {
        const uint64_t p = per_channel ? g * per_group + k / d : g;
        const double normalized = round_as<S>((static_cast<double>(get<S>(x, base + k)) - mean) * inv);
        put_real<S>(y, base + k, scale[p] * normalized + bias[p]);
      }
    }
  });
}

}  // namespace onnxscope::ref
