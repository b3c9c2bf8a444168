// Reference kernel: ai.onnx.ml TreeEnsembleRegressor (opsets 1, 3 and 5).
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

// Sums (or averages, min, max) the weights of the leaves every tree reaches,
// per target; adds base_values after aggregating, then the post transform.
// A target no leaf reached aggregates to 0 under MIN / MAX too (onnxruntime;
// onnx's Python reference leaves the float type's max / lowest there).
void TreeEnsembleRegressor(KernelContext& ctx) {
  MlRows rc;
  const std::vector<double> xs = tree_input(ctx, ctx.input(0), rc);
  const int64_t n_targets = ctx.attr_int("n_targets", 1);
  if (n_targets < 1) ctx.fail("n_targets must be >= 1");
  const std::string agg = ctx.attr_string("aggregate_function", "SUM");
  if (agg != "SUM" && agg != "AVERAGE" && agg != "MIN" && agg != "MAX")
    ctx.fail("aggregate_function must be SUM, AVERAGE, MIN or MAX, got '" + agg + "'");
  const Post post = post_transform(ctx);
  const Forest fo = read_forest(ctx, rc.cols);
  const auto weights = leaf_weights(ctx, fo, "target", static_cast<size_t>(n_targets));
  const std::vector<double> base = float_or_tensor(ctx, "base_values");
  if (!base.empty() && base.size() != static_cast<size_t>(n_targets)) ctx.fail("base_values must have one value per target");

  const auto t = static_cast<size_t>(n_targets);
  check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(n_targets)}, "the output");
  std::vector<double> out(static_cast<size_t>(rc.rows) * t);
  std::vector<bool> hit(t);
  for (int64_t r = 0; r < rc.rows; ++r) {
    const double* row = xs.data() + r * rc.cols;
    double* o = out.data() + r * t;
    std::fill(hit.begin(), hit.end(), false);
    for (size_t root : fo.roots) {
      for (const auto& [target, w] : weights[find_leaf(ctx, fo, root, row)]) {
        if (agg == "MIN") o[target] = hit[target] ? std::min(o[target], w) : w;
        else if (agg == "MAX") o[target] = hit[target] ? std::max(o[target], w) : w;
        else o[target] += w;
        hit[target] = true;
      }
    }
    for (size_t k = 0; k < t; ++k) {
      if (agg == "AVERAGE") o[k] /= static_cast<double>(fo.roots.size());
      if (!base.empty()) o[k] += base[k];
    }
    apply_post(post, o, t);
  }
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rc.rows, n_targets});
  for (size_t i = 0; i < out.size(); ++i) store<float>(y, i, static_cast<float>(out[i]));
}

}  // namespace onnxscope::ref
