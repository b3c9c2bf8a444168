// Reference kernel: ai.onnx.ml Normalizer.
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

// Per row of [N, C] (a 1-D input is one row), in double, rounded to float:
// MAX: x / max(x); L1: x / sum(|x|); L2: x / sqrt(sum(x^2)) (the spec's
// sqrt(x^2 / sum(x^2)) with the sign of x kept). A zero divisor leaves the row as is.
// MAX divides by the largest value, not the largest magnitude (the spec and
// onnxruntime; onnx's Python reference uses max |x|).
void Normalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::string norm = ctx.attr_string("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") ctx.fail("norm must be MAX, L1 or L2, got '" + norm + "'");
  const std::vector<double> v = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  Tensor& y = ctx.allocate_output(0, DataType::Float, x.shape());
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = v.data() + r * rc.cols;
    double div = 0;
    if (norm == "MAX") {
      div = rc.cols > 0 ? *std::max_element(row, row + rc.cols) : 0.0;
    } else if (norm == "L1") {
      for (int64_t c = 0; c < rc.cols; ++c) div += std::abs(row[c]);
    } else {
      for (int64_t c = 0; c < rc.cols; ++c) div += row[c] * row[c];
      div = std::sqrt(div);
    }
    for (int64_t c = 0; c < rc.cols; ++c)
      store<float>(y, r * rc.cols + c, static_cast<float>(div == 0 ? row[c] : row[c] / div));
  }
}

}  // namespace onnxscope::ref
