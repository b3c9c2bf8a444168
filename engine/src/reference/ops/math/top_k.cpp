// Reference kernel: TopK.
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

void TopK(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t v = ctx.opset_version();
  // k is an attribute in opset 1, the second input from 10; largest/sorted from 11.
  int64_t k = 0;
  if (v < 10) {
    if (!ctx.has_attr("k")) ctx.fail("attribute 'k' is required before opset 10");
    k = ctx.attr_int("k", 0);
  } else {
    k = scalar_int(ctx, ctx.input(1), "K");
  }
  const bool largest = v < 11 || ctx.attr_int("largest", 1) != 0;
  // sorted=0 leaves the order unspecified; the sorted order is always returned.
  if (x.rank() < 1) ctx.fail("X must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", -1), x.rank());
  const int64_t dim = x.shape()[axis];
  if (k < 0 || k > dim)
    ctx.fail("k = " + std::to_string(k) + " must be in [0, " + std::to_string(dim) + "], the size of axis " +
             std::to_string(axis));
  Shape out_shape = x.shape();
  out_shape[axis] = k;
  Tensor& values = ctx.allocate_output(0, x.dtype(), out_shape);
  Tensor& indices = ctx.allocate_output(1, DataType::Int64, out_shape);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(x.shape(), 0, a), inner = dims_product(x.shape(), a + 1, x.shape().size());
  const uint64_t d = static_cast<uint64_t>(dim), uk = static_cast<uint64_t>(k);
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    std::vector<std::pair<C, int64_t>> line(d);
    // Ties keep the lower index first, whichever direction (like a stable argsort).
    auto before = [&](const std::pair<C, int64_t>& p, const std::pair<C, int64_t>& q) {
      const bool p_first = largest ? value_less(q.first, p.first) : value_less(p.first, q.first);
      const bool q_first = largest ? value_less(p.first, q.first) : value_less(q.first, p.first);
      if (p_first != q_first) return p_first;
      return p.second < q.second;
    };
    for (uint64_t o = 0; o < outer; ++o) {
      for (uint64_t i = 0; i < inner; ++i) {
        for (uint64_t j = 0; j < d; ++j) line[j] = {get<S>(x, (o * d + j) * inner + i), static_cast<int64_t>(j)};
        std::partial_sort(line.begin(), line.begin() + static_cast<int64_t>(uk), line.end(), before);
        for (uint64_t j = 0; j < uk; ++j) {
          const uint64_t dst = (o * uk + j) * inner + i;
          // Copy the original element so its exact bits survive (e.g. -0.0, NaN payloads).
          store<S>(values, dst, load<S>(x, (o * d + static_cast<uint64_t>(line[j].second)) * inner + i));
          store<int64_t>(indices, dst, line[j].second);
        }
      }
    }
  });
}

}  // namespace onnxscope::ref
