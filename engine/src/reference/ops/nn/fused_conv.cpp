// Reference kernel: com.microsoft FusedConv (ONNX Runtime's contrib operator,
// which its graph optimizer writes into the models it saves with
// optimized_model_filepath: a Conv, an optional sum input Z, an activation).
//
//   Y = activation(Conv(X, W, B) + Z)
//
// Every Conv attribute; activation "Relu", "Tanh", "Sigmoid", "LeakyRelu"
// (activation_params [alpha]), "Clip" ([min, max]), "HardSigmoid" ([alpha,
// beta]), or none. The convolution is the reference's Conv (its result
// rounded once to the output type, as ONNX Runtime stores it); the sum and
// the activation in double, rounded once more.
#include <cmath>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

void FusedConv(KernelContext& ctx) {
  const std::string act = ctx.attr_string("activation", "");
  std::vector<float> p = ctx.has_attr("activation_params") ? ctx.attr_floats("activation_params") : std::vector<float>{};
  auto param = [&](size_t i, const char* what) {
    if (p.size() <= i)
      ctx.fail("activation " + act + " needs activation_params [" + what + "], got " + std::to_string(p.size()) +
               " value(s)");
    return static_cast<double>(p[i]);
  };
  double a = 0, b = 0;
  if (act == "LeakyRelu") a = param(0, "alpha");
  else if (act == "Clip") a = param(0, "min, max"), b = param(1, "min, max");
  else if (act == "HardSigmoid") a = param(0, "alpha, beta"), b = param(1, "alpha, beta");
  else if (!act.empty() && act != "Relu" && act != "Tanh" && act != "Sigmoid")
    ctx.fail("activation '" + act + "' is not one of Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid");
  const Tensor* z = ctx.optional_input(3);
  Conv(ctx);
  Tensor& y = ctx.output(0).tensor();
  if (z && (z->shape() != y.shape() || z->dtype() != y.dtype()))
    ctx.fail("Z must have Y's shape " + shape_to_string(y.shape()) + " and type, got " + shape_to_string(z->shape()));
  if (act.empty() && !z) return;
  real::require_float(ctx, y, "Y");
  std::vector<double> v = real_values(y);
  const std::vector<double> zs = z ? real_values(*z) : std::vector<double>{};
  for (size_t i = 0; i < v.size(); ++i) {
    double s = z ? v[i] + zs[i] : v[i];
    if (act == "Relu") s = s > 0 ? s : 0;
    else if (act == "Tanh") s = std::tanh(s);
    else if (act == "Sigmoid") s = 1.0 / (1.0 + std::exp(-s));
    else if (act == "LeakyRelu") s = s >= 0 ? s : a * s;
    else if (act == "Clip") s = s < a ? a : s > b ? b : s;
    else if (act == "HardSigmoid") s = std::fmax(0.0, std::fmin(1.0, a * s + b));
    v[i] = s;
  }
  real::store_doubles(ctx, y, v);
}

}  // namespace onnxscope::ref
