// Helpers shared by the reference's ai.onnx.ml kernels: numeric inputs read
// as double rows, post transforms, class labels, SVM kernels and tree
// ensembles.
#pragma once

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnxscope/kernel.h"
#include "reference/kernel_util.h"

namespace onnxscope::ref {

// Rows of a numeric input: a 1-D [C] input is one row, a 2-D input is [N, C].
struct MlRows {
  int64_t rows = 0, cols = 0;
};

// float, double, int64 or int32: the numeric inputs of the classic ml operators.
inline bool ml_numeric_input(DataType t) {
  return t == DataType::Float || t == DataType::Double || t == DataType::Int64 || t == DataType::Int32;
}

// The elements of such an input as double; fails for any other type.
inline std::vector<double> ml_input_values(const KernelContext& ctx, const Tensor& x) {
  if (!ml_numeric_input(x.dtype()))
    ctx.fail("input must be float, double, int64 or int32, got " + std::string(dtype_name(x.dtype())));
  return real_values(x);
}

// A 1-D [C] input is one row; a 2-D input is [N, C]; other ranks fail.
inline MlRows ml_rows(const KernelContext& ctx, const Tensor& x) {
  if (x.rank() == 1) return {1, x.shape()[0]};
  if (x.rank() == 2) return {x.shape()[0], x.shape()[1]};
  ctx.fail("input must be 1-D [C] or 2-D [N, C], got " + shape_to_string(x.shape()));
}

// A string output of empty strings, its element count bounded like any other output.
inline Tensor& allocate_strings(KernelContext& ctx, size_t i, Shape s) {
  const auto count = checked_element_count(s);
  if (!count || *count > ctx.max_tensor_bytes() / sizeof(std::string))
    ctx.fail("string output of shape " + shape_to_string(s) + " is too large");
  const uint64_t n = *count;
  ctx.set_output(i, Tensor::from_strings(std::move(s), std::vector<std::string>(n)));
  return ctx.output(i).tensor();
}

// --- post transforms ----------------------------------------------------------------

enum class Post { None, Logistic, Softmax, SoftmaxZero, Probit };

inline Post post_transform(const KernelContext& ctx) {
  const std::string s = ctx.attr_string("post_transform", "NONE");
  if (s == "NONE") return Post::None;
  if (s == "LOGISTIC") return Post::Logistic;
  if (s == "SOFTMAX") return Post::Softmax;
  if (s == "SOFTMAX_ZERO") return Post::SoftmaxZero;
  if (s == "PROBIT") return Post::Probit;
  ctx.fail("post_transform must be NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO or PROBIT, got '" + s + "'");
}

inline double logistic(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// Inverse error function: a closed-form start refined by Newton steps on std::erf.
inline double erf_inverse(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == -1.0) return -std::numeric_limits<double>::infinity();
  if (y == 1.0) return std::numeric_limits<double>::infinity();
  const double w = -std::log((1.0 - y) * (1.0 + y));
  double x = w < 5.0 ? y * (1.0 + 0.3 * w) * 0.886 : y * std::sqrt(w) * 0.8;
  for (int k = 0; k < 60; ++k) {
    const double step = (std::erf(x) - y) / (2.0 / std::sqrt(3.14159265358979323846) * std::exp(-x * x));
    x -= step;
    if (std::abs(step) <= 1e-16 * std::max(1.0, std::abs(x))) break;
  }
  return x;
}

// The probit function (inverse CDF of the standard normal), exact; onnxruntime
// and onnx's Python reference use an approximation of erfinv good to ~1e-3.
inline double probit(double p) { return std::sqrt(2.0) * erf_inverse(2.0 * p - 1.0); }

// Applies the transform to one row of scores in place.
inline void apply_post(Post post, double* v, size_t n) {
  switch (post) {
    case Post::None: return;
    case Post::Logistic:
      for (size_t i = 0; i < n; ++i) v[i] = logistic(v[i]);
      return;
    case Post::Probit:
      for (size_t i = 0; i < n; ++i) v[i] = probit(v[i]);
      return;
    case Post::Softmax: {
      if (n == 0) return;
      const double top = *std::max_element(v, v + n);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) sum += v[i] = std::exp(v[i] - top);
      for (size_t i = 0; i < n; ++i) v[i] /= sum;
      return;
    }
    case Post::SoftmaxZero: {
      // Softmax over the non-zero scores (|v| > 1e-7); the zero ones stay (about) zero.
      // An all-zero row gives 0.5 everywhere, as in onnx's Python reference.
      if (n == 0) return;
      const double top = *std::max_element(v, v + n);
      double sum = 0;
      for (size_t i = 0; i < n; ++i) {
        v[i] = std::abs(v[i]) > 1e-7 ? std::exp(v[i] - top) : v[i] * std::exp(-top);
        sum += v[i];
      }
      for (size_t i = 0; i < n; ++i) v[i] = sum == 0 ? 0.5 : v[i] / sum;
      return;
    }
  }
}

