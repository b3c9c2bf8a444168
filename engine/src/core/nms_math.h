// NonMaxSuppression's order and overlap test, one source for the reference
// (reference/ops/object_detection/non_max_suppression.cpp) and the CUDA kernels (cuda/kernels/nms.h),
// which nvcc compiles for the GPU too. Everything is float, as onnxruntime
// compares boxes and scores.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define OS_NMS __host__ __device__ inline
#else
#define OS_NMS inline
#endif

namespace onnxscope::nms {

// Candidate order: higher scores first, NaN after every number (the spec
// leaves NaN open), equal scores and NaNs by box index.
OS_NMS bool before(float a, int64_t i, float b, int64_t j) {
  const bool an = a != a, bn = b != b;
  if (an != bn) return bn;
  if (!an && a != b) return a > b;
  return i < j;
}

// std::min and std::max as written (with a NaN, which argument comes back
// matters; fminf would drop the NaN).
OS_NMS float min_of(float a, float b) { return b < a ? b : a; }
OS_NMS float max_of(float a, float b) { return a < b ? b : a; }

// A box's four numbers as (ymin, xmin, ymax, xmax): corners sorted per axis,
// or from (x_center, y_center, width, height).
OS_NMS void corners(const float p[4], bool center, float out[4]) {
  if (!center) {
    out[0] = min_of(p[0], p[2]);
    out[2] = max_of(p[0], p[2]);
    out[1] = min_of(p[1], p[3]);
    out[3] = max_of(p[1], p[3]);
  } else {
    out[1] = p[0] - p[2] / 2;
    out[3] = p[0] + p[2] / 2;
    out[0] = p[1] - p[3] / 2;
    out[2] = p[1] + p[3] / 2;
  }
}

// Whether candidate a is suppressed by kept box c (both from corners): their
// IoU above the threshold; empty or degenerate boxes never overlap.
OS_NMS bool suppresses(const float a[4], const float c[4], float iou_threshold) {
  const float ix = min_of(a[3], c[3]) - max_of(a[1], c[1]);
  const float iy = min_of(a[2], c[2]) - max_of(a[0], c[0]);
  if (ix <= 0 || iy <= 0) return false;
  const float inter = ix * iy;
  const float area_a = (a[2] - a[0]) * (a[3] - a[1]), area_c = (c[2] - c[0]) * (c[3] - c[1]);
  const float uni = area_a + area_c - inter;
  if (area_a <= 0 || area_c <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

}  // namespace onnxscope::nms
