// The nchwc-layout pass (passes/nchwc_layout.cpp): blocked activations between
// convolutions, reorders only at the edges, and its results against the reference.
#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/nchwc.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"
#include "pass_test_util.h"
#include "reference/interpreter.h"

using namespace onnxscope;
using namespace onnxscope::test;
using onnxscope::cpu::PassContext;

namespace {

using namespace onnxscope::test::passes;

// --- nchwc-layout ---------------------------------------------------------------------


TEST(NchwcLayout, ConvolutionsAndElementwiseStayBlocked) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  auto original = load_model(small_cnn());
  auto m = apply(*original, cpu::nchwc_layout, true);
  // The residual Add becomes the depthwise convolution's sum input; MaxPool
  // (on 24 channels: a padded block) and the spatial ReduceMean stay blocked.
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"NchwcConv", "Relu", "NchwcConv", "Clip", "NchwcConv", "NchwcPool",
                                               "NchwcConv", "NchwcPool", "FromNchwc", "FromNchwc", "FromNchwc"}));
  EXPECT_EQ(m->graph.nodes[5].attribute("op")->s, "MaxPool");
  EXPECT_EQ(m->graph.nodes[7].attribute("op")->s, "GlobalAveragePool");
  EXPECT_EQ(m->graph.nodes[2].inputs.size(), 4u);
  EXPECT_EQ(m->graph.nodes[2].inputs[3], m->graph.nodes[1].outputs[0]);
  EXPECT_EQ(provenance(m->graph.nodes[2]).size(), 2u);
  for (const auto& n : m->graph.nodes)
    if (n.op_type == "NchwcConv") {
      EXPECT_EQ(n.domain, "onnxscope.cpu");
      EXPECT_GE(provenance(n).size(), 1u);
    }
  EXPECT_EQ(m->graph.nodes[0].attribute("plain_input")->i, 1);  // 3 input channels: read plain
  EXPECT_EQ(m->graph.nodes[6].attribute("plain_input")->i, 0);
  EXPECT_EQ(m->graph.nodes[8].outputs[0], "c3");  // the original names come back
  EXPECT_EQ(m->graph.nodes[9].outputs[0], "c2");
  EXPECT_EQ(m->graph.nodes[10].outputs[0], "m");
  expect_same_results(original, m);
}

// A downsampling block as torchvision exports it: the main path's last
// convolution (stride 1) comes before the strided shortcut convolution, and
// their Add after both. The pass runs the main convolution after the
// shortcut so the shortcut becomes its sum input.
TEST(NchwcLayout, AShortcutMadeLaterStillBecomesTheSumInput) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  b.initializer(weights("wa", {32, 16, 3, 3}, 61, -0.3f, 0.3f));
  b.initializer(weights("wb", {32, 32, 1, 1}, 62, -0.3f, 0.3f));
  b.initializer(weights("ws", {32, 16, 1, 1}, 63, -0.3f, 0.3f));
  auto& a = b.node("Conv", {"x", "wa"}, {"a"}, "main_a");
  attr_ints(a, "pads", {1, 1, 1, 1});
  attr_ints(a, "strides", {2, 2});
  b.node("Relu", {"a"}, {"ar"}, "relu_a");
  b.node("Conv", {"ar", "wb"}, {"m"}, "main_b");
  attr_ints(b.node("Conv", {"x", "ws"}, {"s"}, "shortcut"), "strides", {2, 2});
  b.node("Add", {"m", "s"}, {"sum"}, "add");
  b.node("Relu", {"sum"}, {"y"}, "relu_out");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{32}, int64_t{4}, int64_t{4}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nchwc_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "Relu", "NchwcConv", "NchwcConv", "FromNchwc"}));
  const Node& main_b = m->graph.nodes[4];  // now after the shortcut
  EXPECT_EQ(provenance(main_b), (std::vector<std::string>{"main_b", "add", "relu_out"}));
  ASSERT_EQ(main_b.inputs.size(), 4u);
  EXPECT_EQ(main_b.inputs[3], m->graph.nodes[3].outputs[0]);  // the shortcut's blocked output
  EXPECT_EQ(main_b.attribute("activation")->s, "Relu");
  expect_same_results(original, m);
}

