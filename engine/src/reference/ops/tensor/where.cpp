// Reference kernel: Where, three inputs broadcast together.
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Where(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  if (cond.dtype() != DataType::Bool) ctx.fail("condition must be bool");
  if (x.dtype() != y.dtype()) ctx.fail("X and Y must have the same element type");
  const Shape* shapes[] = {&cond.shape(), &x.shape(), &y.shape()};
  Shape shape = broadcast_shapes(ctx, shapes);
  Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
  BroadcastIndex bi(shape, shapes);
  if (x.is_string()) {
    StringBudget budget(&ctx);
    for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
      const std::string& s = load<bool>(cond, bi.offsets()[0]) ? x.strings()[bi.offsets()[1]] : y.strings()[bi.offsets()[2]];
      budget.add(s);
      out.mutable_strings()[i] = s;
    }
    return;
  }
  // Copy raw elements: works for every fixed-width type without conversion.
  const uint64_t elem = *storage_bytes(x.dtype(), 1);
  if (is_packed_dtype(x.dtype())) ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
    const bool pick_x = load<bool>(cond, bi.offsets()[0]);
    const Tensor& src = pick_x ? x : y;
    std::memcpy(out.mutable_raw() + i * elem, src.raw() + bi.offsets()[pick_x ? 1 : 2] * elem, elem);
  }
}

}  // namespace onnxscope::ref
