// Reference kernel: com.microsoft BiasAdd (ONNX Runtime's contrib operator,
// as its optimizer writes it for diffusion models' UNet):
//   Y = X + bias + skip, X and skip (N, S, C), bias (C).
// Added left to right in X's type, as ONNX Runtime does.
#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref {

void BiasAdd(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  const Tensor& skip = ctx.input(2);
  if (x.rank() != 3) ctx.fail("X must have rank 3 (N, S, C), got " + shape_to_string(x.shape()));
  const int64_t c = x.shape()[2];
  if (bias.rank() != 1 || bias.shape()[0] != c)
    ctx.fail("bias must have shape [" + std::to_string(c) + "] (X's last dimension), got " + shape_to_string(bias.shape()));
  if (skip.shape() != x.shape())
    ctx.fail("skip must have X's shape " + shape_to_string(x.shape()) + ", got " + shape_to_string(skip.shape()));
  if (bias.dtype() != x.dtype() || skip.dtype() != x.dtype()) ctx.fail("bias and skip must have X's element type");
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const uint64_t n = x.element_count(), w = static_cast<uint64_t>(c);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    for (uint64_t i = 0; i < n; ++i)
      put<S>(y, i, static_cast<C>(round_as<S>(static_cast<double>(get<S>(x, i)) + static_cast<double>(get<S>(bias, i % w))) +
                                   static_cast<double>(get<S>(skip, i))));
  });
}

}  // namespace onnxscope::ref