// Index of the largest value once rounded to float, as the scores are output
// (the first of equal ones, so ties are decided as in float implementations;
// NaN never wins).
inline size_t arg_max(const double* v, size_t n) {
  size_t best = 0;
  float top = static_cast<float>(v[0]);
  for (size_t i = 1; i < n; ++i) {
    const float x = static_cast<float>(v[i]);
    if (x > top || (std::isnan(top) && !std::isnan(x))) best = i, top = x;
  }
  return best;
}

// Class labels of a classifier: int64 or string, exactly one of the two attributes.
struct Labels {
  bool strings = false;
  std::vector<int64_t> ints;
  std::vector<std::string> strs;
  size_t size() const { return strings ? strs.size() : ints.size(); }
};

inline Labels class_labels(const KernelContext& ctx, const char* ints_name, const char* strings_name) {
  Labels l;
  const bool has_i = ctx.has_attr(ints_name), has_s = ctx.has_attr(strings_name);
  if (has_i == has_s) ctx.fail(std::string("exactly one of ") + ints_name + " and " + strings_name + " must be given");
  l.strings = has_s;
  if (has_s) l.strs = ctx.attr_strings(strings_name);
  else l.ints = ctx.attr_ints(ints_name);
  if (l.size() == 0) ctx.fail("the class labels are empty");
  return l;
}

// Writes the label outputs (Y: [N]) and the scores (Z: [N, K], float).
inline void write_classifier_outputs(KernelContext& ctx, const Labels& labels, const std::vector<size_t>& picked,
                              const std::vector<double>& scores, int64_t rows, int64_t k) {
  if (labels.strings) {
    std::vector<std::string> y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) y[r] = labels.strs[picked[r]];
    ctx.set_output(0, Tensor::from_strings({rows}, std::move(y)));
  } else {
    Tensor& y = ctx.allocate_output(0, DataType::Int64, {rows});
    for (int64_t r = 0; r < rows; ++r) store<int64_t>(y, r, labels.ints[picked[r]]);
  }
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) {
    Tensor& z = ctx.allocate_output(1, DataType::Float, {rows, k});
    for (size_t i = 0; i < scores.size(); ++i) store<float>(z, i, static_cast<float>(scores[i]));
  }
}

// --- SVM kernels ------------------------------------------------------------------------------

enum class SvmKernel { Linear, Poly, Rbf, Sigmoid };

struct SvmParams {
  SvmKernel kernel = SvmKernel::Linear;
  double gamma = 0, coef0 = 0;
  int64_t degree = 0;
};

inline SvmParams svm_params(const KernelContext& ctx) {
  SvmParams p;
  const std::string k = ctx.attr_string("kernel_type", "LINEAR");
  if (k == "LINEAR") p.kernel = SvmKernel::Linear;
  else if (k == "POLY") p.kernel = SvmKernel::Poly;
  else if (k == "RBF") p.kernel = SvmKernel::Rbf;
  else if (k == "SIGMOID") p.kernel = SvmKernel::Sigmoid;
  else ctx.fail("kernel_type must be LINEAR, POLY, RBF or SIGMOID, got '" + k + "'");
  const std::vector<float> kp = ctx.attr_floats("kernel_params");
  if (!kp.empty()) {
    if (kp.size() != 3) ctx.fail("kernel_params must hold gamma, coef0 and degree");
    p.gamma = kp[0];
    p.coef0 = kp[1];
    // A whole number of modest size (the model's own float; -inf or 1e30 would be an
    // undefined conversion, found by fuzz_model).
    if (!(std::abs(kp[2]) <= 1e6f)) ctx.fail("kernel_params' degree " + std::to_string(kp[2]) + " is not a usable exponent");
    p.degree = static_cast<int64_t>(kp[2]);
  }
  return p;
}

