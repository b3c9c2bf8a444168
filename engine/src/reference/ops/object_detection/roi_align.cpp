// Reference kernel: RoiAlign.
//
// Interpolation weights and sums are computed in double (float16/float
// inputs included) and rounded once on store.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/nms_math.h"
#include "core/roi_align_math.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void RoiAlign(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const Tensor& bidx = ctx.input(2);
  if (x.rank() != 4) ctx.fail("X must have shape [N, C, H, W], got " + shape_to_string(x.shape()));
  if (rois.rank() != 2 || rois.shape()[1] != 4) ctx.fail("rois must have shape [num_rois, 4], got " + shape_to_string(rois.shape()));
  if (bidx.rank() != 1 || bidx.shape()[0] != rois.shape()[0])
    ctx.fail("batch_indices must have shape [num_rois], got " + shape_to_string(bidx.shape()));
  if (rois.dtype() != x.dtype()) ctx.fail("rois must have the element type of X");
  const std::string mode = ctx.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") ctx.fail("mode must be avg or max, got '" + mode + "'");
  // Opset 10 behaves like 'output_half_pixel'; opset 16 added the attribute, defaulting to 'half_pixel'.
  const std::string ctm = ctx.opset_version() >= 16 ? ctx.attr_string("coordinate_transformation_mode", "half_pixel")
                                                    : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel") ctx.fail("unknown coordinate_transformation_mode '" + ctm + "'");
  const bool half_pixel = ctm == "half_pixel";
  const int64_t oh = ctx.attr_int("output_height", 1), ow = ctx.attr_int("output_width", 1);
  const int64_t sampling = ctx.attr_int("sampling_ratio", 0);
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  if (oh < 1 || ow < 1) ctx.fail("output_height and output_width must be >= 1");
  if (sampling < 0) ctx.fail("sampling_ratio must be >= 0");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3], R = rois.shape()[0];
  // A sample clamps to pixel H - 1 or W - 1, which an empty image does not have.
  if ((H == 0 || W == 0) && R > 0 && C > 0)
    ctx.fail("cannot sample from an empty image (X has shape " + shape_to_string(x.shape()) + ")");
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x), rv = real_values(rois);
    Tensor& y = ctx.allocate_output(0, x.dtype(), Shape{R, C, oh, ow});
    struct Sample { int64_t p[4]; double w[4]; };
    for (int64_t r = 0; r < R; ++r) {
      const int64_t b = bidx.element_as_int64(static_cast<uint64_t>(r));
      if (b < 0 || b >= N) ctx.fail("batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(N) + ")");
      for (int q = 0; q < 4; ++q)
        if (!std::isfinite(rv[r * 4 + q])) ctx.fail("rois must be finite");
      // The roi's bins and samples (core/roi_align_math.h, shared with the
      // CUDA kernel); the grid is bounded so a huge roi with adaptive
      // sampling cannot ask for billions of points.
      roi::Geometry g;
      if (!roi::plan(&rv[r * 4], scale, half_pixel, oh, ow, sampling, b,
                     static_cast<double>(ctx.max_tensor_bytes()) / sizeof(Sample), g))
        ctx.fail("the sampling grid of roi " + std::to_string(r) + " is too large");
      const int64_t gh = g.grid_h, gw = g.grid_w;
      const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
      // Bilinear sample points of every bin, shared by all channels.
      std::vector<Sample> samples;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw)
          for (int64_t iy = 0; iy < gh; ++iy)
            for (int64_t ix = 0; ix < gw; ++ix) {
              Sample s;
              roi::corners(roi::sample_y(g, ph, iy), roi::sample_x(g, pw, ix), H, W, s.p, s.w);
              samples.push_back(s);
            }
      for (int64_t c = 0; c < C; ++c) {
        const double* plane = xv.data() + (b * C + c) * H * W;
        size_t si = 0;
        for (int64_t ph = 0; ph < oh; ++ph)
          for (int64_t pw = 0; pw < ow; ++pw) {
            double v = 0;
            bool first = true;
            for (int64_t k = 0; k < gh * gw; ++k, ++si) {
              const Sample& s = samples[si];
              if (mode == "avg") {
                for (int q = 0; q < 4; ++q) v += s.w[q] * plane[s.p[q]];
              } else {
                // Max mode takes the largest weighted corner (as onnxruntime does).
                double m = s.w[0] * plane[s.p[0]];
                for (int q = 1; q < 4; ++q) m = std::max(m, s.w[q] * plane[s.p[q]]);
                v = first ? m : std::max(v, m);
                first = false;
              }
            }
            if (mode == "avg") v /= count;
            put<S>(y, static_cast<uint64_t>(((r * C + c) * oh + ph) * ow + pw), static_cast<compute_t<S>>(v));
          }
      }
    }
  });
}

}  // namespace onnxscope::ref
