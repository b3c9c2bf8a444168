// Reference kernel: com.microsoft FusedGemm (ONNX Runtime's contrib operator,
// which its graph optimizer writes for a Gemm and the activation after it,
// and saves with optimized_model_filepath).
//
//   Y = activation(Gemm(A, B, C))
//
// Every Gemm attribute; activation one of Relu, LeakyRelu, Tanh, Sigmoid,
// HardSigmoid, Elu, Selu, ThresholdedRelu, Softplus, Softsign, with its
// parameters in activation_alpha / activation_beta / activation_gamma (ONNX's
// defaults where absent: LeakyRelu 0.01, HardSigmoid 0.2 and 0.5, Elu 1,
// Selu 1.6732632 and 1.0507010, ThresholdedRelu 1). The product is the
// reference's Gemm (rounded once to the output type, as ONNX Runtime stores
// it); the activation in double, rounded once more.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

void FusedGemm(KernelContext& ctx) {
  const std::string act = ctx.attr_string("activation", "");
  auto param = [&](const char* name, double fallback) {
    return ctx.has_attr(name) ? static_cast<double>(ctx.attr_float(name, 0.0f)) : fallback;
  };
  double a = 0, b = 0;
  if (act == "LeakyRelu") a = param("activation_alpha", 0.01);
  else if (act == "HardSigmoid") a = param("activation_alpha", 0.2), b = param("activation_beta", 0.5);
  else if (act == "Elu") a = param("activation_alpha", 1.0);
  else if (act == "Selu") a = param("activation_alpha", 1.67326319217681884765625), b = param("activation_gamma", 1.05070102214813232421875);
  else if (act == "ThresholdedRelu") a = param("activation_alpha", 1.0);
  else if (!act.empty() && act != "Relu" && act != "Tanh" && act != "Sigmoid" && act != "Softplus" && act != "Softsign")
    ctx.fail("activation '" + act + "' is not one of Relu, LeakyRelu, Tanh, Sigmoid, HardSigmoid, Elu, Selu, "
             "ThresholdedRelu, Softplus, Softsign");
  gemm(ctx, INT64_MAX);  // C optional and broadcast, as the latest Gemm
  if (act.empty()) return;
  Tensor& y = ctx.output(0).tensor();
  real::require_float(ctx, y, "Y");
  std::vector<double> v = real_values(y);
  for (double& s : v) {
    if (act == "Relu") s = s > 0 ? s : 0;
    else if (act == "LeakyRelu") s = s >= 0 ? s : a * s;
    else if (act == "Tanh") s = std::tanh(s);
    else if (act == "Sigmoid") s = 1.0 / (1.0 + std::exp(-s));
    else if (act == "HardSigmoid") s = std::fmax(0.0, std::fmin(1.0, a * s + b));
    else if (act == "Elu") s = s >= 0 ? s : a * std::expm1(s);
    else if (act == "Selu") s = s > 0 ? b * s : b * a * std::expm1(s);
    else if (act == "ThresholdedRelu") s = s > a ? s : 0;
    else if (act == "Softplus") s = s > 0 ? s + std::log1p(std::exp(-s)) : std::log1p(std::exp(s));
    else if (act == "Softsign") s = s / (1 + std::fabs(s));
  }
  real::store_doubles(ctx, y, v);
}

}  // namespace onnxscope::ref
