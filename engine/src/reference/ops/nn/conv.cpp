// Reference kernel: Conv.
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

void Conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (w.dtype() != x.dtype()) ctx.fail("X and W must have the same element type");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  const int64_t M = w.shape()[0];
  const Tensor* b = ctx.optional_input(2);
  if (b && static_cast<int64_t>(b->element_count()) != M)
    ctx.fail("B has " + std::to_string(b->element_count()) + " values, expected " + std::to_string(M) + " (one per output channel)");
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& out = ctx.allocate_output(0, x.dtype(), output_shape_of(x.shape(), M, win.out));
    nn::conv_f64<S>(x, w, b, win, group, out);
  });
}

}  // namespace onnxscope::ref
