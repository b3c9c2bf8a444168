// Data movement on elements of any width (1, 2, 4 or 8 bytes, moved as
// unsigned integers of that size): one strided copy that is Transpose,
// Slice, Expand, Concat and Split, and Gather with indices checked on the
// host.
#pragma once

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// y[out_base + sum c_d * out_stride_d] = x[in_base + sum c_d * in_stride_d]
// for every coordinate c of `dims`: a strided view copied into a strided
// place. Transpose permutes the input strides, Slice scales them by its
// steps, Expand zeroes them where a dim repeats, Concat writes each input at
// its offset along the axis.
template <class T>
struct StridedCopyKernel {
  int rank;
  int64_t dims[kKernelRank];
  int64_t in_stride[kKernelRank], out_stride[kKernelRank];
  int64_t in_base, out_base;
  const T* x;
  T* y;
  OS_HD void operator()(int64_t i) const {
    int64_t in = in_base, out = out_base;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = i % dims[d];
      i /= dims[d];
      in += c * in_stride[d];
      out += c * out_stride[d];
    }
    y[out] = x[in];
  }
};

// Bytes from the host carried in the kernel's own arguments: how small
// copies to the device go without waiting for the copy, and how a capture
// (a CUDA graph) keeps the bytes of a copy made while it records.
struct StoreBytesKernel {
  static constexpr int kBytes = 1024;
  unsigned char bytes[kBytes];
  unsigned char* to;
  OS_HD void operator()(int64_t i) const { to[i] = bytes[i]; }
};

// Gather along an axis: x viewed as [outer, axis_dim, inner], indices as
// [count] (already checked and made non-negative on the host), y as
// [outer, count, inner].
template <class T>
struct GatherKernel {
  int64_t axis_dim, count, inner;
  const T* x;
  const int64_t* indices;
  T* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t r = i % inner;
    const int64_t j = (i / inner) % count;
    const int64_t o = i / (inner * count);
    y[i] = x[(o * axis_dim + indices[j]) * inner + r];
  }
};

}  // namespace onnxscope::cuda
