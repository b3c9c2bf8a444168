// Reference kernel: LpNormalization.
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

// y = x / ||x||_p along `axis`; an all-zero slice gives zeros (opset 22 wording).
void LpNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t p = ctx.attr_int("p", 2);
  if (p != 1 && p != 2) ctx.fail("p must be 1 or 2, got " + std::to_string(p));
  const auto axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank()));
  const Shape& s = x.shape();
  const uint64_t outer = dims_product(s, 0, axis), len = dims_product(s, axis, axis + 1),
                 inner = dims_product(s, axis + 1, s.size());
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t o = 0; o < outer; ++o)
      for (uint64_t k = 0; k < inner; ++k) {
        const uint64_t base = o * len * inner + k;
        double norm = 0;
        for (uint64_t j = 0; j < len; ++j) {
          const double v = static_cast<double>(get<S>(x, base + j * inner));
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        for (uint64_t j = 0; j < len; ++j) {
          const uint64_t i = base + j * inner;
          put_real<S>(y, i, norm == 0 ? 0.0 : static_cast<double>(get<S>(x, i)) / norm);
        }
      }
  });
}

}  // namespace onnxscope::ref
