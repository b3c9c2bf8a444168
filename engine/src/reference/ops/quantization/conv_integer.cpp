// Reference kernel: ConvInteger.
//
// Float inputs (float16, bfloat16, float, double) are widened to double and
// every product is accumulated in double, then rounded once on store (Conv:
// nn/conv_f64.h, a matrix product for the interior); integer convolutions
// sum exactly (quantization/integer_conv.h).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written (conv_f64.h)
#endif
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/nn/conv_f64.h"
#include "reference/ops/nn/conv_common.h"
#include "reference/ops/quantization/integer_conv.h"
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
  check_work_buffer(ctx, output_shape_of(x.shape(), w.shape()[0], win.out), "the output (in integer sums)");
  const Tensor sums = integer_conv_sums(ctx, x, xzp, w, ctx.optional_input(3), win, group);
  const double* const y = sums.data<double>();
  Tensor& out = ctx.allocate_output(0, DataType::Int32, sums.shape());
  int32_t* const po = out.mutable_data<int32_t>();  // fetched once: per element it is a call through the buffer
  for (uint64_t i = 0; i < sums.element_count(); ++i) po[i] = static_cast<int32_t>(static_cast<int64_t>(y[i]));  // wraps as the int64 sums did
}

}  // namespace onnxscope::ref
