// RoiAlign: one thread per output element (roi, channel, bin row, bin
// column), its bin's bilinear samples taken and combined in double in the
// reference's order (ops/nn_resize.cpp RoiAlign): avg sums every corner's
// weighted value and divides by the sample count, max keeps the largest
// weighted corner. A sample off the image is four zero weights on pixel 0,
// so a NaN or infinity there turns the result NaN as in the reference.
#pragma once

#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

// One roi as the host planned it from the rois and batch indices.
struct RoiGeometry {
  double x1, y1;        // the roi's top-left corner in X's coordinates
  double bin_h, bin_w;  // a bin's height and width
  int64_t grid_h, grid_w;  // samples per bin along each axis (0: none)
  int64_t batch;
};

struct RoiAlignKernel {
  bool max_mode;
  ElemType type;  // X's and Y's: float32, float16 or bfloat16
  int64_t channels, height, width, out_h, out_w;
  const RoiGeometry* roi;
  const void* x;  // [N, C, H, W]
  void* y;        // [R, C, out_h, out_w]

  // Along one axis: the two pixels a coordinate falls between and its
  // fraction past the first, clamped at the far edge (the reference's rule).
  OS_HD static void axis(double v, int64_t size, int64_t& lo, int64_t& hi, double& frac) {
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

  OS_HD void operator()(int64_t i) const {
    const int64_t pw = i % out_w, ph = (i / out_w) % out_h;
    const int64_t c = (i / (out_w * out_h)) % channels, r = i / (out_w * out_h * channels);
    const RoiGeometry g = roi[r];
    const int64_t plane = (g.batch * channels + c) * height * width;
    const double gh = static_cast<double>(g.grid_h), gw = static_cast<double>(g.grid_w);
    double v = 0;
    bool first = true;
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const double yy = g.y1 + static_cast<double>(ph) * g.bin_h + (static_cast<double>(iy) + 0.5) * g.bin_h / gh;
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        const double xx = g.x1 + static_cast<double>(pw) * g.bin_w + (static_cast<double>(ix) + 0.5) * g.bin_w / gw;
        int64_t p[4] = {0, 0, 0, 0};
        double w[4] = {0, 0, 0, 0};
        if (!(yy < -1.0 || yy > static_cast<double>(height) || xx < -1.0 || xx > static_cast<double>(width))) {
          int64_t ylo, yhi, xlo, xhi;
          double ly, lx;
          axis(yy, height, ylo, yhi, ly);
          axis(xx, width, xlo, xhi, lx);
          const double hy = 1 - ly, hx = 1 - lx;
          p[0] = ylo * width + xlo, p[1] = ylo * width + xhi, p[2] = yhi * width + xlo, p[3] = yhi * width + xhi;
          w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
        }
        if (!max_mode) {
          for (int q = 0; q < 4; ++q) v += w[q] * static_cast<double>(load_real(type, x, plane + p[q]));
        } else {
          double m = w[0] * static_cast<double>(load_real(type, x, plane + p[0]));
          for (int q = 1; q < 4; ++q) {
            const double t = w[q] * static_cast<double>(load_real(type, x, plane + p[q]));
            m = m < t ? t : m;  // std::max's rule: the first unless the second is larger
          }
          v = first ? m : (v < m ? m : v);
          first = false;
        }
      }
    }
    if (!max_mode) v /= static_cast<double>(g.grid_h * g.grid_w > 1 ? g.grid_h * g.grid_w : 1);
    store_real(type, y, i, static_cast<float>(v));
  }
};

}  // namespace onnxscope::cuda
