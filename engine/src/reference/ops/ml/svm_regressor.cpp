// Reference kernel: ai.onnx.ml SVMRegressor.
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
#include "reference/ops/math/common.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// n_supports > 0: sum_j coef[j] K(x, sv_j) + rho[0]; otherwise the linear
// x . coefficients + rho[0]. one_class maps the score to +1 (> 0) or -1.
void SVMRegressor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const Post post = post_transform(ctx);
  const SvmParams params = svm_params(ctx);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> sv = ctx.attr_floats("support_vectors");
  const std::vector<float> rho = ctx.attr_floats("rho");
  const int64_t n_supports = ctx.attr_int("n_supports", 0);
  const bool one_class = ctx.attr_int("one_class", 0) != 0;
  const int64_t f = rc.cols;
  if (rho.empty()) ctx.fail("rho must be given");
  if (n_supports < 0) ctx.fail("n_supports must be >= 0");
  if (n_supports > 0) {
    if (sv.size() != static_cast<size_t>(n_supports * f))
      ctx.fail("support_vectors must hold n_supports x features = " + std::to_string(n_supports * f) + " values");
    if (coef.size() != static_cast<size_t>(n_supports)) ctx.fail("coefficients must have one value per support vector");
  } else if (coef.size() != static_cast<size_t>(f)) {
    ctx.fail("coefficients must have one value per feature (" + std::to_string(f) + ") without support vectors");
  }
  float* out = ctx.allocate_output(0, DataType::Float, {rc.rows, 1}).mutable_data<float>();
  // Rows split across the threads (each row alone: the same bits at any count).
  const uint64_t per_row = static_cast<uint64_t>(std::max<int64_t>(n_supports, 1)) * static_cast<uint64_t>(f + 1);
  for_rows(static_cast<uint64_t>(rc.rows), per_row, [&](uint64_t r0, uint64_t r1) {
  for (auto n = static_cast<int64_t>(r0); n < static_cast<int64_t>(r1); ++n) {
    const double* row = xs.data() + n * f;
    double s = rho[0];
    if (n_supports > 0) {
      for (int64_t j = 0; j < n_supports; ++j) s += coef[j] * svm_kernel(params, params.kernel, row, sv.data() + j * f, f);
    } else {
      s += svm_kernel(params, SvmKernel::Linear, row, coef.data(), f);
    }
    if (one_class) s = s > 0 ? 1.0 : -1.0;
    apply_post(post, &s, 1);
    out[n] = static_cast<float>(s);
  }
  });
}

}  // namespace onnxscope::ref
