// Reference kernel: ai.onnx.ml LinearRegressor.
//
// Scores are computed in double and rounded to float on store (the outputs
// are float tensors). Where the spec is silent the kernel follows
// onnxruntime, the implementation these operators were defined by; places
// where onnx's Python reference and onnxruntime disagree say which was chosen.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Y[N, targets] = X coefficients^T + intercepts, then the post transform per row.
void LinearRegressor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> icpt = ctx.attr_floats("intercepts");
  const int64_t targets = ctx.attr_int("targets", 1);
  const Post post = post_transform(ctx);
  if (targets < 1) ctx.fail("targets must be >= 1");
  if (targets > static_cast<int64_t>(coef.size()) + 1)
    ctx.fail("targets (" + std::to_string(targets) + ") exceeds the coefficients' count " + std::to_string(coef.size()));
  if (coef.size() != static_cast<size_t>(targets * rc.cols))
    ctx.fail("coefficients must have targets x features = " + std::to_string(targets * rc.cols) + " values, has " +
             std::to_string(coef.size()));
  if (!icpt.empty() && icpt.size() != static_cast<size_t>(targets))
    ctx.fail("intercepts must have one value per target (" + std::to_string(targets) + "), has " + std::to_string(icpt.size()));
  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(targets)}, "the output");
  std::vector<double> out(static_cast<size_t>(rc.rows * targets));
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    double* o = out.data() + r * targets;
    for (int64_t t = 0; t < targets; ++t) {
      double s = icpt.empty() ? 0.0 : icpt[t];
      for (int64_t f = 0; f < rc.cols; ++f) s += row[f] * coef[t * rc.cols + f];
      o[t] = s;
    }
    apply_post(post, o, static_cast<size_t>(targets));
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rc.rows, targets});
  for (size_t i = 0; i < out.size(); ++i) store<float>(y, i, static_cast<float>(out[i]));
}

}  // namespace onnxscope::ref
