// Reference kernel: ConstantOfShape.
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

void ConstantOfShape(KernelContext& ctx) {
  const Shape dims = int_values(ctx, ctx.input(0));
  for (int64_t d : dims)
    if (d < 0) ctx.fail("shape " + shape_to_string(dims) + " has a negative dimension");
  const Tensor* value = ctx.attr_tensor("value");
  if (value && value->element_count() != 1)
    ctx.fail("attribute 'value' must hold exactly one element, got " + std::to_string(value->element_count()));
  Tensor& y = ctx.allocate_output(0, value ? value->dtype() : DataType::Float, dims);
  if (!value) return;  // default: float zeros
  ElementMover move(*value, y, &ctx);
  for (uint64_t i = 0; i < y.element_count(); ++i) move(i, 0);
}

}  // namespace onnxscope::ref
