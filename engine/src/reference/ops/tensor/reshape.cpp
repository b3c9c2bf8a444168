// Reference kernel: Reshape (a view).
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

void Reshape(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape target = ctx.opset_version() < 5 ? ctx.attr_ints("shape") : int_values(ctx, ctx.input(1));
  if (ctx.opset_version() < 5 && !ctx.has_attr("shape")) ctx.fail("required attribute 'shape' is missing");
  const bool allowzero = ctx.opset_version() >= 14 && ctx.attr_int("allowzero", 0) != 0;
  Shape out(target.size());
  int64_t infer = -1;
  bool has_zero = false;
  for (size_t d = 0; d < target.size(); ++d) {
    const int64_t v = target[d];
    if (v == -1) {
      if (infer >= 0) ctx.fail("shape " + shape_to_string(target) + " has more than one -1");
      infer = static_cast<int64_t>(d);
      out[d] = 1;
    } else if (v == 0 && !allowzero) {
      // 0 copies the input's dimension.
      if (d >= x.shape().size())
        ctx.fail("shape " + shape_to_string(target) + " copies dimension " + std::to_string(d) + " of an input of rank " +
                 std::to_string(x.rank()));
      out[d] = x.shape()[d];
    } else if (v < 0) {
      ctx.fail("shape " + shape_to_string(target) + " has an invalid dimension " + std::to_string(v));
    } else {
      has_zero = has_zero || v == 0;
      out[d] = v;
    }
  }
  if (allowzero && has_zero && infer >= 0)
    ctx.fail("shape " + shape_to_string(target) + " has both 0 and -1 while allowzero is set");
  auto known = checked_element_count(out);
  if (!known) ctx.fail("shape " + shape_to_string(target) + " overflows");
  const uint64_t count = x.element_count();
  if (infer >= 0) {
    if (*known == 0 || count % *known != 0)
      ctx.fail("cannot reshape " + shape_to_string(x.shape()) + " into " + shape_to_string(target));
    out[static_cast<size_t>(infer)] = static_cast<int64_t>(count / *known);
  } else if (*known != count) {
    ctx.fail("cannot reshape " + shape_to_string(x.shape()) + " (" + std::to_string(count) + " elements) into " +
             shape_to_string(out));
  }
  ctx.set_output(0, Value(reshaped_view(x, std::move(out))));
}

}  // namespace onnxscope::ref
