// Reference kernel: Shape (with start and end).
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

void ShapeOp(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  // start/end (opset 15) slice the shape; out-of-range values are clamped.
  auto clamp_index = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp_index(ctx.attr_int("start", 0));
  const int64_t end = clamp_index(ctx.attr_int("end", rank));
  const int64_t n = std::max<int64_t>(0, end - start);
  Tensor& y = ctx.allocate_output(0, DataType::Int64, {n});
  for (int64_t i = 0; i < n; ++i) store<int64_t>(y, static_cast<uint64_t>(i), s[static_cast<size_t>(start + i)]);
}

}  // namespace onnxscope::ref
