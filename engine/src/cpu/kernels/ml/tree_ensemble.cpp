// ai.onnx.ml TreeEnsembleClassifier and TreeEnsembleRegressor (opsets 1 and
// 3: what scikit-learn's, XGBoost's and LightGBM's converters write) with
// the forest compiled once per node, rows split across the threads.
//
// The reference reads the node attributes into maps and vectors on every
// run (an XGBoost classifier of 100 small trees spent 0.16 ms of a one-row
// run there, onnxruntime 0.01 ms). Here the attributes are read once, by the
// reference's own reader (reference/ops/ml/common.h: the same checks and
// messages), into one 24-byte record per node with the branches resolved to
// indices and each leaf's weights contiguous. A forest the reader refuses,
// or one with a cycle, is left to the reference, which names the problem.
//
// The arithmetic is the reference's, in the same order: per row, the trees
// in ascending id, each leaf's weights in attribute order, summed in double
// (or their minimum, maximum, average), base values, the post transform;
// rows are independent, so any thread count gives the same bits.
#include <algorithm>
#include <climits>  // INT_MAX
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"

namespace onnxscope::cpu {
namespace {

using ref::Mode;

struct TreeNode {
  double value = 0;
  uint32_t next_true = 0, next_false = 0;
  int32_t feature = 0;
  Mode mode = Mode::Leaf;
  bool missing_true = false;
};

enum class Aggregate { Sum, Average, Min, Max };

struct Compiled {
  int64_t cols = -1;  // the feature count it was checked against
  bool ok = false;
  std::vector<TreeNode> nodes;
  std::vector<uint32_t> roots;
  std::vector<uint32_t> leaf_begin;  // node i's weights: [leaf_begin[i], leaf_begin[i + 1])
  std::vector<uint32_t> leaf_target;
  std::vector<double> leaf_weight;
  size_t targets = 0;  // classes or regression targets
  std::vector<double> base;
  ref::Post post = ref::Post::None;
  // Classifier
  ref::Labels labels;
  bool binary = false;
  // Regressor
  Aggregate aggregate = Aggregate::Sum;
};

// Every node reachable from a root, once, with no way back to itself
// (white / grey / black marks, iteratively: a deep tree must not overflow the stack).
bool acyclic(const std::vector<TreeNode>& nodes, const std::vector<uint32_t>& roots) {
  std::vector<uint8_t> mark(nodes.size(), 0);
  std::vector<std::pair<uint32_t, uint8_t>> stack;  // node, children visited
  for (uint32_t root : roots) {
    if (mark[root] == 2) continue;
    stack.push_back({root, 0});
    mark[root] = 1;
    while (!stack.empty()) {
      auto& [n, seen] = stack.back();
      const TreeNode& t = nodes[n];
      if (t.mode == Mode::Leaf || seen == 2) {
        mark[n] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t next = seen++ == 0 ? t.next_true : t.next_false;
      if (mark[next] == 1) return false;
      if (mark[next] == 0) {
        mark[next] = 1;
        stack.push_back({next, 0});
      }
    }
  }
  return true;
}

// The node's forest and parameters, through the reference's readers (which
// fail with the reference's messages on a malformed model).
void compile(const KernelContext& ctx, int64_t cols, bool classifier, Compiled& c) {
  c = Compiled{};
  c.cols = cols;
  const ref::Forest fo = ref::read_forest(ctx, cols);
  if (fo.modes.size() >= UINT32_MAX) return;
  if (classifier) {
    c.labels = ref::class_labels(ctx, "classlabels_int64s", "classlabels_strings");
    c.targets = c.labels.size();
    if (c.targets < 2) return;
  } else {
    const int64_t n_targets = ctx.attr_int("n_targets", 1);
    if (n_targets < 1 || n_targets > INT32_MAX) return;
    c.targets = static_cast<size_t>(n_targets);
    const std::string agg = ctx.attr_string("aggregate_function", "SUM");
    if (agg == "SUM") c.aggregate = Aggregate::Sum;
    else if (agg == "AVERAGE") c.aggregate = Aggregate::Average;
    else if (agg == "MIN") c.aggregate = Aggregate::Min;
    else if (agg == "MAX") c.aggregate = Aggregate::Max;
    else return;
  }
  c.post = ref::post_transform(ctx);
  const auto weights = ref::leaf_weights(ctx, fo, classifier ? "class" : "target", c.targets);
  c.base = ref::float_or_tensor(ctx, "base_values");
  if (!c.base.empty() && c.base.size() != c.targets) return;
  if (classifier) {
    bool class1_weighted = false;
    for (const auto& at : weights)
      for (const auto& [k, w] : at) class1_weighted |= k == 1;
    c.binary = c.targets == 2 && !class1_weighted;
  }
  const size_t n = fo.modes.size();
  c.nodes.resize(n);
  c.leaf_begin.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    TreeNode& t = c.nodes[i];
    t.value = fo.values[i];
    t.mode = fo.modes[i];
    t.missing_true = fo.missing_true[i];
    t.feature = static_cast<int32_t>(t.mode == Mode::Leaf ? 0 : fo.features[i]);  // checked < cols by the reader
    t.next_true = static_cast<uint32_t>(fo.true_next[i]);
    t.next_false = static_cast<uint32_t>(fo.false_next[i]);
    c.leaf_begin[i] = static_cast<uint32_t>(c.leaf_target.size());
    for (const auto& [k, w] : weights[i]) {
      c.leaf_target.push_back(static_cast<uint32_t>(k));
      c.leaf_weight.push_back(w);
    }
  }
  c.leaf_begin[n] = static_cast<uint32_t>(c.leaf_target.size());
  for (size_t r : fo.roots) c.roots.push_back(static_cast<uint32_t>(r));
  c.ok = acyclic(c.nodes, c.roots);
}

// The leaf a row reaches from `root` (reference: find_leaf; a NaN feature
// follows nodes_missing_value_tracks_true).
inline uint32_t find_leaf(const TreeNode* nodes, uint32_t node, const double* row) {
  for (;;) {
    const TreeNode& t = nodes[node];
    bool go_true = false;
    switch (t.mode) {
      case Mode::Leaf: return node;
      case Mode::Leq: go_true = row[t.feature] <= t.value; break;
      case Mode::Lt: go_true = row[t.feature] < t.value; break;
      case Mode::Gte: go_true = row[t.feature] >= t.value; break;
      case Mode::Gt: go_true = row[t.feature] > t.value; break;
      case Mode::Eq: go_true = row[t.feature] == t.value; break;
      case Mode::Neq: go_true = row[t.feature] != t.value; break;
    }
    if (row[t.feature] != row[t.feature]) go_true = t.missing_true;
    node = go_true ? t.next_true : t.next_false;
  }
}

const Compiled* compiled_of(const KernelContext& ctx, bool classifier, Compiled& local) {
  const Value* xv = ctx.input_count() == 1 ? ctx.input_value(0) : nullptr;
  if (!xv || !xv->is_tensor() || !ref::ml_numeric_input(xv->tensor().dtype())) return nullptr;
  const Tensor& x = xv->tensor();
  if (x.rank() != 1 && x.rank() != 2) return nullptr;
  const int64_t cols = x.shape().back();
  Compiled* c = onednn::node_state<Compiled>(ctx);
  if (!c) c = &local;
  if (c->cols != cols) {
    const bool built = onednn::safely([&] {
      compile(ctx, cols, classifier, *c);
      return c->ok;
    });
    if (!built) c->ok = false;
  }
  return c->ok ? c : nullptr;
}

bool classifier_accepts(const KernelContext& ctx) {
  Compiled local;
  return compiled_of(ctx, true, local) != nullptr;
}

bool regressor_accepts(const KernelContext& ctx) {
  Compiled local;
  return compiled_of(ctx, false, local) != nullptr;
}

// Rows per chunk of the thread pool: about 4096 node visits' worth.
int64_t row_grain(const Compiled& c) {
  return std::max<int64_t>(1, 4096 / static_cast<int64_t>(std::max<size_t>(1, c.roots.size() * 4)));
}

// A run's forest and rows: X's values as double (the reference's reading),
// its row count checked against the per-row results' size.
struct Problem {
  Compiled local;
  const Compiled* c = nullptr;
  ref::MlRows rc;
  std::vector<double> xs;
  Problem(const Problem&) = delete;  // c may point at local
  Problem(KernelContext& ctx, bool classifier, const char* what) {
    c = compiled_of(ctx, classifier, local);
    if (!c) ctx.fail("problem not supported by the CPU tree ensemble");
    xs = ref::tree_input(ctx, ctx.input(0), rc);
    ref::check_work_buffer(ctx, {rc.rows, static_cast<int64_t>(c->targets)}, what);
  }
};

void TreeEnsembleClassifier(KernelContext& ctx) {
  const Problem p(ctx, true, "the scores");
  const Compiled* c = p.c;
  const ref::MlRows& rc = p.rc;
  const std::vector<double>& xs = p.xs;
  const size_t classes = c->targets;
  std::vector<double> scores(static_cast<size_t>(rc.rows) * classes);
  std::vector<size_t> picked(static_cast<size_t>(rc.rows));
  parallel_for(rc.rows, row_grain(*c), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = xs.data() + r * rc.cols;
      double* o = scores.data() + r * static_cast<int64_t>(classes);
      for (size_t k = 0; k < classes; ++k) o[k] = c->base.empty() ? 0.0 : c->base[k];
      for (uint32_t root : c->roots) {
        const uint32_t leaf = find_leaf(c->nodes.data(), root, row);
        for (uint32_t i = c->leaf_begin[leaf]; i < c->leaf_begin[leaf + 1]; ++i) o[c->leaf_target[i]] += c->leaf_weight[i];
      }
      if (c->binary) {
        const double s = o[0];
        o[1] = s;
        o[0] = c->post == ref::Post::None || c->post == ref::Post::Probit ? 1.0 - s : -s;
      }
      ref::apply_post(c->post, o, classes);
      picked[static_cast<size_t>(r)] = ref::arg_max(o, classes);
    }
  });
  ref::write_classifier_outputs(ctx, c->labels, picked, scores, rc.rows, static_cast<int64_t>(classes));
}

