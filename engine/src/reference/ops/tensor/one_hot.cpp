// Reference kernel: OneHot.
//
// Data movement copies elements without interpreting them, so it works for
// every element type, strings and packed sub-byte types included. Every index
// is bounds-checked; negative indices count from the end where the spec
// allows them.
#include <algorithm>
#include <cmath>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void OneHot(KernelContext& ctx) {
  const Tensor& ind = ctx.input(0);
  const Tensor& depth_t = ctx.input(1);
  const Tensor& values = ctx.input(2);
  const int64_t depth = scalar_int(ctx, depth_t, "depth", true);  // non-integer depth is cast to int64
  if (depth < 0) ctx.fail("depth must be non-negative, got " + std::to_string(depth));
  if (values.rank() != 1 || values.element_count() != 2)
    ctx.fail("values must be a 1-D tensor of two elements [off_value, on_value], got shape " +
             shape_to_string(values.shape()));
  const int64_t r = ind.rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -r - 1 || axis > r)
    ctx.fail("axis " + std::to_string(axis) + " is out of range [" + std::to_string(-r - 1) + ", " + std::to_string(r) +
             "]");
  if (axis < 0) axis += r + 1;
  // Opset 11 made indices in [-depth, -1] count from the end; before, they are off.
  const bool wrap_negative = ctx.opset_version() >= 11;
  const std::vector<int64_t> idx = index_values(ctx, ind, "indices", true);
  const size_t a = static_cast<size_t>(axis);
  Shape out_shape(ind.shape().begin(), ind.shape().begin() + axis);
  out_shape.push_back(depth);
  out_shape.insert(out_shape.end(), ind.shape().begin() + axis, ind.shape().end());
  Tensor& out = ctx.allocate_output(0, values.dtype(), out_shape);
  ElementCopier copy(ctx, values, out);
  for (uint64_t i = 0; i < out.element_count(); ++i) copy(i, 0);  // off_value everywhere
  const uint64_t outer = dims_product(ind.shape(), 0, a), inner = dims_product(ind.shape(), a, ind.shape().size());
  for (uint64_t o = 0; o < outer; ++o) {
    for (uint64_t i = 0; i < inner; ++i) {
      int64_t k = idx[o * inner + i];
      if (wrap_negative && k < 0 && k >= -depth) k += depth;
      if (k < 0 || k >= depth) continue;  // out of range: all off_value, as the spec says
      copy((o * static_cast<uint64_t>(depth) + static_cast<uint64_t>(k)) * inner + i, 1);
    }
  }
}

}  // namespace onnxscope::ref
