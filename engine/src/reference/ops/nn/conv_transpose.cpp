// Reference kernel: ConvTranspose.
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

using nn::Counter;
using nn::Window;
namespace {

// Python-style floor division (for pads derived from output_shape, which may be negative).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

void ConvTranspose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (w.dtype() != x.dtype()) ctx.fail("X and W must have the same element type");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, true);
  const Shape& xs = x.shape();
  const size_t k = xs.size() - 2;
  const int64_t N = xs[0], C = xs[1], Cg = C / group, Mg = w.shape()[1], M = Mg * group;
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(k, 0));
  if (out_pad.empty()) out_pad.assign(k, 0);
  if (out_pad.size() != k) ctx.fail("output_padding must have one value per spatial dimension");
  for (size_t d = 0; d < k; ++d)
    if (out_pad[d] < 0 || (out_pad[d] >= win.strides[d] && out_pad[d] >= win.dilations[d]))
      ctx.fail("output_padding must be smaller than the stride or the dilation");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID" && !auto_pad.empty())
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.empty()) pads.assign(2 * k, 0);
  if (pads.size() != 2 * k) ctx.fail("pads must have 2 values per spatial dimension");
  std::vector<int64_t> out_shape = ctx.attr_ints("output_shape");
  if (out_shape.size() == k + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != k) ctx.fail("output_shape must have one value per spatial dimension");
  for (int64_t v : out_shape)
    if (v < 0 || v > nn::kMaxWindowValue) ctx.fail("output_shape values must be in [0, 2^40]");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  win.pad_begin.assign(k, 0);
  win.pad_end.assign(k, 0);
  win.out.assign(k, 0);
  for (size_t d = 0; d < k; ++d) {
    const int64_t span = (win.kernel[d] - 1) * win.dilations[d] + 1;
    const int64_t full = win.strides[d] * (xs[d + 2] - 1) + out_pad[d] + span;  // unpadded output extent
    if (!out_shape.empty() || same) {
      // Pads follow from the requested output size (output_shape, or in * stride for SAME).
      win.out[d] = !out_shape.empty() ? out_shape[d] : xs[d + 2] * win.strides[d];
      const int64_t total = full - win.out[d];
      const int64_t half = floor_div(total, 2);
      win.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      win.pad_end[d] = total - win.pad_begin[d];
    } else {
      if (pads[d] < 0 || pads[k + d] < 0 || pads[d] > nn::kMaxWindowValue || pads[k + d] > nn::kMaxWindowValue)
        ctx.fail("pads must be in [0, 2^40]");
      if (auto_pad != "VALID") {
        win.pad_begin[d] = pads[d];
        win.pad_end[d] = pads[k + d];
      }
      win.out[d] = full - win.pad_begin[d] - win.pad_end[d];
    }
    if (win.out[d] < 0) ctx.fail("the output size of spatial dimension " + std::to_string(d) + " is negative");
  }
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x), wv = real_values(w);
    const int64_t IS = nn::product(win.in), OS = nn::product(win.out), KS = nn::product(win.kernel);
    const auto out_strides = strides_of(win.out);
    // Scatter form: y[n, m, i * stride - pad + k * dilation] += x[n, c, i] * w[c, m, k],
    // accumulated in double.
    check_work_buffer(ctx, {N, M, OS}, "the output (in double)");
    std::vector<double> y(static_cast<size_t>(N * M * OS), 0.0);
    std::vector<std::vector<int64_t>> kpos;
    for (Counter kc(win.kernel); kc.valid(); kc.next()) kpos.push_back(kc.index);
    std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel flat index, output flat index)
    int64_t ip = 0;
    for (Counter ic(win.in); ic.valid(); ic.next(), ++ip) {
      if ((ip & 63) == 0) poll_deadline();
      taps.clear();
      for (int64_t kp = 0; kp < KS; ++kp) {
        int64_t op = 0;
        bool inside = true;
        for (size_t d = 0; d < k && inside; ++d) {
          const int64_t pos = ic.index[d] * win.strides[d] - win.pad_begin[d] + kpos[kp][d] * win.dilations[d];
          if (pos < 0 || pos >= win.out[d]) inside = false;
          op += pos * out_strides[d];
        }
        if (inside) taps.emplace_back(kp, op);
      }
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t g = c / Cg;
          const double xval = xv[(n * C + c) * IS + ip];
          for (int64_t mm = 0; mm < Mg; ++mm) {
            const double* wp = wv.data() + (c * Mg + mm) * KS;
            double* yp = y.data() + (n * M + g * Mg + mm) * OS;
            for (const auto& [kp, op] : taps) yp[op] += xval * wp[kp];
          }
        }
    }
    if (const Tensor* b = ctx.optional_input(2)) add_bias(ctx, y, N, M, OS, real_values(*b));
    Tensor& out = ctx.allocate_output(0, x.dtype(), output_shape_of(xs, M, win.out));
    nn::put_all<S>(out, y);
  });
}

}  // namespace onnxscope::ref
