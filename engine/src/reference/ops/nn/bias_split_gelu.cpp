// Reference kernel: com.microsoft BiasSplitGelu (ONNX Runtime's contrib
// operator for diffusion models' UNet, as its transformers optimizer fuses
// the GEGLU of their feed-forward layers).
//
//   x = X + bias               X (N, S, D), bias (D), D even
//   Y[n, s, j] = x[n, s, j] * Gelu(x[n, s, j + D/2])     Y (N, S, D/2)
//   Gelu(v) = 0.5 v (1 + erf(v / sqrt 2))
//
// Each sum is rounded to X's type first (ONNX Runtime adds in that type);
// the GELU and the product in double, rounded once. ONNX Runtime has the
// operator on CUDA only, and there for D of 2560, 5120 and 10240 only; the
// reference takes any even D.
#include <cmath>
#include <string>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref {

void BiasSplitGelu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  if (x.rank() != 3) ctx.fail("X must have shape [N, S, D], got " + shape_to_string(x.shape()));
  const int64_t D = x.shape()[2];
  if (D % 2 != 0) ctx.fail("X's last dimension D = " + std::to_string(D) + " must be even (it is split in halves)");
  if (bias.rank() != 1 || bias.shape()[0] != D)
    ctx.fail("bias must have shape [" + std::to_string(D) + "] (X's last dimension), got " +
             shape_to_string(bias.shape()));
  if (bias.dtype() != x.dtype())
    ctx.fail("bias has element type " + std::string(dtype_name(bias.dtype())) + ", X " +
             std::string(dtype_name(x.dtype())));
  Tensor& y = ctx.allocate_output(0, x.dtype(), {x.shape()[0], x.shape()[1], D / 2});
  const uint64_t half = static_cast<uint64_t>(D / 2), rows = half == 0 ? 0 : x.element_count() / (2 * half);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t j = 0; j < half; ++j) {
        const uint64_t at = r * 2 * half + j;
        const double left = round_as<T>(static_cast<double>(get<T>(x, at)) + static_cast<double>(get<T>(bias, j)));
        const double right =
            round_as<T>(static_cast<double>(get<T>(x, at + half)) + static_cast<double>(get<T>(bias, j + half)));
        const double gelu = 0.5 * right * (1.0 + std::erf(right / std::sqrt(2.0)));
        put<T>(y, r * half + j, static_cast<C>(left * gelu));
      }
  });
}

}  // namespace onnxscope::ref
