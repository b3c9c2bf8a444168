// Reference kernel: QLinearConv.
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
#include "reference/ops/math/common.h"
#include "reference/ops/nn/conv_f64.h"
#include "reference/ops/nn/conv_common.h"
#include "reference/ops/quantization/integer_conv.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Window;
namespace {

float scalar_float(KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.element_count() != 1) ctx.fail(std::string(what) + " must be a scalar");
  return static_cast<float>(t.element_as_double(0));
}

}  // namespace

void QLinearConv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  check_int8(ctx, x, "x");
  check_int8(ctx, w, "w");
  const Tensor& xzp = ctx.input(2);
  const Tensor& yzp = ctx.input(7);
  if (xzp.element_count() != 1) ctx.fail("x_zero_point must be a scalar");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  // Padding from attributes can make the output far larger than the input:
  // the int64 sums are checked before they are made.
  check_work_buffer(ctx, output_shape_of(x.shape(), w.shape()[0], win.out), "the output (in integer sums)");
  Tensor sums = integer_conv_sums(ctx, x, &xzp, w, &ctx.input(5), win, group);
  double* const acc = sums.mutable_data<double>();
  const int64_t N = x.shape()[0], M = w.shape()[0], OS = nn::product(win.out);
  if (const Tensor* b = ctx.optional_input(8)) {  // int32: exact, and so are the sums plus them
    if (b->dtype() != DataType::Int32) ctx.fail("B must be int32");
    if (static_cast<int64_t>(b->element_count()) != M)
      ctx.fail("B has " + std::to_string(b->element_count()) + " values, expected " + std::to_string(M) + " (one per output channel)");
    const int32_t* const bias = b->data<int32_t>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t o = 0; o < OS; ++o) acc[(n * M + m) * OS + o] += static_cast<double>(bias[m]);
  }
  const float x_scale = scalar_float(ctx, ctx.input(1), "x_scale");
  const float y_scale = scalar_float(ctx, ctx.input(6), "y_scale");
  const Tensor& ws = ctx.input(4);
  if (ws.element_count() != 1 && (ws.rank() != 1 || ws.shape()[0] != M))
    ctx.fail("w_scale must be a scalar or have one value per output channel");
  if (yzp.element_count() != 1) ctx.fail("y_zero_point must be a scalar");
  const DataType out_type = yzp.dtype();
  check_int8(ctx, yzp, "y_zero_point");
  const double lo = out_type == DataType::Int8 ? -128 : 0, hi = out_type == DataType::Int8 ? 127 : 255;
  const double zp = yzp.element_as_double(0);
  Tensor& out = ctx.allocate_output(0, out_type, output_shape_of(x.shape(), M, win.out));
  std::byte* const po = out.mutable_raw();  // fetched once: per element it is a call through the buffer
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      // The requantisation multiplier is formed in float, like the scales.
      const float w_scale = static_cast<float>(ws.element_as_double(ws.element_count() == 1 ? 0 : m));
      const double mult = static_cast<float>(x_scale * w_scale / y_scale);
      for (int64_t o = 0; o < OS; ++o) {
        const uint64_t i = static_cast<uint64_t>((n * M + m) * OS + o);
        // A NaN multiplier (scales of 0 / 0, NaN or inf) gives the zero point, as QuantizeLinear's NaN does.
        const double r = std::nearbyint(acc[i] * mult);
        const double q = std::clamp((std::isnan(r) ? 0.0 : r) + zp, lo, hi);
        if (out_type == DataType::Int8) store_at<int8_t>(po, i, static_cast<int8_t>(q));
        else store_at<uint8_t>(po, i, static_cast<uint8_t>(q));
      }
    }
}

}  // namespace onnxscope::ref
