// Det: one thread per matrix, Gaussian elimination with partial pivoting in
// double over the thread's own scratch copy, in the reference's order (the
// same pivots, the same products), so the result is the reference's value
// rounded to float32.
#pragma once

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

struct DetKernel {
  int64_t n;          // the matrices are n x n
  const float* x;     // [count, n, n]
  double* scratch;    // [count, n, n]
  float* y;           // [count]
  OS_HD void operator()(int64_t b) const {
    double* m = scratch + b * n * n;
    for (int64_t i = 0; i < n * n; ++i) m[i] = static_cast<double>(x[b * n * n + i]);
    double det = 1;
    for (int64_t col = 0; col < n && det != 0; ++col) {
      int64_t piv = col;
      for (int64_t r = col + 1; r < n; ++r) {
        const double a = m[r * n + col], p = m[piv * n + col];
        if ((a < 0 ? -a : a) > (p < 0 ? -p : p)) piv = r;
      }
      if (m[piv * n + col] == 0) {
        det = 0;
        break;
      }
      if (piv != col) {
        for (int64_t j = 0; j < n; ++j) {
          const double t = m[piv * n + j];
          m[piv * n + j] = m[col * n + j];
          m[col * n + j] = t;
        }
        det = -det;
      }
      det *= m[col * n + col];
      for (int64_t r = col + 1; r < n; ++r) {
        const double f = m[r * n + col] / m[col * n + col];
        for (int64_t j = col; j < n; ++j) m[r * n + j] -= f * m[col * n + j];
      }
    }
    y[b] = static_cast<float>(det);
  }
};

}  // namespace onnxscope::cuda
