// MelWeightMatrix, one source for the reference
// (reference/ops/signal/mel_weight_matrix.cpp) and the CUDA kernel
// (cuda/kernels/signal.h), which nvcc compiles for the GPU too: the filter
// edges (the spectrogram bin of each of num_mel_bins + 2 points evenly
// spaced on the mel scale) and each matrix element's weight from them, in
// double.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

#ifdef __CUDACC__
#define OS_MEL __host__ __device__ inline
#else
#define OS_MEL inline
#endif

namespace onnxscope::mel {

// The spectrogram bin of each edge point (num_mel_bins + 2 of them); the
// step divides by their count, as onnx and onnxruntime do.
inline std::vector<int64_t> edges(int64_t mel_bins, int64_t dft_length, int64_t sample_rate, double lower_hz, double upper_hz) {
  const double low_mel = 2595.0 * std::log10(1.0 + lower_hz / 700.0);
  const double high_mel = 2595.0 * std::log10(1.0 + upper_hz / 700.0);
  const double mel_step = (high_mel - low_mel) / double(mel_bins + 2);
  std::vector<int64_t> e(size_t(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (double(i) * mel_step + low_mel) / 2595.0) - 1.0);
    const double bin = std::floor(double(dft_length + 1) * hz / double(sample_rate));
    // NaN or a bin past int64 (hertz from data): -1, which bin_outside reports.
    e[size_t(i)] = bin >= -9.0e18 && bin <= 9.0e18 ? int64_t(bin) : -1;
  }
  return e;
}

// The first bin a filter writes outside [0, spec_bins), or nullopt when all
// fit: its rising side lo..center (the center alone when it is the low edge;
// nothing when it lies below), and its falling side center..hi-1. (The bin
// can be -1 itself, so it is no "none" marker.)
inline std::optional<int64_t> bin_outside(const std::vector<int64_t>& e, int64_t spec_bins) {
  auto outside = [&](int64_t from, int64_t to) -> std::optional<int64_t> {  // [from, to], empty when to < from
    if (to < from) return std::nullopt;
    if (from < 0) return from;
    if (to >= spec_bins) return from >= spec_bins ? from : spec_bins;
    return std::nullopt;
  };
  for (size_t i = 0; i + 2 < e.size(); ++i) {
    const int64_t lo = e[i], center = e[i + 1], hi = e[i + 2];
    if (auto rise = center == lo ? outside(center, center) : outside(lo, center)) return rise;
    if (hi > center)
      if (auto fall = outside(center, hi - 1)) return fall;
  }
  return std::nullopt;
}

// Element (bin j, filter i) given filter i's three edges: the rising ramp
// (j - lo) / (center - lo) up to the center, the falling one
// (hi - j) / (hi - center) from it (both 1 at the center), 1 at a center that
// is also the low edge, 0 elsewhere.
OS_MEL double weight(int64_t j, int64_t lo, int64_t center, int64_t hi) {
  if (hi > center && j >= center && j < hi) return double(hi - j) / double(hi - center);
  if (center == lo) return j == center ? 1.0 : 0.0;
  if (j >= lo && j <= center) return double(j - lo) / double(center - lo);
  return 0.0;
}

}  // namespace onnxscope::mel
