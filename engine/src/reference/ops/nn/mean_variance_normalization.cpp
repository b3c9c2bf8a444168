// Reference kernel: MeanVarianceNormalization.
//
// Statistics (means, variances, norms, log-softmax) are computed in double,
// which is at least the precision any stash_type asks for, and each result is
// rounded once to its output type. Where a spec casts an intermediate back to
// the input type ("Normalized" in LayerNormalization & co.) that rounding is kept.
#include <cmath>
#include <limits>

#include "reference/kernel_util.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using rn::put_real;

// y = (x - mean) / (sqrt(var) + 1e-9) with mean and variance over `axes`
// (default [0, 2, 3]); the epsilon is the one in the spec's function body.
void MeanVarianceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : ctx.attr_ints("axes", {0, 2, 3})) {
    const int64_t k = normalize_axis(ctx, a, rank);
    if (k >= rank) ctx.fail("axis " + std::to_string(a) + " is out of range for a scalar (rank 0)");
    if (reduced[k]) ctx.fail("axes lists axis " + std::to_string(a) + " more than once");
    reduced[k] = true;
  }
  uint64_t groups = 1, count = 1;
  for (int64_t k = 0; k < rank; ++k) (reduced[k] ? count : groups) *= static_cast<uint64_t>(x.shape()[k]);
  std::vector<double> mean(groups, 0.0), var(groups, 0.0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    auto value = [&](uint64_t i) { return static_cast<double>(get<S>(x, i)); };
    rn::for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) { mean[o] += value(i); });
    for (double& m : mean) m /= static_cast<double>(count);
    rn::for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      const double dv = value(i) - mean[o];
      var[o] += dv * dv;
    });
    for (double& v : var) v /= static_cast<double>(count);
    rn::for_each_reduction(x.shape(), reduced, [&](uint64_t i, uint64_t o) {
      put_real<S>(y, i, (value(i) - mean[o]) / (std::sqrt(var[o]) + 1e-9));
    });
  });
}

}  // namespace onnxscope::ref
