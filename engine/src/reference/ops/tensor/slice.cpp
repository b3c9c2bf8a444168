// Reference kernel: Slice.
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "core/slice_range.h"
#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Slice(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset_version() < 10) {
    if (!ctx.has_attr("starts") || !ctx.has_attr("ends")) ctx.fail("attributes 'starts' and 'ends' are required");
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    if (ctx.has_attr("axes")) axes = ctx.attr_ints("axes");
  } else {
    starts = int_values(ctx, ctx.input(1));
    ends = int_values(ctx, ctx.input(2));
    if (ctx.has_input(3)) axes = int_values(ctx, ctx.input(3));
    if (ctx.has_input(4)) steps = int_values(ctx, ctx.input(4));
  }
  const size_t n = starts.size();
  if (axes.empty() && !(ctx.opset_version() >= 10 && ctx.has_input(3))) {
    axes.resize(n);
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty() && !(ctx.opset_version() >= 10 && ctx.has_input(4))) steps.assign(n, 1);
  if (ends.size() != n || axes.size() != n || steps.size() != n)
    ctx.fail("starts, ends, axes and steps must have the same length");

  const auto strides = strides_of(x.shape());
  Shape out = x.shape();
  std::vector<std::vector<int64_t>> table;
  for (int64_t d = 0; d < rank; ++d) table.push_back(ramp(out[static_cast<size_t>(d)], strides[static_cast<size_t>(d)]));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    const size_t a = static_cast<size_t>(checked_axis(ctx, axes[i], rank));
    if (seen[a]) ctx.fail("axis " + std::to_string(axes[i]) + " is sliced twice");
    seen[a] = true;
    if (steps[i] == 0) ctx.fail("slice step must not be 0");
    const int64_t step = std::max<int64_t>(steps[i], -INT64_MAX);  // as slice_range takes it
    const SliceRange r = slice_range(x.shape()[a], starts[i], ends[i], step);
    const int64_t s = r.start, len = r.count;
    out[a] = len;
    table[a].resize(static_cast<size_t>(len));
    for (int64_t k = 0; k < len; ++k) table[a][static_cast<size_t>(k)] = (s + k * step) * strides[a];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  gather_by_tables(ctx, x, y, table);
}

}  // namespace onnxscope::ref
