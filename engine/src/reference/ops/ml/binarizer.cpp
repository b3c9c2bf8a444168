// Reference kernel: ai.onnx.ml Binarizer.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Binarizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double threshold = ctx.attr_float("threshold", 0.0f);
  if (x.dtype() != DataType::Float && x.dtype() != DataType::Double && x.dtype() != DataType::Int64 && x.dtype() != DataType::Int32)
    ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  dispatch<kFloats | kSignedInts>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i)
      put<S>(y, i, static_cast<compute_t<S>>(static_cast<double>(get<S>(x, i)) > threshold ? 1 : 0));
  });
}

}  // namespace onnxscope::ref