// The same block with the residual written as a two-input Sum (opset-8 era
// exporters, the model zoo's ResNet-50): it folds like an Add.
TEST(NchwcLayout, ATwoInputSumIsAResidualToo) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  ModelBuilder b(8);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  b.initializer(weights("wa", {16, 16, 3, 3}, 71, -0.3f, 0.3f));
  b.initializer(weights("wb", {16, 16, 1, 1}, 72, -0.3f, 0.3f));
  auto& a = b.node("Conv", {"x", "wa"}, {"a"}, "conv_a");
  attr_ints(a, "pads", {1, 1, 1, 1});
  b.node("Relu", {"a"}, {"ar"}, "relu_a");
  b.node("Conv", {"ar", "wb"}, {"m"}, "conv_b");
  b.node("Sum", {"m", "ar"}, {"sum"}, "sum");
  b.node("Relu", {"sum"}, {"r"}, "relu_sum");
  b.node("Sum", {"r", "ar"}, {"y"}, "plain_sum");  // not after a convolution: an elementwise Sum of blocked values
  b.output("y", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nchwc_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "Relu", "NchwcConv", "Sum", "FromNchwc"}));
  EXPECT_EQ(provenance(m->graph.nodes[3]), (std::vector<std::string>{"conv_b", "sum", "relu_sum"}));
  expect_same_results(original, m);
}

// A residual convolution whose padding reaches past its kernel: a 1x3 kernel
// with a padding row above and below, so its first and last output rows read
// only padding. oneDNN 2.6's brgconv kernel crashed (a segfault in its JIT
// code) on the sum post-op there; the blocked convolution declines the
// problem and the fused node runs on its reference form.
TEST(NchwcLayout, AResidualConvolutionWhoseRowsReadOnlyPaddingRuns) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  ModelBuilder b(14);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{24}, int64_t{7}, int64_t{9}});
  b.initializer(weights("wa", {24, 24, 3, 3}, 81, -0.3f, 0.3f));
  b.initializer(weights("wb", {24, 24, 1, 3}, 82, -0.3f, 0.3f));
  attr_ints(b.node("Conv", {"x", "wa"}, {"a"}, "conv_a"), "pads", {2, 1, 2, 1});  // [1, 24, 9, 9]
  b.node("Relu", {"a"}, {"ar"}, "relu_a");
  attr_ints(b.node("Conv", {"x", "wb"}, {"m"}, "conv_b"), "pads", {1, 1, 1, 1});  // [1, 24, 9, 9]
  b.node("Add", {"m", "ar"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"y"}, "relu");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{24}, int64_t{9}, int64_t{9}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nchwc_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "Relu", "NchwcConv", "FromNchwc"}));
  EXPECT_EQ(m->graph.nodes[3].inputs.size(), 4u);  // the residual fused in
  expect_same_results(original, m);
}

// Inception/SqueezeNet-style branches: a channel Concat of blocked values
// stays blocked when every input but the last fills whole blocks.
TEST(NchwcLayout, ChannelConcatOfWholeBlocksStaysBlocked) {
  const int64_t block = cpu::nchwc_block();
  if (block == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  for (int64_t last : {int64_t{16}, int64_t{5}}) {  // the last input may be padded
    SCOPED_TRACE(last);
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{16}, int64_t{6}, int64_t{6}});
    b.initializer(weights("wa", {32, 16, 1, 1}, 71, -0.3f, 0.3f));
    b.initializer(weights("wb", {last, 16, 3, 3}, 72, -0.3f, 0.3f));
    b.initializer(weights("wc", {8, 32 + last, 1, 1}, 73, -0.3f, 0.3f));
    b.node("Conv", {"x", "wa"}, {"a"}, "branch_a");
    attr_ints(b.node("Conv", {"x", "wb"}, {"b"}, "branch_b"), "pads", {1, 1, 1, 1});
    attr_int(b.node("Concat", {"a", "b"}, {"cat"}, "cat"), "axis", 1);
    b.node("Conv", {"cat", "wc"}, {"y"}, "head");
    b.output("y", DataType::Float, {int64_t{2}, int64_t{8}, int64_t{6}, int64_t{6}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::nchwc_layout, true);
    EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "NchwcConv", "Concat", "NchwcConv", "FromNchwc"}));
    expect_same_results(original, m);
  }
  // A padded input before the last: the Concat runs plain.
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{4}, int64_t{4}});
  b.initializer(weights("wa", {5, 16, 1, 1}, 74, -0.3f, 0.3f));
  b.initializer(weights("wb", {16, 16, 1, 1}, 75, -0.3f, 0.3f));
  b.node("Conv", {"x", "wa"}, {"a"}, "branch_a");
  b.node("Conv", {"x", "wb"}, {"b"}, "branch_b");
  attr_int(b.node("Concat", {"a", "b"}, {"y"}, "cat"), "axis", 1);
  b.output("y", DataType::Float, {int64_t{1}, int64_t{21}, int64_t{4}, int64_t{4}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nchwc_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "NchwcConv", "FromNchwc", "FromNchwc", "Concat"}));
  expect_same_results(original, m);
}

