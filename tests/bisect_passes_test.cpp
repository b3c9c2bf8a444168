// bisect-passes (issue 33 part 3): the rewrite budget stops the optimizer
// after exactly k rewrites, and with fold-conv-batchnorm broken on purpose
// at its second application the bisection names that pass, that node and
// the model's nodes the broken rewrite stands for.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/optimizer.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/bisect_passes.h"
#include "onnxscope/inputs.h"
#include "pass_test_util.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::passes;

namespace {

// x -> conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> relu2 -> y
ModelBuilder two_blocks() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  int seed = 1;
  for (int k = 1; k <= 2; ++k) {
    const std::string s = std::to_string(k);
    const int64_t in = k == 1 ? 3 : 4;
    b.initializer(weights("W" + s, {4, in, 3, 3}, seed++));
    b.initializer(weights("B" + s, {4}, seed++));
    b.initializer(weights("scale" + s, {4}, seed++, 0.5f, 2));
    b.initializer(weights("beta" + s, {4}, seed++));
    b.initializer(weights("mean" + s, {4}, seed++));
    b.initializer(weights("var" + s, {4}, seed++, 0.1f, 2));
    auto& c = b.node("Conv", {k == 1 ? "x" : "r1", "W" + s, "B" + s}, {"c" + s}, "conv" + s);
    attr_ints(c, "pads", {1, 1, 1, 1});
    b.node("BatchNormalization", {"c" + s, "scale" + s, "beta" + s, "mean" + s, "var" + s}, {"n" + s}, "bn" + s);
    b.node("Relu", {"n" + s}, {k == 1 ? "r1" : "y"}, "relu" + s);
  }
  b.output("y", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
  return b;
}

// fold-conv-batchnorm, then conv2's folded weights off by 5%: the second fold is broken.
bool broken_fold(Model& m, cpu::PassContext& ctx) {
  const bool changed = cpu::fold_conv_batchnorm(m, ctx);
  for (Node& n : m.graph.nodes)
    if (n.name == "conv2" && n.inputs.size() > 1 && n.inputs[1].find("_W_bn") != std::string::npos &&
        n.inputs[1].find("_broken") == std::string::npos) {
      const Initializer* w = m.graph.initializer(n.inputs[1]);
      Tensor t = Tensor::zeros(DataType::Float, w->value.shape());
      for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<float>()[i] = w->value.data<float>()[i] * 1.05f;
      n.inputs[1] += "_broken";
      m.graph.initializers.push_back({n.inputs[1], std::move(t), {}});
    }
  return changed;
}

struct RestorePass {
  ~RestorePass() { cpu::replace_pass_for_testing("fold-conv-batchnorm", nullptr); }
};

TEST(BisectPasses, TheBudgetStopsAfterExactlyKRewrites) {
  auto model = load_model(two_blocks());
  const OptimizedModel all = optimize_for_cpu(*model, CpuOptions{});
  ASSERT_GE(all.rewrites.size(), 4u);  // two folds, two Conv+Relu fusions at least
  for (size_t k = 0; k <= all.rewrites.size(); ++k) {
    CpuOptions o;
    o.rewrite_budget = static_cast<int64_t>(k);
    const OptimizedModel some = optimize_for_cpu(*model, o);
    ASSERT_EQ(some.rewrites.size(), k);
    for (size_t i = 0; i < k; ++i) {
      EXPECT_EQ(some.rewrites[i].pass, all.rewrites[i].pass) << i;
      EXPECT_EQ(some.rewrites[i].node, all.rewrites[i].node) << i;
    }
  }
  CpuOptions none;
  none.rewrite_budget = 0;
  EXPECT_EQ(optimize_for_cpu(*model, none).model->graph.nodes.size(), model->graph.nodes.size());
}

TEST(BisectPasses, NamesTheRewriteBrokenOnPurpose) {
  auto model = load_model(two_blocks());
  InputSpec spec;
  spec.seed = 3;
  const NamedValues inputs = make_inputs(*model, spec);
  BisectOptions o;
  {
    const BisectResult clean = bisect_passes(model, inputs, o);
    EXPECT_TRUE(clean.all.within) << clean.all.diff.max_abs;
    EXPECT_FALSE(clean.culprit);
  }
  RestorePass restore;
  cpu::replace_pass_for_testing("fold-conv-batchnorm", broken_fold);
  const BisectResult r = bisect_passes(model, inputs, o);
  EXPECT_FALSE(r.all.within);
  EXPECT_TRUE(r.none.within);
  ASSERT_TRUE(r.culprit);
  EXPECT_EQ(r.sites[*r.culprit].pass, "fold-conv-batchnorm");
  EXPECT_EQ(r.sites[*r.culprit].node, "bn2");
  EXPECT_TRUE(r.before.within);
  EXPECT_FALSE(r.after.within);
  EXPECT_EQ(r.original, (std::vector<std::string>{"'conv2' (Conv)", "'bn2' (BatchNormalization)"}));
  EXPECT_NE(std::find(r.removed.begin(), r.removed.end(), "'bn2' (BatchNormalization)"), r.removed.end());
  ASSERT_TRUE(r.model_before && r.model_after);
  EXPECT_EQ(r.model_before->graph.nodes.size(), r.model_after->graph.nodes.size() + 1);
  // A binary search: about log2 of the rewrites, plus the two ends.
  EXPECT_LE(r.runs, 2 + static_cast<size_t>(std::ceil(std::log2(double(r.sites.size())))) + 1);
}

}  // namespace
