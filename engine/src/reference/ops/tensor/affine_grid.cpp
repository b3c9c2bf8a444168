// Reference kernel: AffineGrid.
//
// Interpolation weights and sums are computed in double (float16/float
// inputs included) and rounded once on store.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/grid_sample_math.h"
#include "core/nms_math.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "core/resize_plan.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Counter;

// grid[n, (d,) h, w] = theta[n] @ [x_w, y_h, (z_d,) 1] with normalised base coordinates in [-1, 1].
void AffineGrid(KernelContext& ctx) {
  const Tensor& theta = ctx.input(0);
  const std::vector<int64_t> size = int_values(ctx, ctx.input(1));
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  if (size.size() != 4 && size.size() != 5) ctx.fail("size must be [N, C, H, W] or [N, C, D, H, W]");
  const size_t r = size.size() - 2;  // spatial rank: 2 or 3
  const int64_t N = size[0];
  if (theta.shape() != Shape{N, static_cast<int64_t>(r), static_cast<int64_t>(r + 1)})
    ctx.fail("theta must have shape " + shape_to_string(Shape{N, static_cast<int64_t>(r), static_cast<int64_t>(r + 1)}) +
             ", got " + shape_to_string(theta.shape()));
  std::vector<int64_t> sp(size.begin() + 2, size.end());
  for (int64_t s : sp)
    if (s < 0) ctx.fail("size must be non-negative");
  Shape out_shape{N};
  out_shape.insert(out_shape.end(), sp.begin(), sp.end());
  out_shape.push_back(static_cast<int64_t>(r));
  auto base = [&](int64_t i, int64_t L) {
    if (align) return L == 1 ? -1.0 : -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(L - 1);
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(L) - 1.0;
  };
  dispatch<kFloats>(ctx, theta.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> tv = real_values(theta);
    Tensor& y = ctx.allocate_output(0, theta.dtype(), out_shape);
    uint64_t o = 0;
    for (int64_t n = 0; n < N; ++n) {
      const double* t = tv.data() + n * static_cast<int64_t>(r * (r + 1));
      for (Counter c(sp); c.valid(); c.next()) {
        // Homogeneous base point, innermost dim first: (x, y[, z], 1).
        std::vector<double> p;
        for (size_t d = r; d-- > 0;) p.push_back(base(c.index[d], sp[d]));
        p.push_back(1.0);
        for (size_t row = 0; row < r; ++row) {
          double v = 0;
          for (size_t j = 0; j <= r; ++j) v += t[row * (r + 1) + j] * p[j];
          put<S>(y, o++, static_cast<compute_t<S>>(v));
        }
      }
    }
  });
}

}  // namespace onnxscope::ref
