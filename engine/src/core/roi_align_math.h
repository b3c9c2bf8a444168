// RoiAlign's geometry, one source for the reference
// (reference/ops/object_detection/roi_align.cpp) and the CUDA kernel (cuda/kernels/roi_align.h),
// which nvcc compiles for the GPU too: where one roi's bins and samples lie,
// and which four pixels a sample reads with which weights. Everything is
// double, as the reference computes.
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OS_ROI __host__ __device__ inline
#else
#define OS_ROI inline
#endif

namespace onnxscope::roi {

// One roi planned from its four numbers.
struct Geometry {
  double x1, y1;        // the roi's top-left corner in X's coordinates
  double bin_h, bin_w;  // a bin's height and width
  int64_t grid_h, grid_w;  // samples per bin along each axis (0: none)
  int64_t batch;
};

// The plan of roi (x1, y1, x2, y2) = v into g. half_pixel shifts by half a
// pixel (opset 16's default); output_half_pixel instead stretches a roi to at
// least one pixel. sampling 0 is adaptive: ceil(roi size / bins) per axis.
// False, with g's grid unset, when the roi would take more than max_samples
// samples over all its bins (a huge roi with adaptive sampling).
OS_ROI bool plan(const double v[4], double scale, bool half_pixel, int64_t out_h, int64_t out_w, int64_t sampling,
                 int64_t batch, double max_samples, Geometry& g) {
  const double off = half_pixel ? 0.5 : 0.0;
  const double x1 = v[0] * scale - off, y1 = v[1] * scale - off, x2 = v[2] * scale - off, y2 = v[3] * scale - off;
  double rw = x2 - x1, rh = y2 - y1;
  if (!half_pixel) {
    rw = rw < 1.0 ? 1.0 : rw;
    rh = rh < 1.0 ? 1.0 : rh;
  }
  const double oh = static_cast<double>(out_h), ow = static_cast<double>(out_w);
  double gh = static_cast<double>(sampling), gw = gh;
  if (sampling <= 0) {
    gh = ::ceil(rh / oh), gw = ::ceil(rw / ow);
    gh = gh > 0.0 ? gh : 0.0;  // also turns a NaN into no samples
    gw = gw > 0.0 ? gw : 0.0;
  }
  g = Geometry{x1, y1, rh / oh, rw / ow, 0, 0, batch};
  if (!(gh * gw * oh * ow <= max_samples)) return false;
  g.grid_h = static_cast<int64_t>(gh), g.grid_w = static_cast<int64_t>(gw);
  return true;
}

// Sample (iy, ix) of bin (ph, pw): its coordinates in X.
OS_ROI double sample_y(const Geometry& g, int64_t ph, int64_t iy) {
  return g.y1 + static_cast<double>(ph) * g.bin_h + (static_cast<double>(iy) + 0.5) * g.bin_h / static_cast<double>(g.grid_h);
}
OS_ROI double sample_x(const Geometry& g, int64_t pw, int64_t ix) {
  return g.x1 + static_cast<double>(pw) * g.bin_w + (static_cast<double>(ix) + 0.5) * g.bin_w / static_cast<double>(g.grid_w);
}

// Along one axis: the two pixels a coordinate falls between and its fraction
// past the first, clamped at the far edge.
OS_ROI void axis(double v, int64_t size, int64_t& lo, int64_t& hi, double& frac) {
  double c = v < 0.0 ? 0.0 : v;
  lo = static_cast<int64_t>(c);
  if (lo >= size - 1) {
    hi = lo = size - 1;
    c = static_cast<double>(lo);
  } else {
    hi = lo + 1;
  }
  frac = c - static_cast<double>(lo);
}

// The four corners a sample at (yy, xx) reads in an H x W plane, and their
// bilinear weights. A sample more than a pixel off the image reads pixel 0
// with zero weights: a NaN or infinity there still reaches the result.
OS_ROI void corners(double yy, double xx, int64_t height, int64_t width, int64_t p[4], double w[4]) {
  for (int q = 0; q < 4; ++q) p[q] = 0, w[q] = 0;
  if (yy < -1.0 || yy > static_cast<double>(height) || xx < -1.0 || xx > static_cast<double>(width)) return;
  int64_t ylo, yhi, xlo, xhi;
  double ly, lx;
  axis(yy, height, ylo, yhi, ly);
  axis(xx, width, xlo, xhi, lx);
  const double hy = 1 - ly, hx = 1 - lx;
  p[0] = ylo * width + xlo, p[1] = ylo * width + xhi, p[2] = yhi * width + xlo, p[3] = yhi * width + xhi;
  w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
}

}  // namespace onnxscope::roi
