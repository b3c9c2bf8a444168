// Reference kernel: MelWeightMatrix.
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

namespace {

double scalar_real(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.element_count() != 1 || t.rank() > 1) ctx.fail(std::string(what) + " must be a scalar, got " + shape_to_string(t.shape()));
  return t.element_as_double(0);
}

}  // namespace

// Triangular filters evenly spaced on the mel scale mel(f) = 2595 log10(1 + f/700),
// mapped to DFT bins as floor((dft_length + 1) * f / sample_rate); peaks are 1.
void MelWeightMatrix(KernelContext& ctx) {
  const int64_t mel_bins = scalar_int(ctx, ctx.input(0), "num_mel_bins");
  const int64_t dft_length = scalar_int(ctx, ctx.input(1), "dft_length");
  const int64_t sample_rate = scalar_int(ctx, ctx.input(2), "sample_rate");
  real::require_float(ctx, ctx.input(3), "lower_edge_hertz");
  real::require_float(ctx, ctx.input(4), "upper_edge_hertz");
  const double lower = scalar_real(ctx, ctx.input(3), "lower_edge_hertz");
  const double upper = scalar_real(ctx, ctx.input(4), "upper_edge_hertz");
  if (mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0)
    ctx.fail("num_mel_bins, dft_length and sample_rate must be positive");
  const DataType out_t = numeric_output_type(ctx);
  const int64_t spec_bins = dft_length / 2 + 1;
  Tensor& result = ctx.allocate_output(0, out_t, {spec_bins, mel_bins});
  // num_mel_bins + 2 edge points (core/mel_weights.h, shared with the CUDA kernel).
  const std::vector<int64_t> edges = mel::edges(mel_bins, dft_length, sample_rate, lower, upper);
  std::vector<double> out(size_t(spec_bins * mel_bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= spec_bins)
      ctx.fail("mel filter edge " + std::to_string(j) + " falls outside the " + std::to_string(spec_bins) +
               " spectrogram bins (check the hertz range and sample_rate)");
    out[size_t(j * mel_bins + i)] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t lo = edges[size_t(i)], center = edges[size_t(i + 1)], hi = edges[size_t(i + 2)];
    if (center == lo) set(center, i, 1.0);
    else
      for (int64_t j = lo; j <= center; ++j) set(j, i, double(j - lo) / double(center - lo));
    if (hi > center)
      for (int64_t j = center; j < hi; ++j) set(j, i, double(hi - j) / double(hi - center));
  }
  store_numeric(ctx, result, out);
}

}  // namespace onnxscope::ref
