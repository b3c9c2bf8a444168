// ai.onnx.ml operators on the CPU engine's kernels against the reference, bit
// for bit, on seeded random problems (the harness of cpu_ops_harness_test.cpp,
// support/ops_harness.h): TreeEnsembleClassifier and TreeEnsembleRegressor
// (kernels/ml/tree_ensemble.cpp) on random forests.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

// The node attributes of a random forest: trees listed in a shuffled order
// under distinct, non-consecutive ids (the reference sums them in ascending
// id), node ids not consecutive either, every branch mode, thresholds drawn
// from the inputs' few values (so BRANCH_EQ and BRANCH_NEQ both go either
// way), missing values tracked true on some nodes; each leaf carries 1 to 3
// weights on random targets (repeats add up), or only target 0 (`only_zero`:
// the binary classifier's form); `wide`: weights of +-2^54 and small ones.
struct ForestAttrs {
  std::vector<int64_t> tree, node, feature, t_next, f_next, missing;
  std::vector<std::string> mode;
  std::vector<float> value;
  std::vector<int64_t> w_tree, w_node, w_id;
  std::vector<float> w;
};

const std::vector<float> kLevels = {-1.0f, -0.5f, 0.0f, 0.5f, 1.0f};

ForestAttrs random_forest(Rng& rng, int64_t trees, int64_t features, int64_t targets, bool only_zero, bool wide) {
  static const char* kModes[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ"};
  ForestAttrs f;
  std::vector<int64_t> ids(static_cast<size_t>(trees));
  std::iota(ids.begin(), ids.end(), 0);
  for (auto& id : ids) id = id * 3 + 7;
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int64_t tree_id : ids) {
    // Breadth-first: node k's children are appended; ids 5k + 2.
    std::vector<int64_t> depth = {0};
    for (size_t k = 0; k < depth.size(); ++k) {
      const int64_t id = static_cast<int64_t>(k) * 5 + 2;
      f.tree.push_back(tree_id);
      f.node.push_back(id);
      const bool leaf = depth[k] >= pick(rng, 1, 5);
      if (leaf) {
        f.mode.push_back("LEAF");
        f.feature.push_back(0);
        f.value.push_back(0.0f);
        f.t_next.push_back(0);
        f.f_next.push_back(0);
        f.missing.push_back(0);
        const int64_t weights = only_zero ? 1 : pick(rng, 1, 3);
        for (int64_t i = 0; i < weights; ++i) {
          f.w_tree.push_back(tree_id);
          f.w_node.push_back(id);
          f.w_id.push_back(only_zero ? 0 : pick(rng, 0, targets - 1));
          // Some forests mix +-2^54 with small weights: double sums lose the small ones or not
          // depending on their order, so a kernel summing the trees in another order shows.
          static const float kWide[] = {18014398509481984.0f, -18014398509481984.0f, 1.0f, 0.75f};
          f.w.push_back(wide ? kWide[pick(rng, 0, 3)] : static_cast<float>(pick(rng, -1000, 1000)) / 7.0f);
        }
        continue;
      }
      f.mode.push_back(kModes[pick(rng, 0, 5)]);
      f.feature.push_back(pick(rng, 0, features - 1));
      f.value.push_back(kLevels[static_cast<size_t>(pick(rng, 0, 4))] + (pick(rng, 0, 2) == 0 ? 0.25f : 0.0f));
      const int64_t first = static_cast<int64_t>(depth.size());
      f.t_next.push_back(first * 5 + 2);
      f.f_next.push_back((first + 1) * 5 + 2);
      f.missing.push_back(pick(rng, 0, 1));
      depth.push_back(depth[k] + 1);
      depth.push_back(depth[k] + 1);
    }
  }
  return f;
}

void set_forest(onnx::NodeProto& n, const ForestAttrs& f, const std::string& weights) {
  attr_ints(n, "nodes_treeids", f.tree);
  attr_ints(n, "nodes_nodeids", f.node);
  attr_ints(n, "nodes_featureids", f.feature);
  attr_strings(n, "nodes_modes", f.mode);
  attr_floats(n, "nodes_values", f.value);
  attr_ints(n, "nodes_truenodeids", f.t_next);
  attr_ints(n, "nodes_falsenodeids", f.f_next);
  attr_ints(n, "nodes_missing_value_tracks_true", f.missing);
  attr_ints(n, weights + "_treeids", f.w_tree);
  attr_ints(n, weights + "_nodeids", f.w_node);
  attr_ints(n, weights + "_ids", f.w_id);
  attr_floats(n, weights + "_weights", f.w);
}

// Rows of the forest's few levels, NaN in some (every tenth case), as float,
// double or int64; a single row as a 1-D input in some.
Tensor forest_input(Rng& rng, int i, int64_t rows, int64_t features) {
  const bool one_row = i % 11 == 10;
  const Shape s = one_row ? Shape{features} : Shape{rows, features};
  const DataType t = i % 7 == 5 ? DataType::Int64 : i % 7 == 6 ? DataType::Double : DataType::Float;
  Tensor x = Tensor::zeros(t, s);
  for (uint64_t e = 0; e < x.element_count(); ++e) {
    const double v = t == DataType::Int64 ? static_cast<double>(pick(rng, -1, 1))
                     : i % 10 == 9 && pick(rng, 0, 5) == 0 ? NAN
                                                             : kLevels[static_cast<size_t>(pick(rng, 0, 4))];
    if (t == DataType::Float) x.mutable_data<float>()[e] = static_cast<float>(v);
    else if (t == DataType::Double) x.mutable_data<double>()[e] = v;
    else x.mutable_data<int64_t>()[e] = static_cast<int64_t>(v);
  }
  return x;
}

