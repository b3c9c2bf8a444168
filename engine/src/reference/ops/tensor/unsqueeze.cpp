// Reference kernel: Unsqueeze (a view).
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

void Unsqueeze(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> axes;
  if (!axes_of(ctx, axes)) ctx.fail("axes are required");
  const int64_t out_rank = x.rank() + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    const size_t n = static_cast<size_t>(checked_axis(ctx, a, out_rank));
    if (inserted[n]) ctx.fail("axis " + std::to_string(a) + " is given twice");
    inserted[n] = true;
  }
  Shape out;
  size_t next = 0;
  for (size_t d = 0; d < inserted.size(); ++d) out.push_back(inserted[d] ? 1 : x.shape()[next++]);
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

}  // namespace onnxscope::ref
