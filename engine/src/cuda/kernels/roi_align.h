// RoiAlign: one thread per output element (roi, channel, bin row, bin
// column), its bin's bilinear samples taken and combined in double in the
// reference's order (ops/object_detection/roi_align.cpp): avg sums every corner's
// weighted value and divides by the sample count, max keeps the largest
// weighted corner. Where samples lie and which pixels they read is
// core/roi_align_math.h, the reference's own.
#pragma once

#include "core/roi_align_math.h"
#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

using RoiGeometry = roi::Geometry;

struct RoiAlignKernel {
  bool max_mode;
  ElemType type;  // X's and Y's: float32, float16 or bfloat16
  int64_t channels, height, width, out_h, out_w;
  const RoiGeometry* rois;
  const void* x;  // [N, C, H, W]
  void* y;        // [R, C, out_h, out_w]

  OS_HD void operator()(int64_t i) const {
    const int64_t pw = i % out_w, ph = (i / out_w) % out_h;
    const int64_t c = (i / (out_w * out_h)) % channels, r = i / (out_w * out_h * channels);
    const RoiGeometry g = rois[r];
    const int64_t plane = (g.batch * channels + c) * height * width;
    double v = 0;
    bool first = true;
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const double yy = roi::sample_y(g, ph, iy);
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        int64_t p[4];
        double w[4];
        roi::corners(yy, roi::sample_x(g, pw, ix), height, width, p, w);
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