inline double svm_kernel(const SvmParams& p, SvmKernel kernel, const double* a, const float* b, int64_t n) {
  double s = 0;
  if (kernel == SvmKernel::Rbf) {
    for (int64_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return std::exp(-p.gamma * s);
  }
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  switch (kernel) {
    case SvmKernel::Poly: return std::pow(p.gamma * s + p.coef0, static_cast<double>(p.degree));
    case SvmKernel::Sigmoid: return std::tanh(p.gamma * s + p.coef0);
    default: return s;
  }
}

// --- tree ensembles ---------------------------------------------------------------------------------

enum class Mode : uint8_t { Leq, Lt, Gte, Gt, Eq, Neq, Leaf };

// The nodes of a TreeEnsembleClassifier / TreeEnsembleRegressor, with each
// branch resolved to a node index and each tree to its root.
struct Forest {
  std::vector<int64_t> tree_ids, node_ids, features;
  std::vector<Mode> modes;
  std::vector<double> values;
  std::vector<size_t> true_next, false_next;
  std::vector<bool> missing_true;
  std::vector<size_t> roots;  // one per tree, in ascending tree id
  std::map<std::pair<int64_t, int64_t>, size_t> index;  // (tree id, node id) -> node
};

// The values of a float list attribute or (opset >= 3) of its *_as_tensor form.
inline std::vector<double> float_or_tensor(const KernelContext& ctx, const std::string& name) {
  const Tensor* t = ctx.opset_version() >= 3 ? ctx.attr_tensor(name + "_as_tensor") : nullptr;
  if (t != nullptr) {
    if (ctx.has_attr(name)) ctx.fail("only one of " + name + " and " + name + "_as_tensor may be given");
    if (t->dtype() != DataType::Float && t->dtype() != DataType::Double) ctx.fail(name + "_as_tensor must be float or double");
    return real_values(*t);
  }
  const std::vector<float> v = ctx.attr_floats(name);
  return {v.begin(), v.end()};
}

inline Forest read_forest(const KernelContext& ctx, int64_t n_features) {
  Forest fo;
  fo.tree_ids = ctx.attr_ints("nodes_treeids");
  fo.node_ids = ctx.attr_ints("nodes_nodeids");
  fo.features = ctx.attr_ints("nodes_featureids");
  fo.values = float_or_tensor(ctx, "nodes_values");
  const std::vector<int64_t> t_ids = ctx.attr_ints("nodes_truenodeids");
  const std::vector<int64_t> f_ids = ctx.attr_ints("nodes_falsenodeids");
  const std::vector<int64_t> missing = ctx.attr_ints("nodes_missing_value_tracks_true");
  const std::vector<std::string> modes = ctx.attr_strings("nodes_modes");
  const size_t n = fo.tree_ids.size();
  if (n == 0) ctx.fail("the ensemble has no nodes");
  for (size_t len : {fo.node_ids.size(), fo.features.size(), t_ids.size(), f_ids.size(), modes.size()})
    if (len != n) ctx.fail("nodes_treeids, nodes_nodeids, nodes_featureids, nodes_modes, nodes_truenodeids and nodes_falsenodeids must have the same length");
  if (!fo.values.empty() && fo.values.size() != n) ctx.fail("nodes_values must have one value per node");
  if (fo.values.empty()) fo.values.assign(n, 0.0);
  if (!missing.empty() && missing.size() != n) ctx.fail("nodes_missing_value_tracks_true must have one value per node");

  fo.modes.resize(n);
  fo.missing_true.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const std::string& m = modes[i];
    if (m == "BRANCH_LEQ") fo.modes[i] = Mode::Leq;
    else if (m == "BRANCH_LT") fo.modes[i] = Mode::Lt;
    else if (m == "BRANCH_GTE") fo.modes[i] = Mode::Gte;
    else if (m == "BRANCH_GT") fo.modes[i] = Mode::Gt;
    else if (m == "BRANCH_EQ") fo.modes[i] = Mode::Eq;
    else if (m == "BRANCH_NEQ") fo.modes[i] = Mode::Neq;
    else if (m == "LEAF") fo.modes[i] = Mode::Leaf;
    else ctx.fail("node " + std::to_string(i) + " has an unknown mode '" + m + "'");
    if (!missing.empty()) fo.missing_true[i] = missing[i] != 0;
    if (!fo.index.emplace(std::make_pair(fo.tree_ids[i], fo.node_ids[i]), i).second)
      ctx.fail("node id " + std::to_string(fo.node_ids[i]) + " appears twice in tree " + std::to_string(fo.tree_ids[i]));
  }
  fo.true_next.assign(n, 0);
  fo.false_next.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (fo.modes[i] == Mode::Leaf) continue;
    if (fo.features[i] < 0 || fo.features[i] >= n_features)
      ctx.fail("node " + std::to_string(i) + " tests feature " + std::to_string(fo.features[i]) + " of " + std::to_string(n_features));
    const auto t = fo.index.find({fo.tree_ids[i], t_ids[i]});
    const auto f = fo.index.find({fo.tree_ids[i], f_ids[i]});
    if (t == fo.index.end() || f == fo.index.end())
      ctx.fail("node " + std::to_string(i) + " of tree " + std::to_string(fo.tree_ids[i]) + " branches to a missing node");
    fo.true_next[i] = t->second;
    fo.false_next[i] = f->second;
  }
  // The root of a tree is its first node in attribute order.
  std::map<int64_t, size_t> first;
  for (size_t i = 0; i < n; ++i) first.emplace(fo.tree_ids[i], i);
  for (const auto& [tree, i] : first) fo.roots.push_back(i);
  return fo;
}

