// Block copies between strided views of fixed-width elements, shared by the
// CPU engine's data-movement kernels (Slice, Pad): dims are merged where both
// sides are contiguous across them, the innermost run is one memcpy when
// both sides step by one element, and outer rows are split across the
// thread pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/thread_pool.h"
#include "onnxscope/tensor.h"

namespace onnxscope::cpu {

// dst[idx] = src[idx] for every index of `shape`: dst at dst_base + sum idx_d * dst_strides_d,
// src likewise (strides in elements).
inline void strided_copy(std::byte* dst_base, const std::vector<int64_t>& dst_strides, const std::byte* src_base,
                         const std::vector<int64_t>& src_strides, const Shape& shape, size_t elem) {
  for (int64_t d : shape)
    if (d == 0) return;
  // Merge dims (innermost first), dropping dims of size 1.
  std::vector<int64_t> dims, ds, ss;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    if (!dims.empty() && ds.back() * dims.back() == dst_strides[d] && ss.back() * dims.back() == src_strides[d]) {
      dims.back() *= shape[d];
      continue;
    }
    dims.push_back(shape[d]);
    ds.push_back(dst_strides[d]);
    ss.push_back(src_strides[d]);
  }
  if (dims.empty()) {  // one element
    std::memcpy(dst_base, src_base, elem);
    return;
  }
  const int64_t n = dims[0];
  const bool run = ds[0] == 1 && ss[0] == 1;
  int64_t rows = 1;
  for (size_t d = 1; d < dims.size(); ++d) rows *= dims[d];
  const int64_t w = static_cast<int64_t>(elem);
  parallel_for(rows, std::max<int64_t>(1, 65536 / (n * w)), [&](int64_t r0, int64_t r1) {
    // The row's index over the outer dims, worked out once per chunk and then
    // stepped like an odometer (a division per row cost more than copying
    // a short one: Slice of half the last dim of [1,12,128,64]).
    std::vector<int64_t> idx(dims.size(), 0);
    int64_t so = 0, doff = 0;
    for (size_t d = 1, rest = static_cast<size_t>(r0); d < dims.size(); ++d) {
      idx[d] = static_cast<int64_t>(rest % static_cast<size_t>(dims[d]));
      rest /= static_cast<size_t>(dims[d]);
      so += idx[d] * ss[d];
      doff += idx[d] * ds[d];
    }
    for (int64_t r = r0; r < r1; ++r) {
      std::byte* o = dst_base + doff * w;
      const std::byte* s = src_base + so * w;
      for (size_t d = 1; d < dims.size(); ++d) {  // the next row's offsets
        so += ss[d];
        doff += ds[d];
        if (++idx[d] < dims[d]) break;
        so -= dims[d] * ss[d];
        doff -= dims[d] * ds[d];
        idx[d] = 0;
      }
      if (run) {
        std::memcpy(o, s, static_cast<size_t>(n * w));
        continue;
      }
      const int64_t sd = ss[0] * w, dd = ds[0] * w;
      switch (elem) {
        case 4: for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * dd, s + i * sd, 4); break;
        case 8: for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * dd, s + i * sd, 8); break;
        case 2: for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * dd, s + i * sd, 2); break;
        case 1: for (int64_t i = 0; i < n; ++i) o[i * dd] = s[i * sd]; break;
        default: for (int64_t i = 0; i < n; ++i) std::memcpy(o + i * dd, s + i * sd, elem);
      }
    }
  });
}

// Row-major strides of a contiguous tensor of `shape`, in elements.
inline std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Fixed-width, unpacked element types (not strings, not 4/2-bit).
inline bool copyable_dtype(const Tensor& t) { return !t.is_string() && !is_packed_dtype(t.dtype()); }

}  // namespace onnxscope::cpu
