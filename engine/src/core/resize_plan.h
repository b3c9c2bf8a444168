// Resize's (and Upsample's) geometry, which the reference kernel and the
// CUDA engine share: the output size and scale of each axis from the
// attributes and the roi/scales/sizes inputs, and for each axis the input
// coordinates every output coordinate reads with their weights (nearest:
// the one it copies), computed in double as onnx's reference does.
// Problems are thrown as std::invalid_argument with the reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

namespace onnxscope::resize {

struct Spec {
  std::string mode = "nearest";                // nearest, linear, cubic
  std::string coord = "half_pixel";            // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // or round_prefer_ceil, floor, ceil, simple (opset <= 10)
  double cubic_a = -0.75;
  bool exclude_outside = false, antialias = false;
  double extrapolation = 0;
  std::vector<double> scales;  // per dim
  Shape out;                   // per dim
  std::vector<double> roi;     // [starts..., ends...] per dim, or empty
};

// Resize's attributes (nullopt: absent) and its inputs' values (empty: not
// given), as a node holds them; resize_spec applies the opset's defaults.
struct Request {
  int64_t opset = 0;
  std::optional<std::string> mode, coord, nearest, policy;
  std::optional<double> cubic_a, extrapolation;
  std::optional<int64_t> exclude_outside, antialias;
  std::optional<std::vector<int64_t>> axes;
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
};

// The attributes of a Resize node (its inputs' values are the caller's to fill).
Request request_of(const Node& n, int64_t opset);
Spec resize_spec(const Request& r, const Shape& x);
// Upsample (deprecated): asymmetric coordinates, nearest taking floor when
// enlarging and ceil when shrinking; mode nearest, linear or bilinear.
Spec upsample_spec(const std::string& mode, const std::vector<double>& scales, const Shape& x);

// For one axis: for every output coordinate, the input indices it reads
// (clamped to the input) and their weights, and whether it lies outside the
// crop box (tf_crop_and_resize), where the extrapolation value is written.
struct AxisTaps {
  int64_t n = 0;  // taps per output coordinate
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> outside;
};

AxisTaps plan_axis(const Spec& sp, size_t axis, int64_t in, int64_t out);
// Nearest mode: the input coordinate each output coordinate copies, -1
// outside the crop box.
std::vector<int64_t> nearest_picks(const Spec& sp, size_t axis, int64_t in, int64_t out);
// Linear and cubic resize one axis after another and skip an axis left as
// it is (scale 1, the same size, the whole roi).
bool axis_unchanged(const Spec& sp, size_t axis, int64_t in);

}  // namespace onnxscope::resize