// DenseNet's pre-activation batch norm, and a per-channel Mul/Add after it:
// one NchwcScaleShift (the three merged, the Relu after them its activation)
// between blocked convolutions; the padded channels (20 of a 16- or 8-block)
// stay zero for the next one.
TEST(NchwcLayout, BatchNormAndPerChannelAffineStayBlocked) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{16}, int64_t{5}, int64_t{5}});
  b.initializer(weights("w0", {20, 16, 1, 1}, 91, -0.3f, 0.3f));
  b.initializer(weights("w1", {8, 20, 3, 3}, 92, -0.3f, 0.3f));
  b.initializer(weights("scale", {20}, 93, 0.5f, 2));
  b.initializer(weights("beta", {20}, 94));
  b.initializer(weights("mean", {20}, 95));
  b.initializer(weights("var", {20}, 96, 0.1f, 2));
  b.initializer(weights("m", {20, 1, 1}, 97, 0.5f, 1.5f));
  b.initializer(weights("a", {1, 20, 1, 1}, 98));
  b.node("Conv", {"x", "w0"}, {"c0"}, "conv0");
  b.node("Relu", {"c0"}, {"r0"}, "relu0");  // keeps the batch norm from folding into conv0
  b.node("BatchNormalization", {"r0", "scale", "beta", "mean", "var"}, {"bn"}, "bn");
  b.node("Mul", {"bn", "m"}, {"bm"}, "mul");
  b.node("Add", {"a", "bm"}, {"ba"}, "add");
  b.node("Relu", {"ba"}, {"r1"}, "relu1");
  attr_ints(b.node("Conv", {"r1", "w1"}, {"y"}, "conv1"), "pads", {1, 1, 1, 1});
  b.output("y", DataType::Float, {int64_t{2}, int64_t{8}, int64_t{5}, int64_t{5}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nchwc_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "Relu", "NchwcScaleShift", "NchwcConv",
                                               "FromNchwc"}));
  EXPECT_EQ(provenance(m->graph.nodes[3]), (std::vector<std::string>{"bn", "mul", "add", "relu1"}));
  ASSERT_NE(m->graph.nodes[3].attribute("activation"), nullptr);
  EXPECT_EQ(m->graph.nodes[3].attribute("activation")->s, "Relu");
  expect_same_results(original, m);
}

