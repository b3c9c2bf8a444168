// Reference kernel: GatherElements.
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

void GatherElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  if (data.rank() < 1) ctx.fail("data must have rank >= 1");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), data.rank());
  const std::vector<uint64_t> targets = element_targets(ctx, data.shape(), ind, axis);
  Tensor& out = ctx.allocate_output(0, data.dtype(), ind.shape());
  ElementCopier copy(ctx, data, out);
  for (uint64_t i = 0; i < targets.size(); ++i) copy(i, targets[i]);
}

}  // namespace onnxscope::ref
