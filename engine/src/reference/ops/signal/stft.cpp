// Reference kernel: STFT.
//
// Quantization covers per-tensor, per-axis and blocked parameters and every
// quantized type of every version. Transforms and windows are computed in
// double and rounded once to the output type.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/mel_weights.h"
#include "core/quant_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"
#include "reference/ops/signal/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// out[b, f, k] = sum_n window[n] * signal[b, f*step + n] * exp(-2*pi*i*k*n/frame_length)
void STFT(KernelContext& ctx) {
  const Tensor& signal = ctx.input(0);
  real::require_float(ctx, signal, "signal");
  if (signal.rank() != 3 || (signal.shape()[2] != 1 && signal.shape()[2] != 2))
    ctx.fail("signal must have shape [batch, length, 1 or 2], got " + shape_to_string(signal.shape()));
  const int64_t batch = signal.shape()[0], length = signal.shape()[1], comps = signal.shape()[2];
  const int64_t step = scalar_int(ctx, ctx.input(1), "frame_step");
  if (step <= 0) ctx.fail("frame_step must be positive, got " + std::to_string(step));
  const Tensor* window = ctx.optional_input(2);
  int64_t frame = length;
  if (window) {
    if (window->rank() != 1) ctx.fail("window must be 1-D, got " + shape_to_string(window->shape()));
    real::require_float(ctx, *window, "window");
    frame = window->shape()[0];
  }
  if (const Tensor* fl = ctx.optional_input(3)) {
    const int64_t v = scalar_int(ctx, *fl, "frame_length");
    if (window && v != frame)
      ctx.fail("frame_length " + std::to_string(v) + " differs from the window length " + std::to_string(frame));
    frame = v;
  }
  if (frame <= 0 || frame > length)
    ctx.fail("frame_length " + std::to_string(frame) + " must be in [1, signal_length " + std::to_string(length) + "]");
  const bool onesided = ctx.attr_int("onesided", 1) != 0;
  if (onesided && comps == 2) ctx.fail("onesided output is not possible for a complex signal");
  const int64_t frames = (length - frame) / step + 1;
  const int64_t bins = onesided ? frame / 2 + 1 : frame;
  // The result buffer before anything is computed: frame_step 1 and a long
  // frame make frames x bins far larger than the signal.
  real::check_work(ctx, Shape{batch, frames, bins, 2}, "the STFT's output");
  const std::vector<double> xs = real_values(signal);
  const std::vector<double> win = window ? real_values(*window) : std::vector<double>(size_t(frame), 1.0);
  const std::vector<cplx> w = twiddles(frame, -1.0);
  std::vector<double> ys(size_t(batch * frames * bins * 2));
  std::vector<cplx> seg(static_cast<size_t>(frame)), spec;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t n = 0; n < frame; ++n) {
        const size_t base = size_t((b * length + f * step + n) * comps);
        seg[size_t(n)] = win[size_t(n)] * cplx(xs[base], comps == 2 ? xs[base + 1] : 0.0);
      }
      dft_line(seg, w, bins, spec);
      for (int64_t k = 0; k < bins; ++k) {
        const cplx acc = spec[size_t(k)];
        const size_t base = size_t(((b * frames + f) * bins + k) * 2);
        ys[base] = acc.real();
        ys[base + 1] = acc.imag();
      }
    }
  }
  real::store_doubles(ctx, ctx.allocate_output(0, signal.dtype(), {batch, frames, bins, 2}), ys);
}

}  // namespace onnxscope::ref
