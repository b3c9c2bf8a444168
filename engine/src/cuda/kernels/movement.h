// Data movement on elements of any width (1, 2, 4 or 8 bytes, moved as
// unsigned integers of that size): one strided copy that is Transpose,
// Slice, Expand, Concat, Split, DepthToSpace and SpaceToDepth; Trilu's
// masked copy; Gather with its indices read and checked on the device.
#pragma once

#include "cuda/kernels/integer_math.h"
#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

// 16 bytes moved as one unit (a strided copy's widest, cuda/shapes.h
// plan_copy): one 128-bit load and store on the GPU.
struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

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
    for (int d = rank - 1; d > 0; --d) {  // dim 0's coordinate is what is left
      const int64_t c = i % dims[d];
      i /= dims[d];
      in += c * in_stride[d];
      out += c * out_stride[d];
    }
    if (rank > 0) {
      in += i * in_stride[0];
      out += i * out_stride[0];
    }
    y[out] = x[in];
  }
};

// A batched GEMM's matrix addresses (Runtime::gemm_pointers): out[i] =
// base + (i / inner) * outer_stride + (i % inner) * inner_stride, in bytes.
// Made on the device, so a captured run keeps them with its other work.
struct PointerTableKernel {
  const unsigned char* base;
  int64_t inner, outer_stride, inner_stride;
  const void** out;
  OS_HD void operator()(int64_t i) const { out[i] = base + (i / inner) * outer_stride + (i % inner) * inner_stride; }
};

// Trilu: x viewed as matrices [batch, rows, cols]; element (r, c) kept
// where c - r >= k (upper) or c - r <= k (lower), else zero.
template <class T>
struct TriluKernel {
  bool upper;
  int64_t rows, cols, k;
  const T* x;
  T* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t c = i % cols, r = (i / cols) % rows;
    const bool keep = upper ? c - r >= k : c - r <= k;
    y[i] = keep ? x[i] : T(0);
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

// Gather along an axis: x viewed as [outer, axis_dim, inner], indices
// (int64, or int32 when indices32) as [count], y as [outer, count, inner].
// An index outside [-axis_dim, axis_dim) is reported through `fault` (the
// host finds it after the run) and gives zeros, never a read outside x.
template <class T>
struct GatherKernel {
  int64_t axis_dim, count, inner;
  const T* x;
  const void* indices;
  bool indices32;
  T* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    const int64_t r = i % inner;
    const int64_t j = (i / inner) % count;
    const int64_t o = i / (inner * count);
    int64_t k = indices32 ? static_cast<const int32_t*>(indices)[j] : static_cast<const int64_t*>(indices)[j];
    if (k < -axis_dim || k >= axis_dim) {
      report_fault(fault, site, j, k, axis_dim);
      y[i] = T{};
      return;
    }
    if (k < 0) k += axis_dim;
    y[i] = x[(o * axis_dim + k) * inner + r];
  }
};

// The offset index tuple q (k int64 at indices + q * k) picks through dims
// and strides; -1 after reporting an entry outside [-dims[d], dims[d])
// (position: its place in indices). GatherND's and ScatterND's.
OS_HD int64_t tuple_offset(const int64_t* indices, int64_t q, int k, const int64_t* dims, const int64_t* stride,
                           int64_t* fault, int64_t site) {
  int64_t at = 0;
  for (int d = 0; d < k; ++d) {
    int64_t v = indices[q * k + d];
    if (v < -dims[d] || v >= dims[d]) {
      report_fault(fault, site, q * k + d, v, dims[d]);
      return -1;
    }
    if (v < 0) v += dims[d];
    at += v * stride[d];
  }
  return at;
}

// GatherND: output item i is element s of slice q, q = batch * tuples + t;
// tuple q (k int64 at indices + q * k) picks, in batch `batch` of x, the
// slice at sum idx_d * stride[d]. Faults as Gather's (position: the place in
// indices of the bad entry).
template <class T>
struct GatherNDKernel {
  int k;
  int64_t dims[kKernelRank], stride[kKernelRank];
  int64_t tuples, slice, batch_block;  // tuples per batch, elements per slice and per batch of x
  const T* x;
  const int64_t* indices;
  T* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    const int64_t q = i / slice;
    const int64_t at = tuple_offset(indices, q, k, dims, stride, fault, site);
    y[i] = at < 0 ? T{} : x[(q / tuples) * batch_block + i % slice + at];
  }
};

// OneHot: y viewed as [outer, depth, inner] is values[1] where the index
// at [outer, inner] (any integer type; negative ones count from the end
// when `wrap`, from opset 11) is the depth position, values[0] elsewhere;
// an index out of range makes its whole line values[0], as the spec says.
// values: two elements of `width` bytes.
struct OneHotKernel {
  int64_t depth, inner;
  bool wrap;
  IntType index_type;
  int width;
  const void* indices;
  const void* values;
  void* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t in = i % inner, d = (i / inner) % depth, o = i / (inner * depth);
    int64_t k = static_cast<int64_t>(int_load(index_type, indices, o * inner + in));
    bool valid = index_type.is_signed || k >= 0;  // a uint64 past INT64_MAX is out of range
    if (valid && wrap && k < 0 && k >= -depth) k += depth;
    valid = valid && k >= 0 && k < depth;
    const int64_t which = valid && k == d ? 1 : 0;
    switch (width) {
      case 1: static_cast<uint8_t*>(y)[i] = static_cast<const uint8_t*>(values)[which]; break;
      case 2: static_cast<uint16_t*>(y)[i] = static_cast<const uint16_t*>(values)[which]; break;
      case 4: static_cast<uint32_t*>(y)[i] = static_cast<const uint32_t*>(values)[which]; break;
      default: static_cast<uint64_t*>(y)[i] = static_cast<const uint64_t*>(values)[which]; break;
    }
  }
};

