// ONNX Slice on one axis, the arithmetic the reference kernel, shape
// inference and the CUDA engine share: negative starts and ends count from
// the end, then starts are clamped into [0, dim] stepping up or
// [0, dim - 1] stepping down, ends into [0, dim] or [-1, dim - 1]; the
// count is written so that no step (INT64_MIN included) overflows.
#pragma once

#include <algorithm>
#include <cstdint>

namespace onnxscope {

struct SliceRange {
  int64_t start = 0;  // the first index taken (clamped; meaningless when count is 0)
  int64_t count = 0;  // how many: start, start + step, ...
};

// dim >= 0, step != 0.
inline SliceRange slice_range(int64_t dim, int64_t start, int64_t end, int64_t step) {
  // A step beyond any dimension picks one element either way; this keeps -step representable.
  step = std::max<int64_t>(step, -INT64_MAX);
  int64_t s = start < 0 ? start + dim : start;  // cannot overflow: dim >= 0
  int64_t e = end < 0 ? end + dim : end;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    return {s, e > s ? (e - s - 1) / step + 1 : 0};
  }
  if (dim == 0) return {0, 0};
  s = std::clamp<int64_t>(s, 0, dim - 1);
  e = std::clamp<int64_t>(e, -1, dim - 1);
  return {s, s > e ? (s - e - 1) / -step + 1 : 0};
}

}  // namespace onnxscope
