// Reference kernel: EyeLike.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void EyeLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D, got shape " + shape_to_string(x.shape()));
  DataType t = x.dtype();
  if (ctx.has_attr("dtype")) {
    const int64_t v = ctx.attr_int("dtype", 0);
    if (v <= 0 || v > INT32_MAX || !is_known_dtype(static_cast<int32_t>(v))) ctx.fail("dtype is not a known element type");
    t = static_cast<DataType>(v);
  }
  const int64_t k = ctx.attr_int("k", 0);
  Tensor& y = ctx.allocate_output(0, t, x.shape());
  Tensor one = Tensor::zeros(t, {});
  dispatch<kAllFixed | kComplex>(ctx, t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    put<S>(one, 0, static_cast<compute_t<S>>(1));
  });
  ElementMover move(one, y, &ctx);
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  for (int64_t i = 0; i < rows; ++i) {
    if (k >= cols || k <= -rows) break;  // no diagonal inside (and i + k cannot overflow below)
    const int64_t j = i + k;
    if (j >= 0 && j < cols) move(static_cast<uint64_t>(i * cols + j), 0);
  }
}

}  // namespace onnxscope::ref
