// Reference kernel: ai.onnx.ml TreeEnsembleClassifier (opsets 1, 3 and 5).
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

// Per class, base_values plus the sum of the class weights of the leaves every
// tree reaches. Binary case (two labels and no weight for class 1): the
// score s of class 0 becomes [1 - s, s] for NONE and PROBIT and [-s, s]
// otherwise, then the transform (onnx's Python reference). The label is the
// class of the largest transformed score (first on ties).
void TreeEnsembleClassifier(KernelContext& ctx) {
  MlRows rc;
  const std::vector<double> xs = tree_input(ctx, ctx.input(0), rc);
  const Labels labels = class_labels(ctx, "classlabels_int64s", "classlabels_strings");
  const Post post = post_transform(ctx);
  const size_t classes = labels.size();
  const Forest fo = read_forest(ctx, rc.cols);
  const auto weights = leaf_weights(ctx, fo, "class", classes);
  const std::vector<double> base = float_or_tensor(ctx, "base_values");
  if (!base.empty() && base.size() != classes) ctx.fail("base_values must have one value per class");

  bool class1_weighted = false;
  for (const auto& at : weights)
    for (const auto& [c, w] : at) class1_weighted |= c == 1;
  const bool binary = classes == 2 && !class1_weighted;
  if (classes == 1) ctx.fail("a classifier needs at least 2 class labels");

  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(classes)}, "the scores");
  std::vector<double> scores(static_cast<size_t>(rc.rows) * classes);
  std::vector<size_t> picked(static_cast<size_t>(rc.rows));
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    double* o = scores.data() + r * classes;
    for (size_t c = 0; c < classes; ++c) o[c] = base.empty() ? 0.0 : base[c];
    for (size_t root : fo.roots)
      for (const auto& [c, w] : weights[find_leaf(ctx, fo, root, row)]) o[c] += w;
    if (binary) {
      const double s = o[0];
      o[1] = s;
      o[0] = post == Post::None || post == Post::Probit ? 1.0 - s : -s;
    }
    apply_post(post, o, classes);
    picked[r] = arg_max(o, classes);
  }
  write_classifier_outputs(ctx, labels, picked, scores, rc.rows, static_cast<int64_t>(classes));
}

}  // namespace onnxscope::ref
