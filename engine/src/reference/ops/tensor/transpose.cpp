// Reference kernel: Transpose.
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) perm[static_cast<size_t>(d)] = rank - 1 - d;  // default: reverse
  if (ctx.has_attr("perm")) perm = ctx.attr_ints("perm");
  if (static_cast<int64_t>(perm.size()) != rank)
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for an input of rank " + std::to_string(rank));
  std::vector<bool> used(static_cast<size_t>(rank), false);
  for (int64_t& p : perm) {
    p = checked_axis(ctx, p, rank, "perm entry");
    if (used[static_cast<size_t>(p)]) ctx.fail("perm is not a permutation: " + shape_to_string(ctx.attr_ints("perm")));
    used[static_cast<size_t>(p)] = true;
  }
  const auto strides = strides_of(x.shape());
  Shape out;
  std::vector<std::vector<int64_t>> table;
  for (int64_t p : perm) {
    out.push_back(x.shape()[static_cast<size_t>(p)]);
    table.push_back(ramp(out.back(), strides[static_cast<size_t>(p)]));
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  gather_by_tables(ctx, x, y, table);
}

}  // namespace onnxscope::ref
