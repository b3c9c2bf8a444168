// GridSample and AffineGrid on float32, one thread per output element,
// computed as the reference computes them (in double, the denormalised
// coordinate rounded to float32 first; the mirroring and the cubic weights
// are core/grid_sample_math.h, shared with it): GridSample's taps per spatial dim
// (1 nearest, 2 linear, 4 cubic), combined with the last dim's taps varying
// fastest and summed in that order; AffineGrid's base points in [-1, 1].
#pragma once

#include <cmath>

#include "core/grid_sample_math.h"
#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

constexpr int kGridRank = 3;  // spatial dims the device samples (1 to 3)

struct GridSampleKernel {
  int rank;     // spatial dims, 1 to 3
  int mode;     // 0 nearest, 1 linear, 2 cubic
  int padding;  // 0 zeros, 1 border, 2 reflection
  bool align;
  int64_t channels, in_size, out_size;  // C, and the input's and output's spatial element counts
  int64_t dims[kGridRank], stride[kGridRank];
  const float* x;     // [N, C, dims...]
  const float* grid;  // [N, out spatial..., rank], coordinates innermost dim first
  float* y;           // [N, C, out spatial...]

  // The input index a tap reads along dim d, or -1 for a zero.
  OS_HD int64_t pixel(int64_t i, int d, double lo, double hi) const {
    const int64_t last = dims[d] - 1;
    if (padding == 0) return i >= 0 && i <= last ? i : -1;
    if (padding == 2) i = static_cast<int64_t>(grid::reflect(static_cast<double>(i), lo, hi));
    return i < 0 ? 0 : i > last ? last : i;
  }

  OS_HD void operator()(int64_t item) const {
    const int64_t o = item % out_size, n = item / (out_size * channels);
    int64_t index[kGridRank][4];
    double weight[kGridRank][4];
    const int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
    for (int d = 0; d < rank; ++d) {
      const double g = grid[(n * out_size + o) * rank + (rank - 1 - d)];
      if (g != g) {  // a NaN coordinate: a NaN output
        y[item] = NAN;
        return;
      }
      const double L = static_cast<double>(dims[d]);
      double v = static_cast<float>(align ? (g + 1) / 2.0 * (L - 1) : ((g + 1) * L - 1) / 2.0);
      const double lo = align ? 0.0 : -0.5, hi = align ? L - 1 : L - 0.5;
      if (mode == 0) v = rint(v);  // half to even, as nearbyint
      if (v < lo || v > hi) {
        if (padding == 1) v = v < 0.0 ? 0.0 : v > L - 1 ? L - 1 : v;
        else if (padding == 2) v = static_cast<float>(grid::reflect(v, lo, hi));
      }
      v = v < -L - 8 ? -L - 8 : v > 2 * L + 8 ? 2 * L + 8 : v;  // far outside every tap reads zero anyway
      const double f = floor(v);
      const auto i0 = static_cast<int64_t>(f);
      if (mode == 0) {
        index[d][0] = pixel(static_cast<int64_t>(v), d, lo, hi);
        weight[d][0] = 1.0;
      } else if (mode == 1) {
        index[d][0] = pixel(i0, d, lo, hi);
        index[d][1] = pixel(i0 + 1, d, lo, hi);
        weight[d][0] = 1 - (v - f);
        weight[d][1] = v - f;
      } else {
        grid::cubic_weights(v - f, weight[d]);
        for (int j = 0; j < 4; ++j) index[d][j] = pixel(i0 - 1 + j, d, lo, hi);
      }
    }
    const float* plane = x + (item / out_size) * in_size;  // (n, c)
    int combo = 1;
    for (int d = 0; d < rank; ++d) combo *= taps;
    double acc = 0;
    for (int t = 0; t < combo; ++t) {  // the last dim's tap fastest
      int64_t off = 0;
      double w = 1;
      bool zero = false;
      for (int d = 0, rest = t, span = combo; d < rank; ++d) {
        span /= taps;
        const int j = rest / span;
        rest %= span;
        const int64_t i = index[d][j];
        zero = zero || i < 0;
        off += i * stride[d];
        w *= weight[d][j];
      }
      if (!zero) acc += w * static_cast<double>(plane[off]);
    }
    y[item] = static_cast<float>(acc);
  }
};

// AffineGrid: grid[n, point, row] = theta[n][row] . (base point, 1), the
// base point's coordinates innermost dim first, each in [-1, 1].
struct AffineGridKernel {
  int rank;  // 2 or 3
  bool align;
  int64_t dims[kGridRank];
  int64_t points;  // the product of dims
  const float* theta;  // [N, rank, rank + 1]
  float* y;            // [N, dims..., rank]
  OS_HD void operator()(int64_t i) const {
    const int64_t row = i % rank, point = (i / rank) % points, n = i / (rank * points);
    double p[kGridRank + 1];
    int64_t rest = point;
    for (int d = rank - 1, k = 0; d >= 0; --d, ++k) {  // the last dim (x) first
      const int64_t at = rest % dims[d];
      rest /= dims[d];
      const double L = static_cast<double>(dims[d]);
      p[k] = align ? (dims[d] == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(at) / (L - 1))
                   : (2.0 * static_cast<double>(at) + 1.0) / L - 1.0;
    }
    p[rank] = 1.0;
    const float* t = theta + (n * rank + row) * (rank + 1);
    double v = 0;
    for (int j = 0; j <= rank; ++j) v += static_cast<double>(t[j]) * p[j];
    y[i] = static_cast<float>(v);
  }
};

}  // namespace onnxscope::cuda
