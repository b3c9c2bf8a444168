// Reference kernels: com.microsoft BiasGelu and FastGelu (ONNX Runtime's
// contrib operators, as its transformers optimizer fuses a bias Add and a
// GELU): x = A + B, B 1-D along A's last axis (optional for FastGelu), then
//   BiasGelu: y = 0.5 x (1 + erf(x / sqrt 2))
//   FastGelu: y = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
// The sum is rounded to A's type first (ONNX Runtime adds, then applies the
// GELU); the GELU in double, rounded once.
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref {
namespace {

void bias_gelu(KernelContext& ctx, bool tanh_form) {
  const Tensor& a = ctx.input(0);
  const Tensor* bias = ctx.optional_input(1);
  if (!tanh_form && !bias) ctx.fail("BiasGelu needs its bias input B");
  const int64_t last = a.rank() == 0 ? 1 : a.shape().back();
  if (bias) {
    if (bias->rank() != 1 || bias->shape()[0] != last)
      ctx.fail("bias must have shape [" + std::to_string(last) + "] (the input's last dimension), got " +
               shape_to_string(bias->shape()));
    if (bias->dtype() != a.dtype()) ctx.fail("bias must have the input's element type");
  }
  Tensor& y = ctx.allocate_output(0, a.dtype(), a.shape());
  const uint64_t n = a.element_count(), w = static_cast<uint64_t>(last);
  dispatch<kFloats>(ctx, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for (uint64_t i = 0; i < n; ++i) {
      double x = static_cast<double>(get<S>(a, i));
      if (bias) x = round_as<S>(x + static_cast<double>(get<S>(*bias, i % w)));
      const double g = tanh_form ? 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)))
                                 : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      put<S>(y, i, static_cast<C>(g));
    }
  });
}

}  // namespace

void BiasGelu(KernelContext& ctx) { bias_gelu(ctx, false); }
void FastGelu(KernelContext& ctx) { bias_gelu(ctx, true); }

}  // namespace onnxscope::ref
