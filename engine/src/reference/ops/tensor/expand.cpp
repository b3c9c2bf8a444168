// Reference kernel: Expand.
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

void Expand(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape shape = int_values(ctx, ctx.input(1));
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape " + shape_to_string(shape) + " has a negative dimension");
  const Shape out = broadcast_shapes(ctx, x.shape(), shape);  // bidirectional, like numpy
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  const auto strides = strides_of(x.shape());
  const size_t off = out.size() - x.shape().size();
  std::vector<std::vector<int64_t>> table;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool repeated = d < off || x.shape()[d - off] == 1;
    table.push_back(repeated ? std::vector<int64_t>(static_cast<size_t>(out[d]), 0) : ramp(out[d], strides[d - off]));
  }
  gather_by_tables(ctx, x, y, table);
}

}  // namespace onnxscope::ref