const char* kPosts[] = {"NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"};

TEST(CpuOpsHarness, TreeEnsembleClassifierBitForBit) {
  Rng rng(71);
  for (int i = 0; i < 40; ++i) {
    Case c(17);
    c.mb.opset("ai.onnx.ml", i % 2 ? 3 : 1);
    const int64_t features = pick(rng, 1, 6), classes = i % 4 == 0 ? 2 : pick(rng, 2, 5), rows = pick(rng, 1, 300);
    const bool binary = classes == 2 && i % 8 == 0;  // weights on class 0 only: the [1 - s, s] form
    const ForestAttrs f = random_forest(rng, pick(rng, 1, 40), features, classes, binary, i % 4 == 3);
    c.input("x", forest_input(rng, i, rows, features));
    auto& n = c.mb.node("TreeEnsembleClassifier", {"x"}, {"y", "z"}, "n", "ai.onnx.ml");
    set_forest(n, f, "class");
    const bool strings = i % 3 == 1;
    if (strings) {
      std::vector<std::string> labels;
      for (int64_t k = 0; k < classes; ++k) labels.push_back("class " + std::to_string(k));
      attr_strings(n, "classlabels_strings", labels);
    } else {
      std::vector<int64_t> labels;
      for (int64_t k = 0; k < classes; ++k) labels.push_back(k * 10 - 3);
      attr_ints(n, "classlabels_int64s", labels);
    }
    const char* post = kPosts[pick(rng, 0, 4)];
    attr_string(n, "post_transform", post);
    if (i % 3 == 0) {
      std::vector<float> base;
      for (int64_t k = 0; k < classes; ++k) base.push_back(static_cast<float>(pick(rng, -8, 8)) / 8.0f);
      attr_floats(n, "base_values", base);
    }
    c.outputs = {"y", "z"};
    c.expect_kernel = "cpu-loop";
    c.what = "TreeEnsembleClassifier " + std::to_string(f.tree.size()) + " nodes, " + std::to_string(rows) + " x " +
             std::to_string(features) + ", " + std::to_string(classes) + " classes" + (binary ? " (binary)" : "") +
             (strings ? ", string labels" : "") + ", " + post;
    check(c, 0, 0);
  }
}

TEST(CpuOpsHarness, TreeEnsembleRegressorBitForBit) {
  static const char* kAggregates[] = {"SUM", "AVERAGE", "MIN", "MAX"};
  Rng rng(73);
  for (int i = 0; i < 40; ++i) {
    Case c(17);
    c.mb.opset("ai.onnx.ml", i % 2 ? 3 : 1);
    const int64_t features = pick(rng, 1, 6), targets = pick(rng, 1, 3), rows = pick(rng, 1, 300);
    const ForestAttrs f = random_forest(rng, pick(rng, 1, 40), features, targets, false, i % 5 == 1);
    c.input("x", forest_input(rng, i, rows, features));
    auto& n = c.mb.node("TreeEnsembleRegressor", {"x"}, {"y"}, "n", "ai.onnx.ml");
    set_forest(n, f, "target");
    attr_int(n, "n_targets", targets);
    const char* agg = kAggregates[i % 4];
    attr_string(n, "aggregate_function", agg);
    const char* post = i % 5 == 4 ? "LOGISTIC" : "NONE";
    attr_string(n, "post_transform", post);
    if (i % 3 == 0) {
      std::vector<float> base;
      for (int64_t k = 0; k < targets; ++k) base.push_back(static_cast<float>(pick(rng, -8, 8)) / 8.0f);
      attr_floats(n, "base_values", base);
    }
    c.expect_kernel = "cpu-loop";
    c.what = "TreeEnsembleRegressor " + std::to_string(f.tree.size()) + " nodes, " + std::to_string(rows) + " x " +
             std::to_string(features) + ", " + std::to_string(targets) + " targets, " + agg + ", " + post;
    check(c, 0, 0);
  }
}

// A forest the reference refuses (a branch to a node that does not exist, a
// cycle) is left to it: the CPU kernel declines and the reference's error
// names the problem.
TEST(CpuOpsHarness, TreeEnsembleMalformedForestsGoToTheReference) {
  for (int bad = 0; bad < 2; ++bad) {
    ModelBuilder b(17);
    b.opset("ai.onnx.ml", 3);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{2}});
    auto& n = b.node("TreeEnsembleRegressor", {"x"}, {"y"}, "n", "ai.onnx.ml");
    ForestAttrs f;
    f.tree = {0, 0, 0};
    f.node = {0, 1, 2};
    f.feature = {0, 1, 0};
    f.mode = {"BRANCH_LEQ", bad ? "BRANCH_LEQ" : "LEAF", "LEAF"};
    f.value = {0.5f, 0.5f, 0.0f};
    f.t_next = {1, bad ? 0 : 0, 0};  // bad: node 1 branches back to the root
    f.f_next = {bad ? 2 : 9, bad ? 0 : 0, 0};  // not bad: the root branches to node 9, which does not exist
    f.missing = {0, 0, 0};
    f.w_tree = {0, 0};
    f.w_node = {1, 2};
    f.w_id = {0, 0};
    f.w = {1.0f, 2.0f};
    set_forest(n, f, "target");
    b.output_untyped("y");
    auto m = load_model(b);
    Tensor x = Tensor::zeros(DataType::Float, {2, 2});  // row values 0: the root's LEQ goes true, to node 1
    CpuOptions co;
    co.opt_level = 0;
    try {
      make_cpu_engine(co)->prepare(m)->run({{"x", Value(x)}});
      FAIL() << "a malformed forest ran";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(bad ? "cycle" : "missing node"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
