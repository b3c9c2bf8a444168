// Reference kernel: ai.onnx.ml ArrayFeatureExtractor.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Gathers the given indices along the last axis; a 1-D input gives a [1, K] output
// (as onnxruntime does; the spec leaves the rank open).
void ArrayFeatureExtractor(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& idx = ctx.input(1);
  const DataType t = x.dtype();
  if (t != DataType::Float && t != DataType::Double && t != DataType::Int64 && t != DataType::Int32 && t != DataType::String)
    ctx.fail("does not support element type " + std::string(dtype_name(t)));
  if (idx.dtype() != DataType::Int64) ctx.fail("indices must be int64");
  if (x.rank() < 1) ctx.fail("input must have rank >= 1");
  const int64_t last = x.shape().back();
  std::vector<int64_t> indices(idx.element_count());
  for (uint64_t i = 0; i < idx.element_count(); ++i) {
    indices[i] = load<int64_t>(idx, i);
    if (indices[i] < 0 || indices[i] >= last)
      ctx.fail("index " + std::to_string(indices[i]) + " is out of range for a last axis of size " + std::to_string(last));
  }
  const auto k = static_cast<int64_t>(indices.size());
  Shape out_shape = x.rank() == 1 ? Shape{1, k} : Shape(x.shape().begin(), x.shape().end() - 1);
  if (x.rank() > 1) out_shape.push_back(k);
  const uint64_t rows = last == 0 ? 0 : x.element_count() / static_cast<uint64_t>(last);
  Tensor& y = allocate_any(ctx, 0, t, out_shape);
  const uint64_t eb = element_bytes(t);
  StringBudget budget(&ctx);
  for (uint64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      copy_element(x, r * static_cast<uint64_t>(last) + static_cast<uint64_t>(indices[static_cast<size_t>(j)]), y,
                   r * static_cast<uint64_t>(k) + static_cast<uint64_t>(j), eb, budget);
}

}  // namespace onnxscope::ref
