// Reference kernel: ReverseSequence.
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

void ReverseSequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& lens_t = ctx.input(1);
  if (x.rank() < 2) ctx.fail("input must have rank >= 2, got shape " + shape_to_string(x.shape()));
  const int64_t batch_axis = ctx.attr_int("batch_axis", 1), time_axis = ctx.attr_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order, got batch_axis=" + std::to_string(batch_axis) +
             ", time_axis=" + std::to_string(time_axis));
  const int64_t batch = x.shape()[batch_axis], time = x.shape()[time_axis];
  if (lens_t.rank() != 1 || lens_t.shape()[0] != batch)
    ctx.fail("sequence_lens must have shape [" + std::to_string(batch) + "], got " + shape_to_string(lens_t.shape()));
  const std::vector<int64_t> lens = index_values(ctx, lens_t, "sequence_lens");
  for (size_t b = 0; b < lens.size(); ++b)
    if (lens[b] < 0 || lens[b] > time)
      ctx.fail("sequence_lens[" + std::to_string(b) + "] = " + std::to_string(lens[b]) + " is outside [0, " +
               std::to_string(time) + "]");
  Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
  const int64_t time_stride = strides_of(x.shape())[time_axis];
  ElementCopier copy(ctx, x, out);
  Odometer pos(x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i, pos.next()) {
    const int64_t b = pos.index()[batch_axis], t = pos.index()[time_axis];
    const int64_t len = lens[b];
    // Within the first len steps, time t reads from step len - 1 - t.
    const int64_t src = t < len ? static_cast<int64_t>(i) + (len - 1 - 2 * t) * time_stride : static_cast<int64_t>(i);
    copy(i, static_cast<uint64_t>(src));
  }
}

}  // namespace onnxscope::ref
