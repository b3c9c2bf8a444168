// Reference kernel: ai.onnx.preview.training Momentum.
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

void Momentum(KernelContext& ctx) {
  const Optimizer o = optimizer_inputs(ctx, 3, 2);
  const double alpha = ctx.required_attr("alpha").f, beta = ctx.required_attr("beta").f,
               norm = ctx.required_attr("norm_coefficient").f;
  const std::string mode = ctx.required_attr("mode").s;
  if (mode != "standard" && mode != "nesterov") ctx.fail("mode must be 'standard' or 'nesterov', got '" + mode + "'");
  const bool nesterov = mode == "nesterov";
  const double beta_adj = o.t > 0 ? beta : 1.0;
  optimizer_apply<3, 2>(ctx, o, [&](const double* v, double* out) {
    const double x = v[0], g = norm * x + v[1];
    const double vn = alpha * v[2] + beta_adj * g;
    out[0] = nesterov ? x - o.r * (g + alpha * vn) : x - o.r * vn;
    out[1] = vn;
  });
}

}  // namespace onnxscope::ref
