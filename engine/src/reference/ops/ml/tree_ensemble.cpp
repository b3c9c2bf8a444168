// Reference kernel: ai.onnx.ml TreeEnsemble (opset 5).
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

namespace {

enum class NodeMode : uint8_t { LEQ = 0, LT = 1, GTE = 2, GT = 3, EQ = 4, NEQ = 5, MEMBER = 6 };

std::vector<double> tensor_attr_values(KernelContext& ctx, const char* name, bool required) {
  const Tensor* t = ctx.attr_tensor(name);
  if (t == nullptr) {
    if (required) ctx.fail(std::string("missing required attribute '") + name + "'");
    return {};
  }
  if (t->is_string()) ctx.fail(std::string("attribute '") + name + "' must be numeric");
  return real_values(*t);
}

}  // namespace

void TreeEnsemble(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float && x.dtype() != DataType::Double && x.dtype() != DataType::Float16)
    ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
  if (x.rank() != 2) ctx.fail("input must be 2-D [N, F], got " + shape_to_string(x.shape()));
  const int64_t rows = x.shape()[0], features = x.shape()[1];

  const std::vector<int64_t> feature_ids = ctx.attr_ints("nodes_featureids");
  const std::vector<int64_t> true_ids = ctx.attr_ints("nodes_truenodeids");
  const std::vector<int64_t> false_ids = ctx.attr_ints("nodes_falsenodeids");
  const std::vector<int64_t> true_leafs = ctx.attr_ints("nodes_trueleafs");
  const std::vector<int64_t> false_leafs = ctx.attr_ints("nodes_falseleafs");
  const std::vector<int64_t> tracks_true = ctx.attr_ints("nodes_missing_value_tracks_true");
  const std::vector<int64_t> leaf_targets = ctx.attr_ints("leaf_targetids");
  const std::vector<int64_t> roots = ctx.attr_ints("tree_roots");
  const std::vector<double> splits = tensor_attr_values(ctx, "nodes_splits", true);
  const std::vector<double> modes_d = tensor_attr_values(ctx, "nodes_modes", true);
  const std::vector<double> leaf_weights = tensor_attr_values(ctx, "leaf_weights", true);
  const std::vector<double> members = tensor_attr_values(ctx, "membership_values", false);
  const int64_t n_targets = ctx.attr_int("n_targets", 0);
  const int64_t aggregate = ctx.attr_int("aggregate_function", 1);
  const int64_t post = ctx.attr_int("post_transform", 0);

  const size_t n_nodes = feature_ids.size();
  for (size_t len : {true_ids.size(), false_ids.size(), true_leafs.size(), false_leafs.size(), splits.size(), modes_d.size()})
    if (len != n_nodes) ctx.fail("all nodes_* attributes must have the same length");
  if (!tracks_true.empty() && tracks_true.size() != n_nodes) ctx.fail("nodes_missing_value_tracks_true must match the nodes' count");
  if (leaf_targets.size() != leaf_weights.size()) ctx.fail("leaf_targetids and leaf_weights must have the same length");
  if (n_targets < 1) ctx.fail("n_targets must be >= 1");
  if (aggregate < 0 || aggregate > 3) ctx.fail("aggregate_function must be 0..3");
  if (post < 0 || post > 4) ctx.fail("post_transform must be 0..4");
  for (int64_t t : leaf_targets)
    if (t < 0 || t >= n_targets) ctx.fail("leaf_targetids must lie in [0, n_targets)");

  std::vector<NodeMode> modes(n_nodes);
  for (size_t i = 0; i < n_nodes; ++i) {
    if (!(modes_d[i] >= 0 && modes_d[i] <= 6)) ctx.fail("nodes_modes must lie in 0..6");
    modes[i] = static_cast<NodeMode>(static_cast<int>(modes_d[i]));
    if (feature_ids[i] < 0 || feature_ids[i] >= features) ctx.fail("nodes_featureids must lie in [0, F)");
    const bool leaf_t = true_leafs[i] != 0, leaf_f = false_leafs[i] != 0;
    const auto bound_t = static_cast<int64_t>(leaf_t ? leaf_weights.size() : n_nodes);
    const auto bound_f = static_cast<int64_t>(leaf_f ? leaf_weights.size() : n_nodes);
    if (true_ids[i] < 0 || true_ids[i] >= bound_t || false_ids[i] < 0 || false_ids[i] >= bound_f)
      ctx.fail("node " + std::to_string(i) + " branches to an index out of range");
  }
  for (int64_t r : roots)
    if (r < 0 || r >= static_cast<int64_t>(n_nodes)) ctx.fail("tree_roots must index nodes");

  // Set members of each BRANCH_MEMBER node, in node order, NaN-delimited.
  std::vector<std::vector<double>> member_sets(n_nodes);
  size_t m = 0;
  for (size_t i = 0; i < n_nodes; ++i) {
    if (modes[i] != NodeMode::MEMBER) continue;
    if (m >= members.size()) ctx.fail("membership_values has fewer sets than there are BRANCH_MEMBER nodes");
    while (m < members.size() && !std::isnan(members[m])) member_sets[i].push_back(members[m++]);
    ++m;  // the NaN delimiter
  }

  std::vector<double> xs = real_values(x);
  // Accumulate in double; the result is rounded to the input type.
  check_work_buffer(ctx, {static_cast<int64_t>(rows), static_cast<int64_t>(n_targets)}, "the output");
  std::vector<double> result(static_cast<size_t>(rows * n_targets));
  std::vector<bool> hit(result.size(), false);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = xs.data() + r * features;
    double* out = result.data() + r * n_targets;
    for (int64_t root : roots) {
      auto node = static_cast<size_t>(root);
      size_t leaf = 0;
      for (size_t steps = 0;; ++steps) {
        if (steps > n_nodes) ctx.fail("tree starting at node " + std::to_string(root) + " has a cycle");
        const double v = row[feature_ids[node]];
        const double s = splits[node];
        bool go_true = false;
        switch (modes[node]) {
          case NodeMode::LEQ: go_true = v <= s; break;
          case NodeMode::LT: go_true = v < s; break;
          case NodeMode::GTE: go_true = v >= s; break;
          case NodeMode::GT: go_true = v > s; break;
          case NodeMode::EQ: go_true = v == s; break;
          case NodeMode::NEQ: go_true = v != s; break;
          case NodeMode::MEMBER:
            go_true = std::find(member_sets[node].begin(), member_sets[node].end(), v) != member_sets[node].end();
            break;
        }
        if (std::isnan(v) && !tracks_true.empty() && tracks_true[node] != 0) go_true = true;
        const int64_t next = go_true ? true_ids[node] : false_ids[node];
        if ((go_true ? true_leafs[node] : false_leafs[node]) != 0) {
          leaf = static_cast<size_t>(next);
          break;
        }
        node = static_cast<size_t>(next);
      }
      const auto t = static_cast<size_t>(leaf_targets[leaf]);
      const double w = leaf_weights[leaf];
      const size_t oi = static_cast<size_t>(r * n_targets) + t;
      switch (aggregate) {
        case 0:  // AVERAGE
        case 1:  // SUM
          out[t] += w;
          break;
        case 2: out[t] = hit[oi] ? std::min(out[t], w) : w; break;  // MIN
        default: out[t] = hit[oi] ? std::max(out[t], w) : w; break;  // MAX
      }
      hit[oi] = true;
    }
    if (aggregate == 0 && !roots.empty())
      for (int64_t t = 0; t < n_targets; ++t) out[t] /= static_cast<double>(roots.size());
    // A target that no leaf reached stays 0 under MIN / MAX too (as with SUM,
    // and as onnxruntime does; onnx's Python reference leaves the type's max/lowest).
    // Post transform over the targets of the row.
    if (post == 1 || post == 3) {  // SOFTMAX, SOFTMAX_ZERO (zeros stay zero)
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t t = 0; t < n_targets; ++t)
        if (post == 1 || out[t] != 0.0) top = std::max(top, out[t]);
      double sum = 0;
      for (int64_t t = 0; t < n_targets; ++t) {
        if (post == 3 && out[t] == 0.0) continue;
        out[t] = std::exp(out[t] - top);
        sum += out[t];
      }
      for (int64_t t = 0; t < n_targets; ++t)
        if (!(post == 3 && out[t] == 0.0)) out[t] /= sum;
    } else if (post == 2) {  // LOGISTIC
      for (int64_t t = 0; t < n_targets; ++t) out[t] = 1.0 / (1.0 + std::exp(-out[t]));
    } else if (post == 4) {  // PROBIT
      for (int64_t t = 0; t < n_targets; ++t) out[t] = std::sqrt(2.0) * erf_inverse(2.0 * out[t] - 1.0);
    }
  }

  Tensor& y = ctx.allocate_output(0, x.dtype(), {rows, n_targets});
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.element_count(); ++i) put<S>(y, i, static_cast<compute_t<S>>(result[i]));
  });
}

}  // namespace onnxscope::ref
