// Element-indexed gather and scatter: GatherElements, and ScatterElements
// and ScatterND with or without a reduction; TensorScatter's cache writes;
// MaxUnpool. Indices are read and checked on
// the device as Gather's are (kernels/movement.h): a bad index is reported
// through `fault` and never reads or writes outside the tensor.
#pragma once

#include <cmath>

#include "cuda/kernels/movement.h"
#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

enum class ScatterOp : int { None, Add, Mul, Max, Min };

// f(a, b) as the reference combines float32 (max and min propagate NaN).
OS_HD float scatter_combine(ScatterOp op, float a, float b) {
  switch (op) {
    case ScatterOp::Add: return a + b;
    case ScatterOp::Mul: return a * b;
    case ScatterOp::Max: return a != a || b != b ? NAN : (a > b ? a : b);
    case ScatterOp::Min: return a != a || b != b ? NAN : (a < b ? a : b);
    default: return b;
  }
}

// Without a reduction an update is a plain store, of any width (duplicate
// indices are undefined by the spec: on the GPU any one of them may win).
template <class T>
OS_HD void scatter_store(T* at, T v, ScatterOp) {
  *at = v;
}
// With one, float32 only, and atomic on the GPU: updates to one place from
// different threads all land (in some order, as the spec allows).
OS_HD void scatter_store(float* at, float v, ScatterOp op) {
  if (op == ScatterOp::None) {
    *at = v;
    return;
  }
#ifdef __CUDA_ARCH__
  if (op == ScatterOp::Add) {
    atomicAdd(at, v);
    return;
  }
  unsigned int* word = reinterpret_cast<unsigned int*>(at);
  unsigned int old = *word, seen;
  do {
    seen = old;
    old = atomicCAS(word, seen, __float_as_uint(scatter_combine(op, __uint_as_float(seen), v)));
  } while (old != seen);
#else
  *at = scatter_combine(op, *at, v);
#endif
}

OS_HD int64_t index_at(const void* indices, bool indices32, int64_t i) {
  return indices32 ? static_cast<const int32_t*>(indices)[i] : static_cast<const int64_t*>(indices)[i];
}

// Where element i of indices (shape idx_dims, the rank of data) points in
// data: its own coordinates, but its value on `axis`; -1 after reporting a
// value outside [-dims[axis], dims[axis]).
struct ElementTarget {
  int rank, axis;
  int64_t idx_dims[kKernelRank];
  int64_t axis_dim;
  int64_t stride[kKernelRank];  // data's
  const void* indices;
  bool indices32;
  OS_HD int64_t operator()(int64_t i, int64_t* fault, int64_t site) const {
    int64_t at = 0, rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t c = rest % idx_dims[d];
      rest /= idx_dims[d];
      if (d == axis) {
        c = index_at(indices, indices32, i);
        if (c < -axis_dim || c >= axis_dim) {
          report_fault(fault, site, i, c, axis_dim);
          return -1;
        }
        if (c < 0) c += axis_dim;
      }
      at += c * stride[d];
    }
    return at;
  }
};

// GatherElements: y[i] = x[target(i)], y shaped as the indices.
template <class T>
struct GatherElementsKernel {
  ElementTarget target;
  const T* x;
  T* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    const int64_t at = target(i, fault, site);
    y[i] = at < 0 ? T{} : x[at];
  }
};

// ScatterElements (nd false): update i goes to target(i). ScatterND (nd
// true): update i is element i % slice of slice q = i / slice, which goes to
// the place tuple q (k int64 at indices + q * k) picks among data's first k
// dims (nd_dims, nd_stride). y already holds a copy of data.
template <class T>
struct ScatterKernel {
  bool nd;
  ScatterOp op;
  ElementTarget target;  // ScatterElements
  int k;                 // ScatterND
  int64_t nd_dims[kKernelRank], nd_stride[kKernelRank];
  int64_t slice;
  const int64_t* nd_indices;
  const T* updates;
  T* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    int64_t at;
    if (nd) {
      at = tuple_offset(nd_indices, i / slice, k, nd_dims, nd_stride, fault, site);
      if (at < 0) return;
      at += i % slice;
    } else {
      at = target(i, fault, site);
      if (at < 0) return;
    }
    scatter_store(y + at, updates[i], op);
  }
};

// TensorScatter (opset 24): update [.., seq_len, ..] written into the copy
// of past_cache [.., max_len, ..] along the sequence axis, batch entry b's
// rows from write[b] on (0 without write indices); circular mode wraps them
// modulo max_len, linear mode reports a start outside [0, max_len - seq_len]
// and writes nothing for it. Item i is update element i, copied as `bytes`.
struct TensorScatterKernel {
  int bytes;
  bool circular;
  int64_t per_batch, max_len, seq_len, inner;  // per_batch: positions between the batch and sequence axes
  const int64_t* write;                        // [batch] or nullptr
  const void* update;
  void* y;
  int64_t* fault;
  int64_t site;
  OS_HD void operator()(int64_t i) const {
    const int64_t e = i % inner, s = (i / inner) % seq_len, o = i / (inner * seq_len);
    const int64_t b = o / per_batch, start = write ? write[b] : 0;
    int64_t row;
    if (circular) {  // (start + s) mod max_len, never negative, without overflowing start + s
      row = ((start % max_len) + max_len) % max_len;
      row = (row + s) % max_len;
    } else {
      if (start < 0 || start > max_len - seq_len) {
        report_fault(fault, site, b, start, max_len - seq_len + 1);
        return;
      }
      row = start + s;
    }
    copy_element(bytes, update, i, y, (o * max_len + row) * inner + e);
  }
};

// MaxUnpool, step 1: each input element i claims its output place (the
// flat index I[i] of the inferred shape, mapped into the output's), the
// largest i winning, as the reference's loop leaves the last write; a flat
// index outside [0, total) is reported. winner: the output's size, -1 each.
struct UnpoolClaimKernel {
  int rank;
  int64_t total;
  int64_t in_stride[8], out_stride[8];  // the inferred shape's and the output's
  const int64_t* indices;
  int64_t* winner;
  int64_t* fault;
  int64_t site;
  OS_HD int64_t place(int64_t flat) const {
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) {
      o += (flat / in_stride[d]) * out_stride[d];
      flat %= in_stride[d];
    }
    return o;
  }
  OS_HD void operator()(int64_t i) const {
    const int64_t flat = indices[i];
    if (flat < 0 || flat >= total) {
      report_fault(fault, site, i, flat, total);
      return;
    }
    int64_t* w = winner + place(flat);
#ifdef __CUDA_ARCH__
    atomicMax(reinterpret_cast<long long*>(w), static_cast<long long>(i));
#else
    if (*w < i) *w = i;
#endif
  }
};

// Step 2: each output place takes its winner's value, or 0.
struct UnpoolWriteKernel {
  int bytes;
  const int64_t* winner;
  const void* x;
  void* y;
  OS_HD void operator()(int64_t o) const {
    const int64_t i = winner[o];
    if (i >= 0) {
      copy_element(bytes, x, i, y, o);
      return;
    }
    const uint64_t zero = 0;
    copy_element(bytes, &zero, 0, y, o);
  }
};

}  // namespace onnxscope::cuda
