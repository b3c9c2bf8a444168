// Line kernels (kernels/portable.h, elementwise form): item i walks one line
// of a tensor viewed as [outer, n, inner] along an axis, the elements
// base + j * inner for j < n with base = (i / inner) * n * inner + i % inner.
// A line is sequential by nature here (a running sum, a first extreme), so
// one thread takes it whole, as the reference does: ArgMax / ArgMin,
// CumSum / CumProd. TopK instead ranks each element of a line by comparing
// it with the whole line (one thread per element).
#pragma once

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

OS_HD int64_t line_base(int64_t i, int64_t n, int64_t inner) { return (i / inner) * n * inner + i % inner; }

OS_HD bool is_nan_value(float v) { return v != v; }
OS_HD bool is_nan_value(double v) { return v != v; }
OS_HD bool is_nan_value(int32_t) { return false; }
OS_HD bool is_nan_value(int64_t) { return false; }

// ArgMax (max) / ArgMin: the index of the line's extreme, the first one
// (the last with select_last), a NaN beating every number and the first NaN
// winning (numpy's rule, the reference's), y int64 per line.
template <class T>
struct ArgReduceKernel {
  bool max, select_last;
  int64_t n, inner;
  const T* x;
  int64_t* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t base = line_base(i, n, inner);
    T best = x[base];
    int64_t at = 0;
    for (int64_t j = 1; j < n; ++j) {
      const T cur = x[base + j * inner];
      bool better = false, tie = false;
      if (is_nan_value(best)) {
        tie = is_nan_value(cur);
      } else if (is_nan_value(cur)) {
        better = true;
      } else {
        better = max ? cur > best : cur < best;
        tie = cur == best;
      }
      if (better || (tie && select_last)) {
        best = cur;
        at = j;
      }
    }
    y[i] = at;
  }
};

// The accumulator of a running sum or product: floats in double (rounded
// once when stored, as the reference does), integers in uint64, which wraps
// as the element type does once truncated.
template <class T>
struct LineAccumulator {
  using type = unsigned long long;
};
template <>
struct LineAccumulator<float> {
  using type = double;
};
template <>
struct LineAccumulator<double> {
  using type = double;
};

// CumSum (CumProd with prod) along the line: exclusive leaves out the
// element itself, reverse runs from the end.
template <class T>
struct CumulativeKernel {
  bool prod, exclusive, reverse;
  int64_t n, inner;
  const T* x;
  T* y;
  OS_HD void operator()(int64_t i) const {
    using Acc = typename LineAccumulator<T>::type;
    const int64_t base = line_base(i, n, inner);
    Acc acc = prod ? Acc(1) : Acc(0);
    for (int64_t step = 0; step < n; ++step) {
      const int64_t off = base + (reverse ? n - 1 - step : step) * inner;
      const Acc v = static_cast<Acc>(x[off]);
      if (exclusive) y[off] = static_cast<T>(acc);
      acc = prod ? Acc(acc * v) : Acc(acc + v);
      if (!exclusive) y[off] = static_cast<T>(acc);
    }
  }
};

// TopK: item i is element j = i % n of line i / n. Its rank is the number
// of elements of the line that come before it: larger first (largest) or
// smaller first, NaN counting as above every number, equal values in index
// order, the reference's order. A rank below k writes the element (its
// exact bits) and its index there. The ranks of a line are a permutation,
// so each output place is written once. n * n comparisons per line: the
// placement rule bounds n.
template <class T>
struct TopKKernel {
  bool largest;
  int64_t n, k, inner;
  const T* x;
  T* values;
  int64_t* indices;
  static OS_HD bool less(T a, T b) {  // numbers ascending, NaN last
    if (is_nan_value(a)) return false;
    if (is_nan_value(b)) return true;
    return a < b;
  }
  OS_HD void operator()(int64_t i) const {
    const int64_t line = i / n, j = i % n;
    const int64_t base = line_base(line, n, inner);
    const T v = x[base + j * inner];
    int64_t rank = 0;
    for (int64_t q = 0; q < n; ++q) {
      const T w = x[base + q * inner];
      const bool w_first = largest ? less(v, w) : less(w, v);
      const bool v_first = largest ? less(w, v) : less(v, w);
      if (w_first || (!v_first && q < j)) ++rank;
    }
    if (rank >= k) return;
    const int64_t out = (line / inner) * k * inner + line % inner + rank * inner;
    values[out] = v;
    indices[out] = j;
  }
};

}  // namespace onnxscope::cuda
