// Reference kernel: LRN.
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::dims_product;
using rn::put_real;

// y = x / (bias + alpha / size * sum of x^2 over the channels
// [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to [0, C-1]) ^ beta.
void LRN(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("X must have rank 2 or more (N x C x ...), got " + shape_to_string(x.shape()));
  ctx.required_attr("size");
  const int64_t size = ctx.attr_int("size", 0);
  if (size <= 0) ctx.fail("size must be positive, got " + std::to_string(size));
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f),
               bias = ctx.attr_float("bias", 1.0f);
  const int64_t c = x.shape()[1];
  const uint64_t n = static_cast<uint64_t>(x.shape()[0]), d = dims_product(x.shape(), 2, x.shape().size());
  const int64_t before = (size - 1) / 2, after = size / 2;  // floor((size-1)/2), ceil((size-1)/2)
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (uint64_t k = 0; k < d; ++k) {
          double sq = 0;
          for (int64_t i = std::max<int64_t>(0, ch - before); i <= std::min(c - 1, ch + after); ++i) {
            const double v = static_cast<double>(get<S>(x, (b * c + i) * d + k));
            sq += v * v;
          }
          const uint64_t at = (b * c + ch) * d + k;
          put_real<S>(y, at, static_cast<double>(get<S>(x, at)) / std::pow(bias + alpha / size * sq, beta));
        }
  });
}

}  // namespace onnxscope::ref
