// Reference kernel: Squeeze (a view).
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Squeeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes_of(ctx, axes)) {
    for (int64_t a : axes) {
      const size_t n = static_cast<size_t>(checked_axis(ctx, a, rank));
      if (drop[n]) ctx.fail("axis " + std::to_string(a) + " is given twice");
      if (x.shape()[n] != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(x.shape()[n]));
      drop[n] = true;
    }
  } else {
    for (size_t d = 0; d < drop.size(); ++d) drop[d] = x.shape()[d] == 1;
  }
  Shape out;
  for (size_t d = 0; d < drop.size(); ++d)
    if (!drop[d]) out.push_back(x.shape()[d]);
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

}  // namespace onnxscope::ref
