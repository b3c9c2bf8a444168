// Reference kernels: CumSum and CumProd.
//
// Ordering of floats follows numpy's sort: NaN sorts after every number and
// NaNs are equal to each other (TopK puts NaN first when largest=1, Unique
// collapses NaNs, ArgMax and ArgMin both pick NaN like numpy does).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

template <bool Prod>
void cumulative(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("x must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, scalar_int(ctx, ctx.input(1), "axis"), x.rank());
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(x.shape(), 0, a), inner = dims_product(x.shape(), a + 1, x.shape().size());
  const uint64_t d = static_cast<uint64_t>(x.shape()[axis]);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    // Floats accumulate in double (rounded once on store); integers in uint64,
    // which wraps exactly like the element type does once truncated.
    using Acc = std::conditional_t<std::is_floating_point_v<C>, double, uint64_t>;
    for (uint64_t o = 0; o < outer; ++o) {
      for (uint64_t i = 0; i < inner; ++i) {
        Acc acc = Prod ? Acc(1) : Acc(0);
        for (uint64_t step = 0; step < d; ++step) {
          const uint64_t j = reverse ? d - 1 - step : step;
          const uint64_t off = (o * d + j) * inner + i;
          const Acc v = static_cast<Acc>(get<S>(x, off));
          if (exclusive) put<S>(y, off, static_cast<C>(acc));
          acc = Prod ? Acc(acc * v) : Acc(acc + v);
          if (!exclusive) put<S>(y, off, static_cast<C>(acc));
        }
      }
    }
  });
}

}  // namespace

void CumSum(KernelContext& ctx) { cumulative<false>(ctx); }
void CumProd(KernelContext& ctx) { cumulative<true>(ctx); }

}  // namespace onnxscope::ref
