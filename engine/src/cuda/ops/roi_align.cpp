// RoiAlign (opsets 10, 16, 22): X float32, float16 or bfloat16, both modes,
// both coordinate transformation modes. The rois and batch indices are read
// on the host, where each roi is checked as the reference checks it (the
// batch index in range, finite corners, a sampling grid of bounded size) and
// planned into a RoiGeometry (core/roi_align_math.h, the reference's plan); the samples are the kernel's
// (kernels/roi_align.h). Reading them on the host means a run holding
// RoiAlign after device nodes is not captured.
#include <cmath>
#include <cstring>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

bool roi_align_reads_on_host(const Node&, size_t i) { return i == 1 || i == 2; }

// Samples one roi may take over all its bins: a bound on one thread's loop
// (the reference bounds its sample list by the run's tensor limit).
constexpr double kMaxRoiSamples = 1 << 27;

std::optional<std::string> refuse_roi_align(const Graph& g, const Node& n) {
  if (n.inputs.size() != 3) return std::string("RoiAlign takes X, rois and batch_indices");
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, 0, 1)) return r;
  if (auto r = require_types(g, n, {DataType::Int64}, 2, 1)) return r;
  return std::nullopt;
}

void run_roi_align(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const Tensor* rois = c.host(1);
  const Tensor* bidx = c.host(2);
  if (!rois || !bidx) c.fail("rois and batch_indices are required");
  if (x.shape.size() != 4) c.fail("X must have shape [N, C, H, W], got " + shape_to_string(x.shape));
  if (rois->rank() != 2 || rois->shape()[1] != 4) c.fail("rois must have shape [num_rois, 4], got " + shape_to_string(rois->shape()));
  if (bidx->rank() != 1 || bidx->shape()[0] != rois->shape()[0])
    c.fail("batch_indices must have shape [num_rois], got " + shape_to_string(bidx->shape()));
  if (rois->dtype() != x.dtype) c.fail("rois must have the element type of X");
  const std::string mode = c.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") c.fail("mode must be avg or max, got '" + mode + "'");
  // Opset 10 behaves like 'output_half_pixel'; opset 16 added the attribute, defaulting to 'half_pixel'.
  const std::string ctm = c.opset() >= 16 ? c.attr_string("coordinate_transformation_mode", "half_pixel") : "output_half_pixel";
  if (ctm != "half_pixel" && ctm != "output_half_pixel") c.fail("unknown coordinate_transformation_mode '" + ctm + "'");
  const bool half_pixel = ctm == "half_pixel";
  const int64_t oh = c.attr_int("output_height", 1), ow = c.attr_int("output_width", 1);
  const int64_t sampling = c.attr_int("sampling_ratio", 0);
  const double scale = c.attr_float("spatial_scale", 1.0f);
  if (oh < 1 || ow < 1) c.fail("output_height and output_width must be >= 1");
  if (sampling < 0) c.fail("sampling_ratio must be >= 0");
  const int64_t n = x.shape[0], channels = x.shape[1], h = x.shape[2], w = x.shape[3], count = rois->shape()[0];
  const Shape out{count, channels, oh, ow};
  c.output(0) = c.allocate(x.dtype, out);
  if (elements_of(out) == 0) return;
  if (h == 0 || w == 0) c.fail("cannot sample from an empty image (X has shape " + shape_to_string(x.shape) + ")");
  // Each roi as the reference plans it, in its order of checks.
  std::vector<RoiGeometry> geometry(static_cast<size_t>(count));
  for (int64_t r = 0; r < count; ++r) {
    const int64_t b = bidx->element_as_int64(static_cast<uint64_t>(r));
    if (b < 0 || b >= n) c.fail("batch index " + std::to_string(b) + " is out of range [0, " + std::to_string(n) + ")");
    double v[4];
    for (int q = 0; q < 4; ++q) {
      v[q] = rois->element_as_double(static_cast<uint64_t>(r * 4 + q));
      if (!std::isfinite(v[q])) c.fail("rois must be finite");
    }
    if (!roi::plan(v, scale, half_pixel, oh, ow, sampling, b, kMaxRoiSamples, geometry[static_cast<size_t>(r)]))
      c.fail("the sampling grid of roi " + std::to_string(r) + " is too large");
  }
  Tensor table = Tensor::zeros(DataType::Uint8, {static_cast<int64_t>(geometry.size() * sizeof(RoiGeometry))});
  std::memcpy(table.mutable_raw(), geometry.data(), geometry.size() * sizeof(RoiGeometry));
  const DeviceTensor t = c.upload(table);
  RoiAlignKernel k{};
  k.max_mode = mode == "max";
  k.type = static_cast<ElemType>(x.dtype);
  k.channels = channels, k.height = h, k.width = w, k.out_h = oh, k.out_w = ow;
  k.rois = static_cast<const RoiGeometry*>(t.data);
  k.x = x.data;
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(out)));
}

}  // namespace

void add_roi_align_ops(std::vector<OpDef>& t) {
  t.push_back({"RoiAlign", refuse_roi_align, run_roi_align, OpBackend::Kernel, roi_align_reads_on_host});
}

}  // namespace onnxscope::cuda