void TreeEnsembleRegressor(KernelContext& ctx) {
  const Problem p(ctx, false, "the output");
  const Compiled* c = p.c;
  const ref::MlRows& rc = p.rc;
  const std::vector<double>& xs = p.xs;
  const size_t t = c->targets;
  Tensor& y = ctx.allocate_output(0, DataType::Float, {rc.rows, static_cast<int64_t>(t)});
  float* out = y.mutable_data<float>();
  const bool extreme = c->aggregate == Aggregate::Min || c->aggregate == Aggregate::Max;
  parallel_for(rc.rows, row_grain(*c), [&](int64_t r0, int64_t r1) {
    std::vector<double> o(t);
    std::vector<uint8_t> hit(t);
    for (int64_t r = r0; r < r1; ++r) {
      const double* row = xs.data() + r * rc.cols;
      std::fill(o.begin(), o.end(), 0.0);
      std::fill(hit.begin(), hit.end(), 0);
      for (uint32_t root : c->roots) {
        const uint32_t leaf = find_leaf(c->nodes.data(), root, row);
        for (uint32_t i = c->leaf_begin[leaf]; i < c->leaf_begin[leaf + 1]; ++i) {
          const uint32_t k = c->leaf_target[i];
          const double w = c->leaf_weight[i];
          if (!extreme) o[k] += w;
          else if (!hit[k]) o[k] = w;
          else o[k] = c->aggregate == Aggregate::Min ? std::min(o[k], w) : std::max(o[k], w);
          hit[k] = 1;
        }
      }
      for (size_t k = 0; k < t; ++k) {
        if (c->aggregate == Aggregate::Average) o[k] /= static_cast<double>(c->roots.size());
        if (!c->base.empty()) o[k] += c->base[k];
      }
      ref::apply_post(c->post, o.data(), t);
      for (size_t k = 0; k < t; ++k) out[static_cast<size_t>(r) * t + k] = static_cast<float>(o[k]);
    }
  });
}

}  // namespace

void register_tree_ensemble_kernels(KernelRegistry& r) {
  r.add(KernelDef{"ai.onnx.ml", "TreeEnsembleClassifier", 1, INT_MAX, "cpu-loop", TreeEnsembleClassifier, classifier_accepts});
  r.add(KernelDef{"ai.onnx.ml", "TreeEnsembleRegressor", 1, INT_MAX, "cpu-loop", TreeEnsembleRegressor, regressor_accepts});
}

}  // namespace onnxscope::cpu
