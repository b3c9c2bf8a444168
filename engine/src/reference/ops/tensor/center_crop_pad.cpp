// Reference kernel: CenterCropPad.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void CenterCropPad(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const std::vector<int64_t> shape = int_values(ctx, ctx.input(1));
  const std::vector<int64_t> axes = checked_axes(ctx, ctx.attr_ints("axes"), ctx.has_attr("axes"), rank);
  if (shape.size() != axes.size())
    ctx.fail("shape has " + std::to_string(shape.size()) + " entries for " + std::to_string(axes.size()) + " axes");
  Shape out = x.shape();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (shape[i] < 0) ctx.fail("shape " + shape_to_string(shape) + " has a negative dimension");
    out[static_cast<size_t>(axes[i])] = shape[i];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  // Crop or pad symmetrically; an odd difference leaves the extra element at the end.
  const auto strides = strides_of(x.shape());
  std::vector<std::vector<int64_t>> table(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const int64_t n = x.shape()[d];
    const int64_t shift = n >= out[d] ? (n - out[d]) / 2 : -((out[d] - n) / 2);
    for (int64_t k = 0; k < out[d]; ++k) {
      const int64_t c = k + shift;
      table[d].push_back(c < 0 || c >= n ? -1 : c * strides[d]);
    }
  }
  gather_by_tables(ctx, x, y, table);
}

}  // namespace onnxscope::ref