// The leaf a row reaches from `root`. A NaN feature takes the true branch when
// the node's nodes_missing_value_tracks_true is set and the false branch
// otherwise (the spec; onnxruntime compares NaN, so BRANCH_NEQ goes true).
inline size_t find_leaf(const KernelContext& ctx, const Forest& fo, size_t root, const double* row) {
  size_t node = root;
  for (size_t steps = 0; fo.modes[node] != Mode::Leaf; ++steps) {
    if (steps > fo.modes.size()) ctx.fail("tree " + std::to_string(fo.tree_ids[root]) + " has a cycle");
    const double v = row[fo.features[node]];
    const double s = fo.values[node];
    bool go_true = false;
    if (std::isnan(v)) {
      go_true = fo.missing_true[node];
    } else {
      switch (fo.modes[node]) {
        case Mode::Leq: go_true = v <= s; break;
        case Mode::Lt: go_true = v < s; break;
        case Mode::Gte: go_true = v >= s; break;
        case Mode::Gt: go_true = v > s; break;
        case Mode::Eq: go_true = v == s; break;
        case Mode::Neq: go_true = v != s; break;
        case Mode::Leaf: break;
      }
    }
    node = go_true ? fo.true_next[node] : fo.false_next[node];
  }
  return node;
}

// The weights attached to leaves: for each node, the (target, weight) pairs.
inline std::vector<std::vector<std::pair<size_t, double>>> leaf_weights(const KernelContext& ctx, const Forest& fo,
                                                                 const char* prefix, size_t n_targets) {
  const std::string p = prefix;
  const std::vector<int64_t> trees = ctx.attr_ints(p + "_treeids");
  const std::vector<int64_t> nodes = ctx.attr_ints(p + "_nodeids");
  const std::vector<int64_t> ids = ctx.attr_ints(p + "_ids");
  const std::vector<double> w = float_or_tensor(ctx, p + "_weights");
  const size_t n = trees.size();
  if (nodes.size() != n || ids.size() != n || w.size() != n)
    ctx.fail(p + "_treeids, " + p + "_nodeids, " + p + "_ids and " + p + "_weights must have the same length");
  std::vector<std::vector<std::pair<size_t, double>>> at(fo.modes.size());
  for (size_t i = 0; i < n; ++i) {
    const auto it = fo.index.find({trees[i], nodes[i]});
    if (it == fo.index.end())
      ctx.fail(p + " weight " + std::to_string(i) + " names node " + std::to_string(nodes[i]) + " of tree " + std::to_string(trees[i]) + ", which does not exist");
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= n_targets)
      ctx.fail(p + "_ids[" + std::to_string(i) + "] = " + std::to_string(ids[i]) + " is out of range [0, " + std::to_string(n_targets) + ")");
    at[it->second].emplace_back(static_cast<size_t>(ids[i]), w[i]);
  }
  return at;
}

inline std::vector<double> tree_input(const KernelContext& ctx, const Tensor& x, MlRows& rc) {
  std::vector<double> xs = ml_input_values(ctx, x);
  rc = ml_rows(ctx, x);
  return xs;
}

// Copies element `from` of `src` into element `to` of `dst` (same type; strings too).
inline void copy_element(const Tensor& src, uint64_t from, Tensor& dst, uint64_t to, uint64_t elem_bytes, StringBudget& budget) {
  if (src.is_string()) {
    budget.add(src.strings()[from]);
    dst.mutable_strings()[to] = src.strings()[from];
  }
  else std::memcpy(dst.mutable_raw() + to * elem_bytes, src.raw() + from * elem_bytes, elem_bytes);
}

inline uint64_t element_bytes(DataType t) { return t == DataType::String ? 0 : storage_bytes(t, 1).value_or(0); }

// An empty output tensor of type t and shape s (strings: that many empty strings).
inline Tensor& allocate_any(KernelContext& ctx, size_t i, DataType t, Shape s) {
  if (t != DataType::String) return ctx.allocate_output(i, t, std::move(s));
  const uint64_t n = checked_element_count(s).value_or(0);
  ctx.set_output(i, Tensor::from_strings(std::move(s), std::vector<std::string>(n)));
  return ctx.output(i).tensor();
}

}  // namespace onnxscope::ref
