// Reference kernel: DeformConv.
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

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/conv_f64.h"
#include "reference/ops/nn/conv_common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Window;
namespace {

// Bilinear sample of a 2-D plane at (h, w); taps outside the plane read 0.
double bilinear_zero(const double* plane, int64_t H, int64_t W, double h, double w) {
  // Offsets from data: NaN or inf makes NaN weights (as numpy's would); far outside, every tap reads 0.
  if (!std::isfinite(h) || !std::isfinite(w)) return NAN;
  if (std::fabs(h) > 4.0e15 || std::fabs(w) > 4.0e15) return 0.0;
  const double h0f = std::floor(h), w0f = std::floor(w);
  const int64_t h0 = static_cast<int64_t>(h0f), w0 = static_cast<int64_t>(w0f);
  const double lh = h - h0f, lw = w - w0f;
  auto at = [&](int64_t r, int64_t c) { return (r < 0 || r >= H || c < 0 || c >= W) ? 0.0 : plane[r * W + c]; };
  return (1 - lh) * (1 - lw) * at(h0, w0) + (1 - lh) * lw * at(h0, w0 + 1) + lh * (1 - lw) * at(h0 + 1, w0) +
         lh * lw * at(h0 + 1, w0 + 1);
}

}  // namespace

// DeformConv (2-D): like Conv, but each kernel tap is moved by a learned
// offset and sampled bilinearly (zero outside), optionally scaled by a mask.
void DeformConv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  if (x.rank() != 4) ctx.fail("DeformConv supports 2-D inputs [N, C, H, W] only, got " + shape_to_string(x.shape()));
  if (w.dtype() != x.dtype() || offset.dtype() != x.dtype()) ctx.fail("X, W and offset must have the same element type");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t offset_group = ctx.attr_int("offset_group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], Cg = C / group, Mg = M / group;
  const int64_t kH = win.kernel[0], kW = win.kernel[1], KS = kH * kW;
  const int64_t oH = win.out[0], oW = win.out[1];
  if (offset_group < 1 || C % offset_group != 0) ctx.fail("offset_group must divide the input channels");
  if (offset.shape() != Shape{N, offset_group * KS * 2, oH, oW})
    ctx.fail("offset must have shape " + shape_to_string(Shape{N, offset_group * KS * 2, oH, oW}) + ", got " +
             shape_to_string(offset.shape()));
  const Tensor* mask = ctx.optional_input(4);
  if (mask && mask->shape() != Shape{N, offset_group * KS, oH, oW})
    ctx.fail("mask must have shape " + shape_to_string(Shape{N, offset_group * KS, oH, oW}) + ", got " +
             shape_to_string(mask->shape()));
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x), wv = real_values(w), ov = real_values(offset);
    const std::vector<double> mv = mask ? real_values(*mask) : std::vector<double>();
    const int64_t Cog = C / offset_group, OS = oH * oW;
    check_work_buffer(ctx, {N, M, OS}, "the output (in double)");
    check_work_buffer(ctx, {C, KS}, "the sampled columns");
    std::vector<double> y(static_cast<size_t>(N * M * OS), 0.0);  // accumulated in double
    std::vector<double> samples(static_cast<size_t>(C * KS));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < oH; ++oh, poll_deadline())
        for (int64_t ow = 0; ow < oW; ++ow) {
          // Sample every input channel at every (offset) kernel tap.
          for (int64_t c = 0; c < C; ++c) {
            const int64_t og = c / Cog;
            for (int64_t kp = 0; kp < KS; ++kp) {
              const int64_t kh = kp / kW, kw = kp % kW;
              const int64_t ch = ((og * KS + kp) * 2);
              const double dh = ov[((n * offset_group * KS * 2 + ch) * oH + oh) * oW + ow];
              const double dw = ov[((n * offset_group * KS * 2 + ch + 1) * oH + oh) * oW + ow];
              const double h = static_cast<double>(oh * win.strides[0] - win.pad_begin[0] + kh * win.dilations[0]) + dh;
              const double wc = static_cast<double>(ow * win.strides[1] - win.pad_begin[1] + kw * win.dilations[1]) + dw;
              double v = bilinear_zero(xv.data() + (n * C + c) * H * W, H, W, h, wc);
              if (mask) v *= mv[((n * offset_group * KS + og * KS + kp) * oH + oh) * oW + ow];
              samples[c * KS + kp] = v;
            }
          }
          for (int64_t m = 0; m < M; ++m) {
            const int64_t g = m / Mg;
            double acc = 0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kp = 0; kp < KS; ++kp) acc += samples[(g * Cg + c) * KS + kp] * wv[(m * Cg + c) * KS + kp];
            y[(n * M + m) * OS + oh * oW + ow] = acc;
          }
        }
    if (const Tensor* b = ctx.optional_input(3)) add_bias(ctx, y, N, M, OS, real_values(*b));
    Tensor& out = ctx.allocate_output(0, x.dtype(), Shape{N, M, oH, oW});
    nn::put_all<S>(out, y);
  });
}

}  // namespace onnxscope::ref
