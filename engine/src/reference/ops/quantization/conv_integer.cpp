// Reference kernel: ConvInteger.
//
// Float inputs (float16, bfloat16, float, double) are widened to double and
// every product is accumulated in double, then rounded once on store (Conv:
// nn/conv_f64.h, a matrix product for the interior); integer convolutions
// accumulate in int64 (exact for the int8/uint8 inputs allowed).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written (conv_f64.h)
#endif
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/nn/conv_f64.h"
#include "reference/ops/nn/conv_common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Window;

void ConvInteger(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  check_int8(ctx, x, "x");
  check_int8(ctx, w, "w");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  const Tensor* xzp = ctx.optional_input(2);
  if (xzp && xzp->element_count() > 1) ctx.fail("x_zero_point must be a scalar");
  // The int64 sums are checked before they are made (padding can make them huge).
  check_work_buffer(ctx, output_shape_of(x.shape(), w.shape()[0], win.out), "the output (in int64 sums)");
  std::vector<int64_t> y = conv_core(shifted_ints(ctx, x, xzp, "x"), x.shape(),
                                     shifted_ints(ctx, w, ctx.optional_input(3), "w"), w.shape(), win, group);
  Tensor& out = ctx.allocate_output(0, DataType::Int32, output_shape_of(x.shape(), w.shape()[0], win.out));
  int32_t* const po = out.mutable_data<int32_t>();  // fetched once: per element it is a call through the buffer
  for (uint64_t i = 0; i < y.size(); ++i) po[i] = static_cast<int32_t>(y[i]);
}

}  // namespace onnxscope::ref
