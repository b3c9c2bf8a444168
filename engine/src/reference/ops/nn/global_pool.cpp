// Reference kernels: GlobalMaxPool, GlobalAveragePool and GlobalLpPool.
//
// Values are widened to double; sums of float16/float inputs are
// accumulated in double and rounded once on store.
#include <cmath>
#include <limits>

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// Global pools reduce every spatial dim to 1.
void global_pool(KernelContext& ctx, PoolKind kind) {
  const Tensor& x = ctx.input(0);
  nn::require_nc_spatial(ctx, x, "X");
  const double p = kind == PoolKind::Lp ? lp_norm_p(ctx) : 1.0;
  const Shape& xs = x.shape();
  Shape out_shape(xs.size(), 1);
  out_shape[0] = xs[0];
  out_shape[1] = xs[1];
  const int64_t NC = xs[0] * xs[1], IS = nn::product(xs, 2);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x);
    std::vector<double> y(static_cast<size_t>(NC));
    for (int64_t nc = 0; nc < NC; ++nc) {
      const double* xp = xv.data() + nc * IS;
      double r = 0;
      if (kind == PoolKind::Max) {
        // NaN propagates, like numpy.max.
        r = -std::numeric_limits<double>::infinity();
        bool nan = IS == 0;
        for (int64_t i = 0; i < IS; ++i) {
          if (std::isnan(xp[i])) nan = true;
          else r = std::max(r, xp[i]);
        }
        if (nan) r = std::numeric_limits<double>::quiet_NaN();
      } else if (kind == PoolKind::Average) {
        for (int64_t i = 0; i < IS; ++i) r += xp[i];
        r /= static_cast<double>(IS);
      } else {
        for (int64_t i = 0; i < IS; ++i) r += std::pow(std::abs(xp[i]), p);
        r = std::pow(r, 1.0 / p);
      }
      y[nc] = r;
    }
    Tensor& out = ctx.allocate_output(0, x.dtype(), out_shape);
    nn::put_all<S>(out, y);
  });
}

}  // namespace

void GlobalMaxPool(KernelContext& c) { global_pool(c, PoolKind::Max); }
void GlobalAveragePool(KernelContext& c) { global_pool(c, PoolKind::Average); }
void GlobalLpPool(KernelContext& c) { global_pool(c, PoolKind::Lp); }

}  // namespace onnxscope::ref