// Pad in edge, wrap or reflect mode: each output element copies the input
// element its coordinates map to (any fixed width): output coordinate k is
// input coordinate k - begin, clamped (edge), taken modulo the dim (wrap) or
// reflected about the edge elements, repeatedly if needed (numpy's reflect).
struct PadMapKernel {
  int mode;  // 1 edge, 2 wrap, 3 reflect
  int rank, width;
  int64_t out[kKernelRank], in[kKernelRank], begin[kKernelRank], in_stride[kKernelRank];
  const void* x;
  void* y;
  OS_HD static int64_t floor_mod(int64_t a, int64_t n) {
    const int64_t r = a % n;
    return r < 0 ? r + n : r;
  }
  OS_HD void operator()(int64_t i) const {
    int64_t rest = i, off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t k = rest % out[d], n = in[d];
      rest /= out[d];
      int64_t c = k - begin[d];
      if (mode == 1) {
        c = c < 0 ? 0 : c > n - 1 ? n - 1 : c;
      } else if (mode == 2) {
        c = floor_mod(c, n);
      } else {
        const int64_t period = 2 * (n - 1);
        c = period == 0 ? 0 : floor_mod(c, period);
        if (c >= n) c = period - c;
      }
      off += c * in_stride[d];
    }
    switch (width) {
      case 1: static_cast<uint8_t*>(y)[i] = static_cast<const uint8_t*>(x)[off]; break;
      case 2: static_cast<uint16_t*>(y)[i] = static_cast<const uint16_t*>(x)[off]; break;
      case 4: static_cast<uint32_t*>(y)[i] = static_cast<const uint32_t*>(x)[off]; break;
      default: static_cast<uint64_t*>(y)[i] = static_cast<const uint64_t*>(x)[off]; break;
    }
  }
};

// Element i of a fixed-width array copied to place `to` of another.
OS_HD void copy_element(int bytes, const void* from, int64_t i, void* to, int64_t j) {
  switch (bytes) {
    case 1: static_cast<uint8_t*>(to)[j] = static_cast<const uint8_t*>(from)[i]; break;
    case 2: static_cast<uint16_t*>(to)[j] = static_cast<const uint16_t*>(from)[i]; break;
    case 4: static_cast<uint32_t*>(to)[j] = static_cast<const uint32_t*>(from)[i]; break;
    default: static_cast<uint64_t*>(to)[j] = static_cast<const uint64_t*>(from)[i]; break;
  }
}

// ReverseSequence: x viewed as [d0, d1, inner] with the batch and time axes
// 0 and 1 in some order; y[i] is x[i] with the time step t < len[b] read
// from step len[b] - 1 - t. A length outside [0, time] is reported (at its
// batch entry) and leaves its elements as they are.
struct ReverseSequenceKernel {
  int bytes;
  bool batch_first;  // batch_axis 0 (time_axis 1)
  int64_t d1, inner, time;
  const void* lens;
  bool lens_wide;  // int64 (else int32)
  const void* x;
  void* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    const int64_t p1 = (i / inner) % d1, p0 = i / (inner * d1);
    const int64_t b = batch_first ? p0 : p1, t = batch_first ? p1 : p0;
    const int64_t len = lens_wide ? static_cast<const int64_t*>(lens)[b] : static_cast<const int32_t*>(lens)[b];
    int64_t src = i;
    if (len < 0 || len > time) report_fault(fault, site, b, len, time + 1);
    else if (t < len) src = i + (len - 1 - 2 * t) * (batch_first ? inner : d1 * inner);
    copy_element(bytes, x, src, y, i);
  }
};

constexpr int kCol2ImRank = 6;  // spatial dims Col2Im takes on the device

// Col2Im: output element i = (n * C + c) * image_size + pos sums, in
// double and in the reference's order (kernel offset, then block), every
// column entry x[(n * C + c) * kernel + k, block] whose block position and
// kernel offset land on pos: for each offset at most one block does, found
// by dividing instead of searching. float32, float16, bfloat16.
struct Col2ImKernel {
  ElemType type;
  int nd;
  int64_t kernel, blocks, image_size;
  int64_t image[kCol2ImRank], block[kCol2ImRank], nblocks[kCol2ImRank];
  int64_t stride[kCol2ImRank], dilation[kCol2ImRank], pad[kCol2ImRank];
  const void* x;
  void* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t nc = i / image_size;
    int64_t p[kCol2ImRank];
    for (int64_t r = i % image_size, d = nd - 1; d >= 0; --d) {
      p[d] = r % image[d];
      r /= image[d];
    }
    double acc = 0;
    for (int64_t k = 0; k < kernel; ++k) {
      int64_t kpos[kCol2ImRank];
      for (int64_t r = k, d = nd - 1; d >= 0; --d) {
        kpos[d] = r % block[d];
        r /= block[d];
      }
      int64_t b = 0;
      bool hit = true;
      for (int d = 0; d < nd && hit; ++d) {
        const int64_t q = p[d] + pad[d] - kpos[d] * dilation[d];
        hit = q >= 0 && q % stride[d] == 0 && q / stride[d] < nblocks[d];
        b = b * nblocks[d] + q / stride[d];
      }
      if (hit) acc += static_cast<double>(load_real(type, x, (nc * kernel + k) * blocks + b));
    }
    store_real(type, y, i, static_cast<float>(acc));
  }
};

}  // namespace onnxscope::cuda
