// Reference kernel: Compress.
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

void Compress(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cond = ctx.input(1);
  if (cond.dtype() != DataType::Bool) ctx.fail("condition must be bool, got " + dtype_str(cond));
  if (cond.rank() != 1) ctx.fail("condition must be 1-D, got shape " + shape_to_string(cond.shape()));
  // Without an axis the input is flattened first.
  const bool has_axis = ctx.has_attr("axis");
  Shape view = has_axis ? x.shape() : Shape{static_cast<int64_t>(x.element_count())};
  if (has_axis && x.rank() < 1) ctx.fail("input must have rank >= 1 when axis is given");
  const int64_t axis = has_axis ? normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank()) : 0;
  const int64_t dim = view[axis];
  std::vector<uint64_t> selected;
  for (uint64_t i = 0; i < cond.element_count(); ++i) {
    if (!load<bool>(cond, i)) continue;
    if (static_cast<int64_t>(i) >= dim)
      ctx.fail("condition is true at position " + std::to_string(i) + ", beyond the size " + std::to_string(dim) +
               " of axis " + std::to_string(axis));
    selected.push_back(i);
  }
  Shape out_shape = view;
  out_shape[axis] = static_cast<int64_t>(selected.size());
  Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
  const size_t a = static_cast<size_t>(axis);
  const uint64_t outer = dims_product(view, 0, a), inner = dims_product(view, a + 1, view.size());
  ElementCopier copy(ctx, x, out);
  for (uint64_t o = 0; o < outer; ++o)
    for (uint64_t j = 0; j < selected.size(); ++j)
      copy.block((o * selected.size() + j) * inner, (o * static_cast<uint64_t>(dim) + selected[j]) * inner, inner);
}

}  // namespace onnxscope::ref
