// Reference kernel: ai.onnx.preview.training Adagrad.
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

void Adagrad(KernelContext& ctx) {
  const Optimizer o = optimizer_inputs(ctx, 3, 2);
  const double norm = ctx.attr_float("norm_coefficient", 0.0f), decay = ctx.attr_float("decay_factor", 0.0f),
               eps = ctx.attr_float("epsilon", 1e-6f);
  const double r = o.r / (1.0 + static_cast<double>(o.t) * decay);
  optimizer_apply<3, 2>(ctx, o, [&](const double* v, double* out) {
    const double x = v[0], g = norm * x + v[1], h = v[2] + g * g;
    out[0] = x - r * g / (std::sqrt(h) + eps);
    out[1] = h;
  });
}

}  // namespace onnxscope::ref
