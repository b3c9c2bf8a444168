// Reference kernel: ai.onnx.ml FeatureVectorizer.
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

// Concatenates the inputs' rows into [N, sum(inputdimensions)] floats; input k
// contributes inputdimensions[k] columns, truncated or zero-padded. A 1-D input
// is one row [1, C]; higher ranks are flattened after the first axis (as onnxruntime).
void FeatureVectorizer(KernelContext& ctx) {
  const size_t n_inputs = ctx.input_count();
  const std::vector<int64_t> dims = ctx.attr_ints("inputdimensions");
  if (n_inputs == 0) ctx.fail("needs at least one input");
  if (dims.size() != n_inputs)
    ctx.fail("inputdimensions has " + std::to_string(dims.size()) + " entries for " + std::to_string(n_inputs) + " inputs");
  int64_t total = 0;
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("inputdimensions must be >= 0");
    total += d;
  }
  int64_t rows = -1;
  for (size_t k = 0; k < n_inputs; ++k) {
    const Tensor& x = ctx.input(k);
    if (!ml_numeric_input(x.dtype())) ctx.fail("inputs must be int32, int64, float or double");
    if (x.rank() == 0) ctx.fail("input " + std::to_string(k) + " must have rank >= 1");
    const int64_t n = x.rank() == 1 ? 1 : x.shape()[0];
    if (rows >= 0 && n != rows) ctx.fail("inputs have different batch sizes (" + std::to_string(rows) + " and " + std::to_string(n) + ")");
    rows = n;
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rows, total});
  int64_t col0 = 0;
  for (size_t k = 0; k < n_inputs; ++k) {
    const Tensor& x = ctx.input(k);
    const std::vector<double> v = real_values(x);
    const int64_t width = rows == 0 ? 0 : static_cast<int64_t>(x.element_count()) / rows;
    const int64_t take = std::min(width, dims[k]);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < take; ++c) store<float>(y, r * total + col0 + c, static_cast<float>(v[r * width + c]));
    col0 += dims[k];
  }
}

}  // namespace onnxscope::ref
