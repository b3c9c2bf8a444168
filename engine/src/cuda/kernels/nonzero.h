// NonZero in three steps: the non-zero elements of each chunk counted (a
// warp per chunk), the counts turned into each chunk's first output place
// and the total (one lane), then, once the host has read the total and
// made the output, each chunk's coordinates written in row-major order (one
// lane per chunk: the order within a chunk is its elements' order).
#pragma once

#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

// numpy's truth of an element: a float not equal to 0 (NaN included, -0
// not), an integer or bool not 0.
OS_HD bool nonzero_at(ElemType t, const void* x, int64_t i) {
  const CastValue v = cast_load(t, x, i);
  return v.kind == 0 ? v.f != 0.0 : v.kind == 1 ? v.i != 0 : v.u != 0;
}

struct NonZeroCountKernel {
  static constexpr bool kRows = true;
  ElemType type;
  int64_t n, chunk;
  const void* x;
  int64_t* counts;  // [chunks + 1]
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const int64_t end = (r + 1) * chunk < n ? (r + 1) * chunk : n;
    int64_t c = 0;
    for (int64_t j = r * chunk + lanes.lane(); j < end; j += lanes.count()) c += nonzero_at(type, x, j);
    const int64_t all = exact_lane_sum(c, lanes);
    if (lanes.lane() == 0) counts[r] = all;
  }
};

// One row: counts[r] becomes the first output place of chunk r, and
// counts[chunks] the total.
struct NonZeroPlacesKernel {
  static constexpr bool kRows = true;
  int64_t chunks;
  int64_t* counts;
  template <class L>
  OS_HD void operator()(int64_t, const L& lanes) const {
    if (lanes.lane() != 0) return;
    int64_t at = 0;
    for (int64_t r = 0; r < chunks; ++r) {
      const int64_t c = counts[r];
      counts[r] = at;
      at += c;
    }
    counts[chunks] = at;
  }
};

// y [rank, total]: y[d, place] is coordinate d of the place-th non-zero element.
struct NonZeroWriteKernel {
  static constexpr bool kRows = true;
  ElemType type;
  int64_t n, chunk, total;
  Dims dims;  // x's shape
  const void* x;
  const int64_t* places;
  int64_t* y;
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    if (lanes.lane() != 0) return;
    const int64_t end = (r + 1) * chunk < n ? (r + 1) * chunk : n;
    int64_t at = places[r];
    for (int64_t j = r * chunk; j < end; ++j) {
      if (!nonzero_at(type, x, j)) continue;
      int64_t rest = j;
      for (int d = dims.rank - 1; d >= 0; --d) {
        y[d * total + at] = rest % dims.d[d];
        rest /= dims.d[d];
      }
      ++at;
    }
  }
};

}  // namespace onnxscope::cuda
