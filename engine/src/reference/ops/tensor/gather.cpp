// Reference kernel: Gather.
//
// Data movement copies elements without interpreting them, so it works for
// every element type, strings and packed sub-byte types included. Every index
// is bounds-checked; negative indices count from the end where the spec
// allows them.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), data.rank());
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> idx = index_values(ctx, ind, "indices");
  for (int64_t& k : idx) k = wrap_index(ctx, k, dim, axis);

  // output shape: data[:axis] ++ indices.shape ++ data[axis+1:]
  const size_t r = data.shape().size(), a = static_cast<size_t>(axis);
  Shape out_shape = concat_shapes({{&data.shape(), {0, a}}, {&ind.shape(), {0, ind.shape().size()}},
                                   {&data.shape(), {a + 1, r}}});
  Tensor& out = ctx.allocate_output(0, data.dtype(), out_shape);
  const uint64_t outer = dims_product(data.shape(), 0, a), inner = dims_product(data.shape(), a + 1, r);
  const uint64_t n = idx.size();
  ElementCopier copy(ctx, data, out);
  for (uint64_t o = 0; o < outer; ++o)
    for (uint64_t j = 0; j < n; ++j)
      copy.block((o * n + j) * inner, (o * static_cast<uint64_t>(dim) + static_cast<uint64_t>(idx[j])) * inner, inner);
}

}  // namespace onnxscope::ref
