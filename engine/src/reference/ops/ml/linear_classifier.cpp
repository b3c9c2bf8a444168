// Reference kernel: ai.onnx.ml LinearClassifier.
//
// Scores are computed in double and rounded to float on store (the outputs
// are float tensors). Where the spec is silent the kernel follows
// onnxruntime, the implementation these operators were defined by; places
// where onnx's Python reference and onnxruntime disagree say which was chosen.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// scores = X coefficients^T + intercepts, one row of coefficients per class.
// The label is the class of the largest raw score (before the transform, as
// onnxruntime; onnx's Python reference takes it after). With one row of
// coefficients and two labels the classifier is binary: the raw score s gives
// scores [-s, s] before the transform (as onnx's Python reference; onnxruntime
// writes [1 - s, s] and skips SOFTMAX), and the label is labels[1] when s > 0.
void LinearClassifier(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<double> xs = ml_input_values(ctx, x);
  const MlRows rc = ml_rows(ctx, x);
  const std::vector<float> coef = ctx.attr_floats("coefficients");
  const std::vector<float> icpt = ctx.attr_floats("intercepts");
  const Labels labels = class_labels(ctx, "classlabels_ints", "classlabels_strings");
  const Post post = post_transform(ctx);
  if (coef.empty()) ctx.fail("coefficients must be given");
  if (rc.cols == 0 || coef.size() % static_cast<size_t>(rc.cols) != 0)
    ctx.fail("coefficients (" + std::to_string(coef.size()) + ") are not a multiple of the feature count " + std::to_string(rc.cols));
  const size_t classes = coef.size() / static_cast<size_t>(rc.cols);
  if (!icpt.empty() && icpt.size() != classes)
    ctx.fail("intercepts must have one value per class (" + std::to_string(classes) + "), has " + std::to_string(icpt.size()));
  const bool binary = classes == 1;
  if (binary && labels.size() != 2) ctx.fail("one row of coefficients needs exactly 2 class labels");
  if (!binary && labels.size() != classes)
    ctx.fail(std::to_string(classes) + " rows of coefficients but " + std::to_string(labels.size()) + " class labels");

  const size_t k = binary ? 2 : classes;
  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(k)}, "the scores");
  std::vector<double> scores(static_cast<size_t>(rc.rows) * k);
  std::vector<size_t> picked(static_cast<size_t>(rc.rows));
  std::vector<double> raw(classes);
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    for (size_t c = 0; c < classes; ++c) {
      double s = icpt.empty() ? 0.0 : icpt[c];
      for (int64_t f = 0; f < rc.cols; ++f) s += row[f] * coef[c * rc.cols + f];
      raw[c] = s;
    }
    double* out = scores.data() + r * k;
    if (binary) {
      picked[r] = raw[0] > 0 ? 1 : 0;
      out[0] = -raw[0];
      out[1] = raw[0];
    } else {
      picked[r] = arg_max(raw.data(), classes);
      std::copy(raw.begin(), raw.end(), out);
    }
    apply_post(post, out, k);
  }
  write_classifier_outputs(ctx, labels, picked, scores, rc.rows, static_cast<int64_t>(k));
}

}  // namespace onnxscope::ref
