// GridSample's coordinate arithmetic, one source for the reference
// (reference/ops/tensor/grid_sample.cpp) and the CUDA kernel (cuda/kernels/
// grid_sample.h), which nvcc compiles for the GPU too: mirroring a pixel
// coordinate into the image, and the cubic convolution weights (A = -0.75).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OS_GRID __host__ __device__ inline
#else
#define OS_GRID inline
#endif

namespace onnxscope::grid {

// x mirrored into [lo, hi] at the borders, as many times as it takes.
OS_GRID double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (!(x - x == 0)) return lo;  // an infinity mirrors without end (NaN never gets here)
  // Past 2^62 periods the count does not fit an int64: fmod over the 2-range period instead.
  if (fabs(x - lo) / range > 4.0e18 || fabs(x - hi) / range > 4.0e18) {
    const double m = fmod(x < lo ? lo - x : x - hi, 2 * range);
    return x < lo ? (m <= range ? lo + m : hi - (m - range)) : (m <= range ? hi - m : lo + (m - range));
  }
  if (x < lo) {
    const double dx = lo - x;
    const auto n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const auto n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// The weights of the 4 taps around a point at fraction t past the second.
OS_GRID void cubic_weights(double t, double w[4]) {
  const double A = -0.75;
  t = fabs(t);
  w[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
  w[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  w[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
  w[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

}  // namespace onnxscope::grid
