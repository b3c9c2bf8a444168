// Reference kernel: Det.
//
// Float inputs (float16, bfloat16, float, double) are widened to double and
// products are accumulated in double, then rounded once on store. Integer
// products are accumulated in 64-bit two's complement arithmetic, so results
// wrap like numpy's fixed-width integer matmul.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/einsum_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Determinant of each trailing square matrix, by LU decomposition with partial pivoting in double.
void Det(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    ctx.fail("X must have shape [*, M, M], got " + shape_to_string(s));
  const int64_t n = s.back();
  const Shape out_shape(s.begin(), s.end() - 2);
  const uint64_t count = *checked_element_count(out_shape);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x);
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    std::vector<double> m(static_cast<size_t>(n * n));
    for (uint64_t b = 0; b < count; ++b) {
      std::copy(xv.begin() + static_cast<int64_t>(b) * n * n, xv.begin() + static_cast<int64_t>(b + 1) * n * n, m.begin());
      double det = 1;
      for (int64_t col = 0; col < n && det != 0; ++col) {
        int64_t piv = col;
        for (int64_t r = col + 1; r < n; ++r)
          if (std::abs(m[r * n + col]) > std::abs(m[piv * n + col])) piv = r;
        if (m[piv * n + col] == 0) {
          det = 0;
          break;
        }
        if (piv != col) {
          for (int64_t j = 0; j < n; ++j) std::swap(m[piv * n + j], m[col * n + j]);
          det = -det;
        }
        det *= m[col * n + col];
        for (int64_t r = col + 1; r < n; ++r) {
          const double f = m[r * n + col] / m[col * n + col];
          for (int64_t j = col; j < n; ++j) m[r * n + j] -= f * m[col * n + j];
        }
      }
      put<S>(out, b, static_cast<compute_t<S>>(det));
    }
  });
}

}  // namespace onnxscope::ref