// DenseNet's torch.cat before each layer's batch norm: a blocked Concat read
// only by the batch norm becomes one NchwcScaleShift of its pieces (the
// input itself, 32 channels, then 20: the last piece's padding ends the
// result's), two images; a Concat read by something else too stays.
TEST(NchwcLayout, ConcatBeforeBatchNormIsReadInPlace) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  for (bool shared : {false, true}) {
    SCOPED_TRACE(shared ? "the Concat read twice" : "the Concat read once");
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{16}, int64_t{5}, int64_t{5}});
    b.initializer(weights("wa", {32, 16, 1, 1}, 101, -0.3f, 0.3f));
    b.initializer(weights("wb", {20, 16, 3, 3}, 102, -0.3f, 0.3f));
    b.initializer(weights("w1", {8, 68, 3, 3}, 103, -0.3f, 0.3f));
    b.initializer(weights("scale", {68}, 104, 0.5f, 2));
    b.initializer(weights("beta", {68}, 105));
    b.initializer(weights("mean", {68}, 106));
    b.initializer(weights("var", {68}, 107, 0.1f, 2));
    b.node("Conv", {"x", "wa"}, {"a"}, "conv_a");
    attr_ints(b.node("Conv", {"x", "wb"}, {"c"}, "conv_b"), "pads", {1, 1, 1, 1});
    attr_int(b.node("Concat", {"x", "a", "c"}, {"cat"}, "cat"), "axis", 1);
    b.node("BatchNormalization", {"cat", "scale", "beta", "mean", "var"}, {"bn"}, "bn");
    b.node("Relu", {"bn"}, {"r"}, "relu");
    attr_ints(b.node("Conv", {"r", "w1"}, {"y"}, "conv1"), "pads", {1, 1, 1, 1});
    b.output("y", DataType::Float, {int64_t{2}, int64_t{8}, int64_t{5}, int64_t{5}});
    if (shared) {
      b.node("Relu", {"cat"}, {"z"}, "other_reader");
      b.output("z", DataType::Float, {int64_t{2}, int64_t{68}, int64_t{5}, int64_t{5}});
    }
    auto original = load_model(b);
    auto m = apply(*original, cpu::nchwc_layout, true);
    if (!shared) {
      EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "NchwcConv", "NchwcScaleShift", "NchwcConv",
                                                   "FromNchwc"}));
      EXPECT_EQ(provenance(m->graph.nodes[3]), (std::vector<std::string>{"cat", "bn", "relu"}));
      EXPECT_EQ(m->graph.nodes[3].inputs.size(), 5u);
    } else {
      const auto ops = op_types(*m);
      EXPECT_NE(std::find(ops.begin(), ops.end(), "Concat"), ops.end());
      for (const Node& n : m->graph.nodes) {
        if (n.op_type == "NchwcScaleShift") {
          EXPECT_EQ(n.inputs.size(), 3u);
        }
      }
    }
    expect_same_results(original, m);
  }
}

// Grouped convolutions whose groups are whole 8-channel blocks (RegNet's)
// stay blocked, and groups of 2 or 4 where our own kernel takes them; other
// groups, which no blocked kernel takes, stay plain.
TEST(NchwcLayout, GroupsOfWholeBlocksStayBlocked) {
  if (cpu::nchwc_block() == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512: the pass does nothing";
  for (int64_t per_group : {8, 4, 6}) {
    SCOPED_TRACE(per_group);
    const int64_t groups = 3, C = groups * per_group;
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{16}, int64_t{9}, int64_t{9}});
    std::mt19937 gen(5);
    std::uniform_real_distribution<float> u(-0.5f, 0.5f);
    auto weights = [&](const std::string& name, std::vector<int64_t> dims) {
      std::vector<float> v(static_cast<size_t>(dims[0] * dims[1] * dims[2] * dims[3]));
      for (float& f : v) f = u(gen);
      b.initializer(make_float_tensor(name, dims, v));
    };
    weights("w0", {C, 16, 1, 1});
    weights("w1", {C, per_group, 3, 3});
    weights("w2", {16, C, 1, 1});
    b.node("Conv", {"x", "w0"}, {"a"}, "expand");
    auto& g = b.node("Conv", {"a", "w1"}, {"c"}, "grouped");
    attr_int(g, "group", groups);
    attr_ints(g, "pads", {1, 1, 1, 1});
    b.node("Conv", {"c", "w2"}, {"y"}, "project");
    b.output_untyped("y");
    auto original = load_model(b);
    auto m = apply(*original, cpu::nchwc_layout, true);
    // Groups of 4 channels: blocked where kernels/nn/grouped_conv_nchwc.cpp
    // runs them (block 16 on AVX-512), plain elsewhere.
    const bool own_grouped = cpu::nchwc_block() == 16 && ONNXSCOPE_CPU_AVX512("avx512f");
    if (per_group == 8 || (per_group == 4 && own_grouped))
      EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "NchwcConv", "NchwcConv", "FromNchwc"}));
    else if (C < cpu::nchwc_block())  // the projection reads the plain value (in_channels below the block)
      EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "FromNchwc", "Conv", "NchwcConv", "FromNchwc"}));
    else
      EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNchwc", "NchwcConv", "FromNchwc", "Conv", "ToNchwc", "NchwcConv",
                                                        "FromNchwc"}));
    expect_same_results(original, m);
  }
}

TEST(NchwcLayout, LeavesOtherGraphsAlone) {
  // No constant 4-D float weights: nothing to block.
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{5}, int64_t{5}});
  b.input("w", DataType::Float, {int64_t{16}, int64_t{16}, int64_t{3}, int64_t{3}});
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output_untyped("y");
  apply(*load_model(b), cpu::nchwc_layout, false);
}


}  // namespace
