// Reference kernel: MaxRoiPool.
//
// Opsets 1 and 22 (22 adds bfloat16).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// X [N, C, H, W], rois [R, 5] rows of (batch index, x1, y1, x2, y2) in input
// coordinates. Each RoI is scaled by spatial_scale and rounded to whole pixels
// (half away from zero), its corners both included (a RoI is at least 1x1);
// it is cut into pooled_shape bins (bin i spans [floor(i * size / pooled),
// ceil((i + 1) * size / pooled)) clipped to the image), and each bin takes the
// maximum of X over it, or 0 when it is empty. This is the Fast R-CNN RoI
// pooling layer the operator comes from (Caffe, onnxruntime).
void MaxRoiPool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  if (x.rank() != 4) ctx.fail("X must be 4-D [N, C, H, W], got " + shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.shape()[1] != 5) ctx.fail("rois must be [num_rois, 5], got " + shape_to_string(rois.shape()));
  if (rois.dtype() != x.dtype()) ctx.fail("rois must have the type of X");
  const std::vector<int64_t> pooled = ctx.attr_ints("pooled_shape");
  if (!ctx.has_attr("pooled_shape")) ctx.fail("missing required attribute 'pooled_shape'");
  if (pooled.size() != 2 || pooled[0] <= 0 || pooled[1] <= 0) ctx.fail("pooled_shape must be two positive sizes (height, width)");
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const int64_t n = x.shape()[0], c = x.shape()[1], h = x.shape()[2], w = x.shape()[3];
  const int64_t num_rois = rois.shape()[0], ph = pooled[0], pw = pooled[1];

  Tensor& y = ctx.allocate_output(0, x.dtype(), {num_rois, c, ph, pw});
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (int64_t r = 0; r < num_rois; ++r) {
      const double batch_d = static_cast<double>(get<S>(rois, r * 5));
      if (!(batch_d >= 0 && batch_d < static_cast<double>(n)))
        ctx.fail("RoI " + std::to_string(r) + " has batch index " + std::to_string(batch_d) + " outside [0, " + std::to_string(n) + ")");
      const auto batch = static_cast<int64_t>(batch_d);
      double corner[4];
      for (int k = 0; k < 4; ++k) {
        corner[k] = std::round(static_cast<double>(get<S>(rois, r * 5 + 1 + k)) * scale);
        if (!std::isfinite(corner[k]) || std::abs(corner[k]) > 1e15) ctx.fail("RoI " + std::to_string(r) + " has a non-finite or huge coordinate");
      }
      const auto x1 = static_cast<int64_t>(corner[0]), y1 = static_cast<int64_t>(corner[1]);
      const auto x2 = static_cast<int64_t>(corner[2]), y2 = static_cast<int64_t>(corner[3]);
      const int64_t roi_h = std::max<int64_t>(y2 - y1 + 1, 1), roi_w = std::max<int64_t>(x2 - x1 + 1, 1);
      const double bin_h = static_cast<double>(roi_h) / static_cast<double>(ph);
      const double bin_w = static_cast<double>(roi_w) / static_cast<double>(pw);
      for (int64_t ch = 0; ch < c; ++ch) {
        const uint64_t plane = static_cast<uint64_t>((batch * c + ch) * h * w);
        for (int64_t i = 0; i < ph; ++i) {
          const int64_t hs = std::clamp(static_cast<int64_t>(std::floor(static_cast<double>(i) * bin_h)) + y1, int64_t{0}, h);
          const int64_t he = std::clamp(static_cast<int64_t>(std::ceil(static_cast<double>(i + 1) * bin_h)) + y1, int64_t{0}, h);
          for (int64_t j = 0; j < pw; ++j) {
            const int64_t ws = std::clamp(static_cast<int64_t>(std::floor(static_cast<double>(j) * bin_w)) + x1, int64_t{0}, w);
            const int64_t we = std::clamp(static_cast<int64_t>(std::ceil(static_cast<double>(j + 1) * bin_w)) + x1, int64_t{0}, w);
            compute_t<S> best = 0;
            if (he > hs && we > ws) {
              best = -std::numeric_limits<compute_t<S>>::infinity();
              for (int64_t yy = hs; yy < he; ++yy)
                for (int64_t xx = ws; xx < we; ++xx) {
                  const compute_t<S> v = get<S>(x, plane + static_cast<uint64_t>(yy * w + xx));
                  if (v > best || std::isnan(v)) best = v;
                  if (std::isnan(best)) break;
                }
            }
            put<S>(y, static_cast<uint64_t>(((r * c + ch) * ph + i) * pw + j), best);
          }
        }
      }
    }
  });
}

}  // namespace onnxscope::ref
