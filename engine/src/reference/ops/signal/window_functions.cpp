// Reference kernels: HannWindow, HammingWindow and BlackmanWindow (one cosine-sum kernel).
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
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"
#include "reference/ops/signal/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// w[n] = sum_j a_j * cos(2*pi*j*n / N), N = size (periodic) or size - 1 (symmetric).
void cosine_window(KernelContext& ctx, std::initializer_list<double> coeffs) {
  const int64_t size = scalar_int(ctx, ctx.input(0), "size");
  if (size < 0) ctx.fail("size must be non-negative, got " + std::to_string(size));
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const DataType out_t = numeric_output_type(ctx);
  const double N = double(periodic ? size : size - 1);
  Tensor& out = ctx.allocate_output(0, out_t, {size});
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    double acc = 0;
    int j = 0;
    for (double a : coeffs) acc += a * std::cos(2.0 * std::numbers::pi * j++ * double(n) / N);
    // A symmetric window of length 1 has N = 0 (0/0 in the formula): its single point is 1, as in torch.
    v[size_t(n)] = N == 0 ? 1.0 : acc;
  }
  store_numeric(ctx, out, v);
}

}  // namespace

// sin^2(pi n / N) = 0.5 - 0.5 cos(2 pi n / N)
void HannWindow(KernelContext& ctx) { cosine_window(ctx, {0.5, -0.5}); }
// alpha = 25/46, beta = 1 - alpha (the exact Hamming coefficients, as onnx uses)
void HammingWindow(KernelContext& ctx) { cosine_window(ctx, {25.0 / 46.0, -21.0 / 46.0}); }
void BlackmanWindow(KernelContext& ctx) { cosine_window(ctx, {0.42, -0.5, 0.08}); }

}  // namespace onnxscope::ref
