// Reference kernels: ArgMax and ArgMin.
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

template <bool Max>
void arg_extreme(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.opset_version() >= 12 && ctx.attr_int("select_last_index", 0) != 0;
  if (x.rank() == 0) {  // a scalar: the only element is at index 0 (axis 0, as numpy's argmax takes it)
    if (const int64_t a = ctx.attr_int("axis", 0); a != 0) ctx.fail("axis " + std::to_string(a) + " of a scalar");
    ctx.allocate_output(0, DataType::Int64, {});
    return;
  }
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank());
  const int64_t dim = x.shape()[axis];
  if (dim == 0) ctx.fail("cannot take the arg-extreme over axis " + std::to_string(axis) + " of size 0");
  Shape out_shape = x.shape();
  if (keepdims) out_shape[axis] = 1;
  else out_shape.erase(out_shape.begin() + axis);
  Tensor& y = ctx.allocate_output(0, DataType::Int64, out_shape);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(x.shape(), 0, a), inner = dims_product(x.shape(), a + 1, x.shape().size());
  const uint64_t d = static_cast<uint64_t>(dim);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for (uint64_t o = 0; o < outer; ++o) {
      for (uint64_t i = 0; i < inner; ++i) {
        C best = get<S>(x, o * d * inner + i);
        uint64_t best_j = 0;
        for (uint64_t j = 1; j < d; ++j) {
          const C cur = get<S>(x, (o * d + j) * inner + i);
          bool better = false, tie = false;
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(best)) {
              tie = std::isnan(cur);  // numpy: the first NaN wins for both argmax and argmin
            } else if (std::isnan(cur)) {
              better = true;
            } else {
              better = Max ? cur > best : cur < best;
              tie = cur == best;
            }
          } else {
            better = Max ? cur > best : cur < best;
            tie = cur == best;
          }
          if (better || (tie && last)) {
            best = cur;
            best_j = j;
          }
        }
        store<int64_t>(y, o * inner + i, static_cast<int64_t>(best_j));
      }
    }
  });
}

}  // namespace

void ArgMax(KernelContext& ctx) { arg_extreme<true>(ctx); }
void ArgMin(KernelContext& ctx) { arg_extreme<false>(ctx); }

}  // namespace onnxscope::ref
