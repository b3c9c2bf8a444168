// Reference kernel: Trilu.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Trilu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("input must have rank 2 or more, got shape " + shape_to_string(x.shape()));
  int64_t k = 0;
  if (const Tensor* kt = ctx.optional_input(1)) {
    if (kt->element_count() != 1 || !dtype_info(kt->dtype()).is_integer) ctx.fail("k must be an integer scalar");
    k = kt->element_as_int64(0);
  }
  const bool upper = ctx.attr_int("upper", 1) != 0;
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const int64_t rows = x.shape()[x.shape().size() - 2], cols = x.shape().back();
  if (y.element_count() == 0) return;
  const uint64_t batches = y.element_count() / static_cast<uint64_t>(rows * cols);
  ElementMover move(x, y, &ctx);
  uint64_t pos = 0;
  for (uint64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j, ++pos) {
        const bool keep = upper ? j - i >= k : j - i <= k;  // the rest stays zero
        if (keep) move(pos, pos);
      }
}

}  // namespace onnxscope::ref
