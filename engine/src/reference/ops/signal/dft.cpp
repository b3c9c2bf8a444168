// Reference kernel: DFT.
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

void DFT(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& input = ctx.input(0);
  real::require_float(ctx, input, "input");
  const int64_t rank = input.rank();
  if (rank < 2) ctx.fail("input must have rank >= 2, got " + shape_to_string(input.shape()));
  const int64_t comps = input.shape().back();
  if (comps != 1 && comps != 2) ctx.fail("the last dimension must be 1 (real) or 2 (complex), got " + std::to_string(comps));
  int64_t axis = opset >= 20 ? -2 : ctx.attr_int("axis", 1);
  if (opset >= 20) {
    if (const Tensor* a = ctx.optional_input(2)) axis = scalar_int(ctx, *a, "axis");
  }
  axis = normalize_axis(ctx, axis, rank);
  if (axis == rank - 1) ctx.fail("axis must not be the last (real/imaginary) dimension");
  const bool inverse = ctx.attr_int("inverse", 0) != 0;
  const bool onesided = ctx.attr_int("onesided", 0) != 0;
  const int64_t n_in = input.shape()[size_t(axis)];
  int64_t len = inverse && onesided ? 2 * (n_in - 1) : n_in;
  if (const Tensor* l = ctx.optional_input(1)) len = scalar_int(ctx, *l, "dft_length");
  if (len <= 0) ctx.fail("dft_length must be positive, got " + std::to_string(len));

  // Output extent along the axis and number of components.
  const int64_t n_out = (!inverse && onesided) ? len / 2 + 1 : len;
  const int64_t out_comps = (inverse && onesided) ? 1 : 2;
  Shape out_shape = input.shape();
  out_shape[size_t(axis)] = n_out;
  out_shape.back() = out_comps;

  real::check_work(ctx, Shape{len}, "dft_length");
  Tensor& out = ctx.allocate_output(0, input.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= input.shape()[size_t(d)];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= input.shape()[size_t(d)];
  const std::vector<double> xs = real_values(input);
  std::vector<double> ys(size_t(outer * n_out * inner * out_comps));
  const std::vector<cplx> w = twiddles(len, inverse ? 1.0 : -1.0);
  std::vector<cplx> sig(static_cast<size_t>(len)), spec;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      // The line of the signal, truncated or zero-padded to len.
      auto at = [&](int64_t m) {
        const size_t base = size_t(((o * n_in + m) * inner + in) * comps);
        return cplx(xs[base], comps == 2 ? xs[base + 1] : 0.0);
      };
      if (inverse && onesided) {
        // IRFFT: rebuild the Hermitian spectrum from its first len/2+1 bins; the
        // imaginary parts of the DC and (even len) Nyquist bins are dropped.
        const int64_t half = len / 2 + 1;
        for (int64_t k = 0; k < len; ++k) {
          cplx v;
          if (k < half) v = k < n_in ? at(k) : cplx(0, 0);
          else v = std::conj(len - k < n_in ? at(len - k) : cplx(0, 0));
          sig[size_t(k)] = v;
        }
        sig[0] = cplx(sig[0].real(), 0);
        if (len % 2 == 0) sig[size_t(len / 2)] = cplx(sig[size_t(len / 2)].real(), 0);
      } else {
        for (int64_t m = 0; m < len; ++m) sig[size_t(m)] = m < n_in ? at(m) : cplx(0, 0);
      }
      dft_line(sig, w, n_out, spec);
      for (int64_t k = 0; k < n_out; ++k) {
        cplx acc = spec[size_t(k)];
        if (inverse) acc /= double(len);
        const size_t base = size_t(((o * n_out + k) * inner + in) * out_comps);
        ys[base] = acc.real();
        if (out_comps == 2) ys[base + 1] = acc.imag();
      }
    }
  }
  real::store_doubles(ctx, out, ys);
}

}  // namespace onnxscope::ref
