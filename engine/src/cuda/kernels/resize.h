// Resize and Upsample (kernels/portable.h, elementwise form), over tables
// the host plans per axis (core/resize_plan.h): nearest copies one input
// element per output element; linear and cubic resize one axis per launch.
#pragma once

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// Nearest: output coordinate c_d of axis d reads input coordinate
// picks[pick_offset[d] + c_d], or, where one is -1 (outside
// tf_crop_and_resize's box), the output is `fill`.
template <class T>
struct ResizeNearestKernel {
  int rank;
  int64_t out[kKernelRank], in_stride[kKernelRank], pick_offset[kKernelRank];
  const int64_t* picks;
  T fill;
  const T* x;
  T* y;
  OS_HD void operator()(int64_t i) const {
    int64_t rest = i, src = 0;
    bool outside = false;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t p = picks[pick_offset[d] + rest % out[d]];
      rest /= out[d];
      if (p < 0) outside = true;
      else src += p * in_stride[d];
    }
    y[i] = outside ? fill : x[src];
  }
};

// One axis of a linear or cubic resize, x [outer, in, inner] to
// y [outer, out, inner]: output coordinate o sums taps input coordinates
// idx[o * taps + j] weighted by w[o * taps + j], or is `extrapolation`
// where outside[o] (tf_crop_and_resize's box).
struct ResizeAxisKernel {
  int64_t in, out, inner, taps;
  const int64_t* idx;
  const float* w;
  const uint8_t* outside;
  float extrapolation;
  const float* x;
  float* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t r = i % inner, o = (i / inner) % out, a = i / (inner * out);
    if (outside[o]) {
      y[i] = extrapolation;
      return;
    }
    const float* line = x + a * in * inner + r;
    float acc = 0.f;
    for (int64_t j = 0; j < taps; ++j) acc += w[o * taps + j] * line[idx[o * taps + j] * inner];
    y[i] = acc;
  }
};

}  // namespace onnxscope::cuda
