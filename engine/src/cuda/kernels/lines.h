// Line kernels (kernels/portable.h, elementwise form): item i walks one line
// of a tensor viewed as [outer, n, inner] along an axis, the elements
// base + j * inner for j < n with base = (i / inner) * n * inner + i % inner.
// A line is sequential by nature here (a running sum, a first extreme), so
// one thread takes it whole, as the reference does: ArgMax / ArgMin,
// CumSum / CumProd.
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

}  // namespace onnxscope::cuda
