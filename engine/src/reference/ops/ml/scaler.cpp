// Reference kernel: ai.onnx.ml Scaler.
//
// Where the spec leaves a detail open this kernel follows onnxruntime, the
// implementation these operators were written for (each such place says so).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Y = (X - offset) * scale as float; offset and scale have one value for all
// elements or one per column (the last axis), and the same length (spec).
void Scaler(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<float> offset = ctx.attr_floats("offset");
  const std::vector<float> scale = ctx.attr_floats("scale");
  if (offset.empty() || scale.empty()) ctx.fail("offset and scale must be given");
  if (offset.size() != scale.size())
    ctx.fail("offset and scale must have the same length (" + std::to_string(offset.size()) + " vs " + std::to_string(scale.size()) + ")");
  const std::vector<double> v = ml_input_values(ctx, x);
  const int64_t f = x.rank() == 0 ? 1 : x.shape().back();
  if (offset.size() != 1 && static_cast<int64_t>(offset.size()) != f)
    ctx.fail("offset and scale must have 1 or " + std::to_string(f) + " values, have " + std::to_string(offset.size()));
  Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
  for (uint64_t i = 0; i < v.size(); ++i) {
    const size_t k = offset.size() == 1 ? 0 : static_cast<size_t>(static_cast<int64_t>(i) % f);
    store<float>(y, i, static_cast<float>((v[i] - offset[k]) * scale[k]));
  }
}

}  // namespace onnxscope::ref
