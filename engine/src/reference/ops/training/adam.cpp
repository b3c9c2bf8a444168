// Reference kernel: ai.onnx.preview.training Adam.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/training/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Adam(KernelContext& ctx) {
  const Optimizer o = optimizer_inputs(ctx, 4, 3);
  const double alpha = ctx.attr_float("alpha", 0.9f), beta = ctx.attr_float("beta", 0.999f),
               eps = ctx.attr_float("epsilon", 1e-6f), norm = ctx.attr_float("norm_coefficient", 0.0f),
               norm_post = ctx.attr_float("norm_coefficient_post", 0.0f);
  const double t = static_cast<double>(o.t);
  const double r = o.t > 0 ? o.r * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t)) : o.r;
  optimizer_apply<4, 3>(ctx, o, [&](const double* v, double* out) {
    const double x = v[0], g = norm * x + v[1];
    const double vn = alpha * v[2] + (1.0 - alpha) * g;
    const double hn = beta * v[3] + (1.0 - beta) * g * g;
    out[0] = (1.0 - norm_post) * (x - r * vn / (std::sqrt(hn) + eps));
    out[1] = vn;
    out[2] = hn;
  });
}

}  // namespace onnxscope::ref
