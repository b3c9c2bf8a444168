// The CPU engine's graph passes, one at a time: each test builds a model,
// runs a single pass, checks the rewritten structure (which nodes remain,
// their provenance) and that the CPU engine on the rewritten model agrees
// with the reference engine on the original (seeded random inputs, 1e-5
// relative). Negative tests pin down when a pass must not fire.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

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

// --- constant-folding --------------------------------------------------------

TEST(ConstantFolding, FoldsConstantChainsIntoInitializers) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  b.initializer(make_int64_tensor("shape", {2}, {2, 3}));
  b.initializer(weights("w", {2, 3}, 1));
  auto& c = b.node("Constant", {}, {"one"}, "one");
  attr_tensor(c, "value", scalar("", 1.5f));
  auto& cos = b.node("ConstantOfShape", {"shape"}, {"filled"}, "fill");
  attr_tensor(cos, "value", make_float_tensor("", {1}, {0.25f}));
  b.node("Mul", {"w", "one"}, {"w2"}, "scale");
  b.node("Add", {"w2", "filled"}, {"w3"}, "shift");
  b.node("Add", {"x", "w3"}, {"y"}, "use");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::constant_folding, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Add"}));
  const Initializer* w3 = m->graph.initializer("w3");
  ASSERT_NE(w3, nullptr);
  EXPECT_FLOAT_EQ(w3->value.data<float>()[0], random_floats(6, 1)[0] * 1.5f + 0.25f);
  expect_same_results(original, m);
}

TEST(ConstantFolding, NeverAllocatesAboveTheLimit) {
  // A hostile ConstantOfShape asking for 2^40 floats, and a modest one above a small limit.
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}});
  b.initializer(make_int64_tensor("huge", {2}, {int64_t{1} << 20, int64_t{1} << 20}));
  b.initializer(make_int64_tensor("small", {1}, {1000}));
  b.node("ConstantOfShape", {"huge"}, {"h"}, "hostile");
  b.node("ConstantOfShape", {"small"}, {"s"}, "above_limit");
  b.node("Identity", {"x"}, {"y"}, "id");
  b.output("y", DataType::Float, {int64_t{1}});
  b.output("h", DataType::Float, {int64_t{1} << 20, int64_t{1} << 20});
  b.output("s", DataType::Float, {int64_t{1000}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::constant_folding, false, /*max_fold=*/1024);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ConstantOfShape", "ConstantOfShape", "Identity"}));
  auto m2 = apply(*original, cpu::constant_folding, true, /*max_fold=*/4000);
  EXPECT_EQ(op_types(*m2), (std::vector<std::string>{"ConstantOfShape", "Identity"}));  // 1000 floats fit in 4000 bytes
}

TEST(ConstantFolding, SkipsRandomOpsAndOverridableInitializers) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{3}});
  b.input("bias", DataType::Float, {int64_t{3}});  // an initializer the caller may override
  b.initializer(make_float_tensor("bias", {3}, {1, 2, 3}));
  b.initializer(make_float_tensor("w", {3}, {1, 2, 3}));
  auto& r = b.node("RandomUniformLike", {"w"}, {"noise"}, "noise");
  attr_int(r, "dtype", 1);
  b.node("Neg", {"bias"}, {"nb"}, "neg_bias");
  b.node("Add", {"x", "nb"}, {"t"}, "add");
  b.node("Add", {"t", "noise"}, {"y"}, "add_noise");
  b.output("y", DataType::Float, {int64_t{3}});
  auto original = load_model(b);
  apply(*original, cpu::constant_folding, false);
}

// --- eliminate-identity --------------------------------------------------------

TEST(EliminateIdentity, ReadersReadTheInputButOutputsKeepTheirNames) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{3}});
  b.node("Identity", {"x"}, {"i1"}, "id1");
  b.node("Relu", {"i1"}, {"r"}, "relu");
  b.node("Identity", {"r"}, {"y"}, "id_out");  // y is a graph output: kept
  b.output("y", DataType::Float, {int64_t{3}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::eliminate_identity, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Relu", "Identity"}));
  EXPECT_EQ(m->graph.nodes[0].inputs[0], "x");
  expect_same_results(original, m);
}

// --- eliminate-dead-nodes ------------------------------------------------------

TEST(EliminateDeadNodes, DropsUnreadNodesAndInitializers) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{3}});
  b.initializer(make_float_tensor("unused", {3}, {1, 2, 3}));
  b.node("Neg", {"x"}, {"dead"}, "dead");
  b.node("Relu", {"x"}, {"y"}, "live");
  b.output("y", DataType::Float, {int64_t{3}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::eliminate_dead_nodes, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(m->graph.initializer("unused"), nullptr);
  expect_same_results(original, m);
}

// --- common-subexpression-elimination ------------------------------------------

TEST(CommonSubexpressionElimination, MergesIdenticalNodes) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{4}});
  auto& l1 = b.node("LeakyRelu", {"x"}, {"a"}, "leaky_a");
  attr_float(l1, "alpha", 0.2f);
  auto& l2 = b.node("LeakyRelu", {"x"}, {"b"}, "leaky_b");
  attr_float(l2, "alpha", 0.2f);
  b.node("Exp", {"a"}, {"ea"}, "exp_a");
  b.node("Exp", {"b"}, {"eb"}, "exp_b");  // identical once b reads as a
  b.node("Sub", {"ea", "eb"}, {"y"}, "sub");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{4}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::common_subexpression_elimination, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"LeakyRelu", "Exp", "Sub"}));
  EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"leaky_a", "leaky_b"}));
  EXPECT_EQ(m->graph.nodes[2].inputs, (std::vector<std::string>{"ea", "ea"}));
  expect_same_results(original, m);
}

TEST(CommonSubexpressionElimination, KeepsDifferentAttributesRandomOpsAndOutputs) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{4}});
  auto& l1 = b.node("LeakyRelu", {"x"}, {"a"}, "leaky_a");
  attr_float(l1, "alpha", 0.2f);
  auto& l2 = b.node("LeakyRelu", {"x"}, {"b"}, "leaky_b");
  attr_float(l2, "alpha", 0.3f);
  b.node("RandomUniformLike", {"x"}, {"r1"}, "rand1");
  b.node("RandomUniformLike", {"x"}, {"r2"}, "rand2");
  b.node("Neg", {"x"}, {"n1"}, "neg1");
  b.node("Neg", {"x"}, {"n2"}, "neg2");  // a graph output: its name must stay
  b.node("Sum", {"a", "b", "r1", "r2", "n1"}, {"y"}, "sum");
  b.output("y", DataType::Float, {int64_t{4}});
  b.output("n2", DataType::Float, {int64_t{4}});
  auto original = load_model(b);
  apply(*original, cpu::common_subexpression_elimination, false);
}

// --- fold-conv-batchnorm ---------------------------------------------------------

ModelBuilder conv_bn(bool weights_constant, bool conv_read_twice, bool with_bias = true) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{6}, int64_t{6}});
  if (weights_constant) b.initializer(weights("W", {4, 3, 3, 3}, 11));
  else b.input("W", DataType::Float, {int64_t{4}, int64_t{3}, int64_t{3}, int64_t{3}});
  b.initializer(weights("B", {4}, 12));
  b.initializer(weights("scale", {4}, 13, 0.5f, 2));
  b.initializer(weights("beta", {4}, 14));
  b.initializer(weights("mean", {4}, 15));
  b.initializer(weights("var", {4}, 16, 0.1f, 2));
  auto& c = b.node("Conv", with_bias ? std::vector<std::string>{"x", "W", "B"} : std::vector<std::string>{"x", "W"},
                   {"c"}, "conv");
  attr_ints(c, "pads", {1, 1, 1, 1});
  attr_ints(c, "strides", {2, 2});
  auto& bn = b.node("BatchNormalization", {"c", "scale", "beta", "mean", "var"}, {"y"}, "bn");
  attr_float(bn, "epsilon", 1e-3f);
  b.output("y", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{3}, int64_t{3}});
  if (conv_read_twice) {
    b.node("Relu", {"c"}, {"r"}, "other_reader");
    b.output("r", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{3}, int64_t{3}});
  }
  return b;
}

TEST(FoldConvBatchNorm, FoldsIntoConvWeights) {
  for (bool with_bias : {true, false}) {
    auto original = load_model(conv_bn(true, false, with_bias));
    auto m = apply(*original, cpu::fold_conv_batchnorm, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Conv"}));
    EXPECT_EQ(m->graph.nodes[0].name, "conv");
    EXPECT_EQ(m->graph.nodes[0].outputs[0], "y");
    EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"conv", "bn"}));
    expect_same_results(original, m);
  }
}

TEST(FoldConvBatchNorm, NeedsConstantWeightsAndAPrivateIntermediate) {
  apply(*load_model(conv_bn(false, false)), cpu::fold_conv_batchnorm, false);
  apply(*load_model(conv_bn(true, true)), cpu::fold_conv_batchnorm, false);
}

// --- fold-conv-mul-add ---------------------------------------------------------------

// Conv [+ bias] -> Mul(s) -> Add(d) -> Sub(e), the constants shaped `shape`
// (per channel unless told otherwise); Mul's operands swapped when asked.
ModelBuilder conv_mul_add(std::vector<int64_t> shape, bool with_bias, bool swap = false) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{6}, int64_t{6}});
  b.initializer(weights("W", {4, 3, 3, 3}, 81));
  b.initializer(weights("B", {4}, 82));
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  b.initializer(weights("s", shape, 83, 0.5f, 2));
  b.initializer(weights("d", shape, 84));
  b.initializer(weights("e", shape, 85));
  auto& c = b.node("Conv", with_bias ? std::vector<std::string>{"x", "W", "B"} : std::vector<std::string>{"x", "W"},
                   {"c"}, "conv");
  attr_ints(c, "pads", {1, 1, 1, 1});
  b.node("Mul", swap ? std::vector<std::string>{"s", "c"} : std::vector<std::string>{"c", "s"}, {"m"}, "mul");
  b.node("Add", {"d", "m"}, {"a"}, "add");
  b.node("Sub", {"a", "e"}, {"y"}, "sub");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{6}, int64_t{6}});
  return b;
}

TEST(FoldConvMulAdd, PerChannelConstantsFoldIntoTheConv) {
  for (auto shape : {std::vector<int64_t>{4, 1, 1}, std::vector<int64_t>{1, 4, 1, 1}, std::vector<int64_t>{1},
                     std::vector<int64_t>{}}) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(shape_to_string(shape) + (with_bias ? " bias" : " no bias"));
      auto original = load_model(conv_mul_add(shape, with_bias, !with_bias));
      auto m = apply(*original, cpu::fold_conv_mul_add, true);
      for (int round = 0; round < 2; ++round) m = apply(*m, cpu::fold_conv_mul_add, true);  // one per round
      ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Conv"}));
      EXPECT_EQ(m->graph.nodes[0].outputs[0], "y");
      EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"conv", "mul", "add", "sub"}));
      expect_same_results(original, m);
    }
  }
}

TEST(FoldConvMulAdd, NotAcrossChannelsOrSpaceOrForSharedOutputs) {
  apply(*load_model(conv_mul_add({4, 6, 1}, true)), cpu::fold_conv_mul_add, false);  // varies along H
  apply(*load_model(conv_mul_add({3, 1, 1}, true)), cpu::fold_conv_mul_add, false);  // not the channel count
  ModelBuilder b = conv_mul_add({4, 1, 1}, true);
  b.output("c", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{6}, int64_t{6}});  // the Conv output is read outside
  apply(*load_model(b), cpu::fold_conv_mul_add, false);
}

// --- matmul-add-to-gemm -------------------------------------------------------------

ModelBuilder matmul_add(std::vector<DimSpec> a_dims, std::vector<int64_t> bias_dims, bool product_is_output = false) {
  ModelBuilder b(17);
  b.input("a", DataType::Float, a_dims);
  b.initializer(weights("w", {8, 5}, 21));
  b.initializer(weights("bias", bias_dims, 22));
  b.node("MatMul", {"a", "w"}, {"p"}, "mm");
  b.node("Add", {"bias", "p"}, {"y"}, "add");
  std::vector<DimSpec> out(a_dims.begin(), a_dims.end() - 1);
  out.push_back(int64_t{5});
  b.output("y", DataType::Float, out);
  if (product_is_output) b.output("p", DataType::Float, out);
  return b;
}

TEST(MatMulAddToGemm, TwoDimensionalMatMulWithBiasBecomesGemm) {
  for (auto bias : {std::vector<int64_t>{5}, std::vector<int64_t>{1, 5}}) {
    auto original = load_model(matmul_add({int64_t{4}, int64_t{8}}, bias));
    auto m = apply(*original, cpu::matmul_add_to_gemm, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Gemm"}));
    EXPECT_EQ(m->graph.nodes[0].inputs, (std::vector<std::string>{"a", "w", "bias"}));
    EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"mm", "add"}));
    expect_same_results(original, m);
  }
}

TEST(MatMulAddToGemm, LeavesOtherShapesAndSharedProducts) {
  apply(*load_model(matmul_add({int64_t{2}, int64_t{4}, int64_t{8}}, {5})), cpu::matmul_add_to_gemm, false);
  apply(*load_model(matmul_add({int64_t{4}, int64_t{8}}, {4, 5})), cpu::matmul_add_to_gemm, false);
  apply(*load_model(matmul_add({int64_t{4}, int64_t{8}}, {5}, true)), cpu::matmul_add_to_gemm, false);
}

// --- fuse-conv-activation / fuse-gemm-activation ----------------------------------

void add_activation(ModelBuilder& b, const std::string& op, const std::string& in, const std::string& out) {
  if (op == "Clip") {
    b.initializer(scalar("clip_lo", -0.3f));
    b.initializer(scalar("clip_hi", 0.4f));
    b.node("Clip", {in, "clip_lo", "clip_hi"}, {out}, "act");
    return;
  }
  auto& n = b.node(op, {in}, {out}, "act");
  if (op == "LeakyRelu") attr_float(n, "alpha", 0.3f);
  if (op == "HardSigmoid") {
    attr_float(n, "alpha", 0.4f);
    attr_float(n, "beta", 0.6f);
  }
  if (op == "Swish") attr_float(n, "alpha", 1.25f);
}

ModelBuilder conv_act(const std::string& act, bool intermediate_is_output = false) {
  ModelBuilder b(act == "Gelu" ? 20 : act == "Swish" ? 24 : 17);  // ai.onnx Gelu is new in opset 20, Swish in 24
  b.input("x", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{5}});
  b.initializer(weights("W", {4, 1, 3, 3}, 31));
  b.initializer(weights("B", {4}, 32));
  auto& c = b.node("Conv", {"x", "W", "B"}, {"c"}, "conv");
  attr_int(c, "group", 2);
  attr_ints(c, "pads", {1, 1, 1, 1});
  add_activation(b, act, "c", "y");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
  if (intermediate_is_output) b.output("c", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
  return b;
}

TEST(FuseConvActivation, EveryFusableActivation) {
  for (const auto& a : cpu::kFusableActivations) {
    SCOPED_TRACE(a.op);
    auto original = load_model(conv_act(a.op));
    auto m = apply(*original, cpu::fuse_conv_activation, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv"}));
    const Node& f = m->graph.nodes[0];
    EXPECT_EQ(f.domain, cpu::kCpuDomain);
    EXPECT_EQ(m->opset_version(cpu::kCpuDomain), 1);
    EXPECT_EQ(provenance(f), (std::vector<std::string>{"conv", "act"}));
    ASSERT_NE(f.attribute("activation"), nullptr);
    EXPECT_EQ(f.attribute("activation")->s, a.op);
    EXPECT_EQ(f.attribute("group")->i, 2);
    expect_same_results(original, m);
  }
}

// SiLU as torch.onnx writes it: x * Sigmoid(x), the Mul's operands in either
// order; with gate "HardSigmoid", x * HardSigmoid(x) (its alpha and beta
// given when not NaN).
ModelBuilder conv_silu(bool sigmoid_first, bool sigmoid_read_twice = false, const std::string& gate = "Sigmoid",
                       float alpha = NAN, float beta = NAN) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{5}});
  b.initializer(weights("W", {4, 2, 3, 3}, 33));
  attr_ints(b.node("Conv", {"x", "W"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  auto& g = b.node(gate, {"c"}, {"s"}, "sigmoid");
  if (!std::isnan(alpha)) attr_float(g, "alpha", alpha);
  if (!std::isnan(beta)) attr_float(g, "beta", beta);
  b.node("Mul", sigmoid_first ? std::vector<std::string>{"s", "c"} : std::vector<std::string>{"c", "s"}, {"y"}, "mul");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
  if (sigmoid_read_twice) b.output("s", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
  return b;
}

TEST(FuseConvActivation, SiluWrittenAsMulOfSigmoid) {
  for (bool sigmoid_first : {false, true}) {
    auto original = load_model(conv_silu(sigmoid_first));
    auto m = apply(*original, cpu::fuse_conv_activation, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv"}));
    const Node& f = m->graph.nodes[0];
    EXPECT_EQ(f.attribute("activation")->s, "Swish");
    EXPECT_EQ(f.attribute("activation_params")->floats, (std::vector<float>{1.0f}));
    EXPECT_EQ(provenance(f), (std::vector<std::string>{"conv", "sigmoid", "mul"}));
    EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
    expect_same_results(original, m);
  }
  // The Sigmoid's result is needed elsewhere and the Conv's has two readers: nothing fuses.
  auto m = apply(*load_model(conv_silu(false, true)), cpu::fuse_conv_activation, false);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Conv", "Sigmoid", "Mul"}));
}

// HardSwish's function body, as the TorchScript exporter below opset 14 and
// ONNX Runtime's saved models (the function inlined) write it.
TEST(FuseConvActivation, HardSwishWrittenAsMulOfHardSigmoid) {
  for (bool gate_first : {false, true}) {
    auto original = load_model(conv_silu(gate_first, false, "HardSigmoid", 1.0f / 6.0f, 0.5f));
    auto m = apply(*original, cpu::fuse_conv_activation, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv"}));
    const Node& f = m->graph.nodes[0];
    EXPECT_EQ(f.attribute("activation")->s, "HardSwish");
    EXPECT_EQ(f.attribute("activation_params"), nullptr);
    EXPECT_EQ(provenance(f), (std::vector<std::string>{"conv", "sigmoid", "mul"}));
    expect_same_results(original, m);
  }
  // Any other alpha or beta (HardSigmoid's defaults are 0.2 and 0.5) is not HardSwish.
  for (auto [alpha, beta] : {std::pair{NAN, NAN}, std::pair{1.0f / 6.0f, 0.6f}, std::pair{0.17f, 0.5f}}) {
    auto m = apply(*load_model(conv_silu(false, false, "HardSigmoid", alpha, beta)), cpu::fuse_conv_activation, false);
    EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Conv", "HardSigmoid", "Mul"}));
  }
  auto m = apply(*load_model(conv_silu(false, true, "HardSigmoid", 1.0f / 6.0f, 0.5f)), cpu::fuse_conv_activation, false);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Conv", "HardSigmoid", "Mul"}));
}

TEST(FuseConvActivation, NotWhenTheConvOutputIsAGraphOutput) {
  apply(*load_model(conv_act("Relu", true)), cpu::fuse_conv_activation, false);
  ModelBuilder b = conv_act("Relu");
  b.node("Neg", {"c"}, {"n"}, "second_reader");
  b.output("n", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
  apply(*load_model(b), cpu::fuse_conv_activation, false);
}

ModelBuilder gemm_act(const std::string& act, bool read_twice = false) {
  ModelBuilder b(17);
  b.input("a", DataType::Float, {int64_t{3}, int64_t{6}});
  b.initializer(weights("w", {4, 6}, 41));
  b.initializer(weights("c", {4}, 42));
  auto& g = b.node("Gemm", {"a", "w", "c"}, {"g"}, "gemm");
  attr_int(g, "transB", 1);
  attr_float(g, "alpha", 0.5f);
  attr_float(g, "beta", 2.0f);
  add_activation(b, act, "g", "y");
  b.output("y", DataType::Float, {int64_t{3}, int64_t{4}});
  if (read_twice) {
    b.node("Neg", {"g"}, {"n"}, "second_reader");
    b.output("n", DataType::Float, {int64_t{3}, int64_t{4}});
  }
  return b;
}

TEST(FuseGemmActivation, GemmWithAttributesAndActivation) {
  // (HardSigmoid after a Gemm with alpha != 1 is checked against the fused
  // reference kernels below: the oneDNN FusedGemm gets it wrong for now.)
  for (const char* act : {"Relu", "Clip", "LeakyRelu"}) {
    SCOPED_TRACE(act);
    auto original = load_model(gemm_act(act));
    auto m = apply(*original, cpu::fuse_gemm_activation, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedGemm"}));
    EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"gemm", "act"}));
    EXPECT_EQ(m->graph.nodes[0].attribute("transB")->i, 1);
    expect_same_results(original, m);
  }
}

TEST(FuseGemmActivation, NotWhenTheProductHasAnotherReader) {
  apply(*load_model(gemm_act("Relu", true)), cpu::fuse_gemm_activation, false);
}

// --- fuse-matmul-bias-activation ---------------------------------------------------

ModelBuilder matmul_bias_act(bool bias, const std::string& act, std::vector<int64_t> bias_dims = {5},
                             int64_t opset = 17) {
  ModelBuilder b(opset);
  b.input("a", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{8}});
  b.initializer(weights("w", {8, 5}, 51));
  b.node("MatMul", {"a", "w"}, {"p"}, "mm");
  std::string v = "p";
  if (bias) {
    b.initializer(weights("bias", bias_dims, 52));
    b.node("Add", {"p", "bias"}, {"pb"}, "add");
    v = "pb";
  }
  if (!act.empty()) add_activation(b, act, v, "y");
  else b.node("Identity", {v}, {"y"}, "id");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}});
  return b;
}

TEST(FuseMatMulBiasActivation, BiasAndActivation) {
  auto original = load_model(matmul_bias_act(true, "Tanh"));
  auto m = apply(*original, cpu::fuse_matmul_bias_activation, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedMatMul"}));
  EXPECT_EQ(m->graph.nodes[0].inputs, (std::vector<std::string>{"a", "w", "bias"}));
  EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"mm", "add", "act"}));
  EXPECT_EQ(m->graph.nodes[0].attribute("activation")->s, "Tanh");
  expect_same_results(original, m);
}

TEST(FuseMatMulBiasActivation, ActivationOnlyOrBiasOnly) {
  auto original = load_model(matmul_bias_act(false, "LeakyRelu"));
  auto m = apply(*original, cpu::fuse_matmul_bias_activation, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedMatMul"}));
  EXPECT_EQ(m->graph.nodes[0].inputs.size(), 2u);
  expect_same_results(original, m);
  auto original2 = load_model(matmul_bias_act(true, ""));
  auto m2 = apply(*original2, cpu::fuse_matmul_bias_activation, true);
  ASSERT_EQ(op_types(*m2), (std::vector<std::string>{"FusedMatMul", "Identity"}));
  EXPECT_EQ(m2->graph.nodes[0].attribute("activation")->s, "");
  expect_same_results(original2, m2);
}

TEST(FuseMatMulBiasActivation, NotForNonVectorBiasOrPlainMatMul) {
  // A [3, 5] bias is not FusedMatMul's 1-D Bias; nothing else to fuse.
  apply(*load_model(matmul_bias_act(true, "", {3, 5})), cpu::fuse_matmul_bias_activation, false);
  apply(*load_model(matmul_bias_act(false, "")), cpu::fuse_matmul_bias_activation, false);
  // The biased sum is a graph output: MatMul + bias fuse, the activation stays.
  ModelBuilder b = matmul_bias_act(true, "Relu");
  b.output("pb", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}});
  auto m = apply(*load_model(b), cpu::fuse_matmul_bias_activation, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"FusedMatMul", "Relu"}));  // MatMul + bias only
}

// Gelu as FusedMatMul's activation: ai.onnx Gelu (opset 20, exact and tanh),
// and the engine's own Gelu that fuse-gelu makes from the decomposed form below opset 20.
TEST(FuseMatMulBiasActivation, GeluBecomesThePostOp) {
  for (const char* approx : {"none", "tanh"}) {
    SCOPED_TRACE(approx);
    ModelBuilder b(20);
    b.input("a", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{8}});
    b.initializer(weights("w", {8, 5}, 51));
    b.initializer(weights("bias", {5}, 52));
    b.node("MatMul", {"a", "w"}, {"p"}, "mm");
    b.node("Add", {"p", "bias"}, {"pb"}, "add");
    attr_string(b.node("Gelu", {"pb"}, {"y"}, "act"), "approximate", approx);
    b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::fuse_matmul_bias_activation, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedMatMul"}));
    EXPECT_EQ(m->graph.nodes[0].attribute("activation")->s, "Gelu");
    EXPECT_EQ(m->graph.nodes[0].attribute("activation_params")->floats,
              std::vector<float>{std::string(approx) == "tanh" ? 1.f : 0.f});
    expect_same_results(original, m);
  }
  ModelBuilder b(17);
  b.input("a", DataType::Float, {int64_t{3}, int64_t{8}});
  b.initializer(weights("w", {8, 7}, 53));
  b.initializer(scalar("sqrt2", 1.4142135f));
  b.initializer(scalar("one", 1.0f));
  b.initializer(scalar("half", 0.5f));
  b.node("MatMul", {"a", "w"}, {"x"}, "mm");
  b.node("Div", {"x", "sqrt2"}, {"d"}, "scale");
  b.node("Erf", {"d"}, {"e"}, "erf");
  b.node("Add", {"e", "one"}, {"e1"}, "plus_one");
  b.node("Mul", {"x", "e1"}, {"xe"}, "mul_x");
  b.node("Mul", {"xe", "half"}, {"y"}, "mul_half");
  b.output("y", DataType::Float, {int64_t{3}, int64_t{7}});
  auto original = load_model(b);
  auto m = apply(*apply(*original, cpu::fuse_gelu, true), cpu::fuse_matmul_bias_activation, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedMatMul"}));
  EXPECT_EQ(m->graph.nodes[0].attribute("activation")->s, "Gelu");
  expect_same_results(original, m);
}

// --- cancel-transpose-reshape -------------------------------------------------------

TEST(CancelTransposeReshape, TransposesThatCancelAreRemoved) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  auto& t1 = b.node("Transpose", {"x"}, {"t"}, "t1");
  attr_ints(t1, "perm", {1, 2, 0});
  auto& t2 = b.node("Transpose", {"t"}, {"u"}, "t2");
  attr_ints(t2, "perm", {2, 0, 1});
  b.node("Relu", {"u"}, {"y"}, "relu");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::cancel_transpose_reshape, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(m->graph.nodes[0].inputs[0], "x");
  expect_same_results(original, m);
}

TEST(CancelTransposeReshape, TransposesThatDoNotCancelBecomeOne) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  auto& t1 = b.node("Transpose", {"x"}, {"t"}, "t1");
  attr_ints(t1, "perm", {1, 0, 2});
  auto& t2 = b.node("Transpose", {"t"}, {"y"}, "t2");
  attr_ints(t2, "perm", {0, 2, 1});
  b.output("y", DataType::Float, {int64_t{3}, int64_t{4}, int64_t{2}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::cancel_transpose_reshape, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Transpose"}));
  EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"t1", "t2"}));
  expect_same_results(original, m);
}

TEST(CancelTransposeReshape, ReshapeChainsMergeAndNoOpReshapesGo) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  b.initializer(make_int64_tensor("s1", {2}, {6, 4}));
  b.initializer(make_int64_tensor("s2", {2}, {4, -1}));
  b.initializer(make_int64_tensor("same", {2}, {0, 6}));
  b.node("Reshape", {"x", "s1"}, {"r1"}, "r1");
  b.node("Reshape", {"r1", "s2"}, {"r2"}, "r2");
  b.node("Reshape", {"r2", "same"}, {"r3"}, "noop");
  b.node("Neg", {"r3"}, {"y"}, "neg");
  b.output("y", DataType::Float, {int64_t{4}, int64_t{6}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::cancel_transpose_reshape, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Reshape", "Neg"}));
  EXPECT_EQ(m->graph.nodes[0].inputs, (std::vector<std::string>{"x", "s2"}));
  EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"r1", "r2"}));
  expect_same_results(original, m);
}

TEST(CancelTransposeReshape, NotWhenShapesDependOnTheMiddleOrItIsShared) {
  // s2 copies a dim of the intermediate (0), and a graph output sits in the middle.
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  b.initializer(make_int64_tensor("s1", {2}, {6, 4}));
  b.initializer(make_int64_tensor("s2", {3}, {0, 2, 2}));
  b.node("Reshape", {"x", "s1"}, {"r1"}, "r1");
  b.node("Reshape", {"r1", "s2"}, {"y"}, "r2");
  b.output("y", DataType::Float, {int64_t{6}, int64_t{2}, int64_t{2}});
  apply(*load_model(b), cpu::cancel_transpose_reshape, false);

  ModelBuilder c(17);
  c.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  auto& t1 = c.node("Transpose", {"x"}, {"t"}, "t1");
  attr_ints(t1, "perm", {1, 0});
  auto& t2 = c.node("Transpose", {"t"}, {"y"}, "t2");
  attr_ints(t2, "perm", {1, 0});
  c.output("y", DataType::Float, {int64_t{2}, int64_t{3}});  // cancels, but y names the interface
  c.output("t", DataType::Float, {int64_t{3}, int64_t{2}});
  apply(*load_model(c), cpu::cancel_transpose_reshape, false);
}

// --- fuse-layernorm ------------------------------------------------------------------

ModelBuilder decomposed_layernorm(int64_t opset, bool extra_reader = false) {
  ModelBuilder b(opset);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{5}, int64_t{16}});
  b.initializer(weights("gamma", {16}, 61, 0.5f, 1.5f));
  b.initializer(weights("beta", {16}, 62));
  b.initializer(scalar("two", 2.0f));
  b.initializer(scalar("eps", 1e-5f));
  const bool axes_input = opset >= 18;
  if (axes_input) b.initializer(make_int64_tensor("axes", {1}, {-1}));
  auto mean = [&](const std::string& in, const std::string& out, const std::string& name) {
    auto& n = b.node("ReduceMean", axes_input ? std::vector<std::string>{in, "axes"} : std::vector<std::string>{in},
                     {out}, name);
    if (!axes_input) attr_ints(n, "axes", {-1});
  };
  mean("x", "m", "mean");
  b.node("Sub", {"x", "m"}, {"d"}, "sub");
  b.node("Pow", {"d", "two"}, {"p"}, "pow");
  mean("p", "v", "var");
  b.node("Add", {"v", "eps"}, {"ve"}, "add_eps");
  b.node("Sqrt", {"ve"}, {"s"}, "sqrt");
  b.node("Div", {"d", "s"}, {"n"}, "div");
  b.node("Mul", {"n", "gamma"}, {"g"}, "mul");
  b.node("Add", {"g", "beta"}, {"y"}, "add");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{5}, int64_t{16}});
  if (extra_reader) {
    b.node("Abs", {"d"}, {"ad"}, "extra");
    b.output("ad", DataType::Float, {int64_t{2}, int64_t{5}, int64_t{16}});
  }
  return b;
}

TEST(FuseLayerNorm, DecomposedFormBecomesLayerNormalization) {
  for (int64_t opset : {17, 18}) {
    SCOPED_TRACE(opset);
    auto original = load_model(decomposed_layernorm(opset));
    auto m = apply(*original, cpu::fuse_layernorm, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"LayerNormalization"}));
    const Node& ln = m->graph.nodes[0];
    EXPECT_EQ(ln.inputs, (std::vector<std::string>{"x", "gamma", "beta"}));
    EXPECT_EQ(ln.attribute("axis")->i, -1);
    EXPECT_FLOAT_EQ(ln.attribute("epsilon")->f, 1e-5f);
    EXPECT_EQ(provenance(ln).size(), 9u);
    expect_same_results(original, m);
  }
}

// Below opset 17 (the TorchScript exporter's BERT and GPT-2 at opset 14): the
// CPU engine's own LayerNormalization, same contract.
TEST(FuseLayerNorm, BeforeOpset17TheCpuEnginesOwn) {
  for (int64_t opset : {14, 16}) {
    SCOPED_TRACE(opset);
    auto original = load_model(decomposed_layernorm(opset));
    auto m = apply(*original, cpu::fuse_layernorm, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"LayerNormalization"}));
    EXPECT_EQ(m->graph.nodes[0].domain, cpu::kCpuDomain);
    EXPECT_EQ(m->opset_version(cpu::kCpuDomain), 1);
    expect_same_results(original, m);
  }
}

TEST(FuseLayerNorm, NotWithSharedIntermediates) {
  apply(*load_model(decomposed_layernorm(17, true)), cpu::fuse_layernorm, false);
  apply(*load_model(decomposed_layernorm(14, true)), cpu::fuse_layernorm, false);
}

// --- fuse-gelu -------------------------------------------------------------------------

ModelBuilder decomposed_gelu(int64_t opset, int form) {
  ModelBuilder b(opset);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{7}});
  b.initializer(scalar("sqrt2", 1.4142135f));
  b.initializer(scalar("inv_sqrt2", 0.70710677f));
  b.initializer(scalar("one", 1.0f));
  b.initializer(scalar("half", 0.5f));
  if (form == 0) b.node("Div", {"x", "sqrt2"}, {"a"}, "scale");
  else b.node("Mul", {"inv_sqrt2", "x"}, {"a"}, "scale");
  b.node("Erf", {"a"}, {"e"}, "erf");
  b.node("Add", {"e", "one"}, {"c"}, "plus_one");
  if (form == 0) {  // (x * c) * 0.5
    b.node("Mul", {"x", "c"}, {"xc"}, "mul_x");
    b.node("Mul", {"xc", "half"}, {"y"}, "mul_half");
  } else {  // (x * 0.5) * c
    b.node("Mul", {"x", "half"}, {"xh"}, "mul_half");
    b.node("Mul", {"xh", "c"}, {"y"}, "mul_x");
  }
  b.output("y", DataType::Float, {int64_t{3}, int64_t{7}});
  return b;
}

TEST(FuseGelu, DecomposedFormsBecomeGelu) {
  for (int form : {0, 1}) {
    SCOPED_TRACE(form);
    auto original = load_model(decomposed_gelu(20, form));
    auto m = apply(*original, cpu::fuse_gelu, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Gelu"}));
    EXPECT_EQ(m->graph.nodes[0].inputs, (std::vector<std::string>{"x"}));
    EXPECT_EQ(provenance(m->graph.nodes[0]).size(), 5u);
    expect_same_results(original, m);
  }
}

TEST(FuseGelu, BeforeOpset20TheEnginesOwnGelu) {
  auto original = load_model(decomposed_gelu(18, 1));
  auto m = apply(*original, cpu::fuse_gelu, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Gelu"}));
  EXPECT_EQ(m->graph.nodes[0].domain, "onnxscope.cpu");
  EXPECT_EQ(m->opset_version("onnxscope.cpu"), 1);
  expect_same_results(original, m);
}

// GPT-2's gelu_new as the TorchScript exporter writes it (form 0: Pow(x, 3),
// 0.5 * x first), and with x * x * x and the halving last (form 1).
ModelBuilder decomposed_tanh_gelu(int64_t opset, int form) {
  ModelBuilder b(opset);
  b.input("x", DataType::Float, {int64_t{3}, int64_t{7}});
  b.initializer(scalar("half", 0.5f));
  b.initializer(scalar("three", 3.0f));
  b.initializer(scalar("c", 0.044715f));
  b.initializer(scalar("k", 0.7978846f));
  b.initializer(scalar("one", 1.0f));
  if (form == 0) {
    b.node("Mul", {"x", "half"}, {"h"}, "half_x");
    b.node("Pow", {"x", "three"}, {"p"}, "cube");
  } else {
    b.node("Mul", {"x", "x"}, {"sq"}, "square");
    b.node("Mul", {"sq", "x"}, {"p"}, "cube");
  }
  b.node("Mul", {"p", "c"}, {"q"}, "scale_cube");
  b.node("Add", {"x", "q"}, {"s"}, "sum");
  b.node("Mul", {"k", "s"}, {"u"}, "scale_sum");
  b.node("Tanh", {"u"}, {"t"}, "tanh");
  b.node("Add", {"t", "one"}, {"v"}, "plus_one");
  if (form == 0) {
    b.node("Mul", {"h", "v"}, {"y"}, "out");
  } else {
    b.node("Mul", {"x", "v"}, {"xv"}, "times_x");
    b.node("Mul", {"xv", "half"}, {"y"}, "out");
  }
  b.output("y", DataType::Float, {int64_t{3}, int64_t{7}});
  return b;
}

TEST(FuseGelu, TanhApproximationBecomesGeluTanh) {
  for (int64_t opset : {17, 20})
    for (int form : {0, 1}) {
      SCOPED_TRACE(std::to_string(opset) + " form " + std::to_string(form));
      auto original = load_model(decomposed_tanh_gelu(opset, form));
      auto m = apply(*original, cpu::fuse_gelu, true);
      ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Gelu"}));
      const Node& n = m->graph.nodes[0];
      EXPECT_EQ(n.domain, opset >= 20 ? "" : "onnxscope.cpu");
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"x"}));
      ASSERT_NE(n.attribute("approximate"), nullptr);
      EXPECT_EQ(n.attribute("approximate")->s, "tanh");
      EXPECT_EQ(provenance(n).size(), form == 0 ? 8u : 9u);
      expect_same_results(original, m);
    }
  // Another constant in the cubic term: not GELU.
  ModelBuilder b = decomposed_tanh_gelu(17, 0);
  auto& g = *b.graph().mutable_initializer();
  for (int i = 0; i < g.size(); ++i)
    if (g[i].name() == "c") {
      g.erase(g.begin() + i);
      break;
    }
  b.initializer(scalar("c", 0.05f));
  apply(*load_model(b), cpu::fuse_gelu, false);
}

TEST(FuseGelu, NotWithOtherConstants) {
  ModelBuilder b = decomposed_gelu(20, 0);
  b.initializer(scalar("sqrt2", 1.5f));  // replaces the divisor: not GELU any more
  auto& g = *b.graph().mutable_initializer();
  for (int i = 0; i < g.size(); ++i)
    if (g[i].name() == "sqrt2") {
      g.erase(g.begin() + i);
      break;
    }
  apply(*load_model(b), cpu::fuse_gelu, false);
}

// --- fused reference kernels ------------------------------------------------------------

// The fused kernels of kernels/fused_reference.cpp alone (not oneDNN's), against
// the reference engine on the unfused graph: the same numbers, exactly.
TEST(FusedReferenceKernels, MatchTheUnfusedReferenceExactly) {
  KernelRegistry registry;
  cpu::register_fused_reference_kernels(registry);
  registry.add_all(reference_kernels());
  std::vector<std::pair<ModelBuilder, PassFn>> cases = {
      {conv_act("HardSigmoid"), cpu::fuse_conv_activation},
      {conv_act("Clip"), cpu::fuse_conv_activation},
      {gemm_act("LeakyRelu"), cpu::fuse_gemm_activation},
      {gemm_act("HardSigmoid"), cpu::fuse_gemm_activation},
      {matmul_bias_act(true, "Sigmoid"), cpu::fuse_matmul_bias_activation},
      {matmul_bias_act(true, ""), cpu::fuse_matmul_bias_activation},  // bias, no activation
      {matmul_bias_act(true, "Gelu", {5}, 20), cpu::fuse_matmul_bias_activation},
  };
  if (cpu::nchwc_block() != 0) cases.push_back({small_cnn(), cpu::nchwc_layout});
  for (auto& [builder, pass] : cases) {
    auto original = load_model(builder);
    auto m = apply(*original, pass, true);
    InputSpec spec;
    spec.seed = 3;
    auto inputs = make_inputs(*original, spec);
    auto want = make_reference_engine()->prepare(original)->run(inputs);
    ref::Interpreter interp(m, registry, uint64_t{1} << 30);
    auto got = interp.run(inputs, {});
    ASSERT_EQ(want.size(), got.size());
    for (size_t k = 0; k < want.size(); ++k) {
      const Tensor& a = want[k].second.tensor();
      const Tensor& b = got[k].second.tensor();
      ASSERT_EQ(a.shape(), b.shape());
      for (uint64_t i = 0; i < a.element_count(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
    }
  }
}

TEST(FusedReferenceKernels, BadActivationFailsCleanly) {
  KernelRegistry registry;
  cpu::register_fused_reference_kernels(registry);
  registry.add_all(reference_kernels());
  auto m = apply(*load_model(conv_act("LeakyRelu")), cpu::fuse_conv_activation, true);
  for (auto& a : m->graph.nodes[0].attributes)
    if (a.name == "activation_params") a.floats.clear();  // LeakyRelu needs its alpha
  InputSpec spec;
  ref::Interpreter interp(m, registry, uint64_t{1} << 30);
  EXPECT_THROW(interp.run(make_inputs(*m, spec), {}), Error);
  for (auto& a : m->graph.nodes[0].attributes)
    if (a.name == "activation") a.s = "Softsign";
  EXPECT_THROW(interp.run(make_inputs(*m, spec), {}), Error);
}

// --- the whole optimizer ------------------------------------------------------------------

TEST(Optimizer, EveryPassTogetherKeepsResultsAndNames) {
  ModelBuilder b = conv_bn(true, false);
  auto original = load_model(b);
  auto m = std::make_shared<Model>(*original);
  Diagnostics log;
  auto r = cpu::optimize(*m, CpuOptions{}, false, log);
  EXPECT_FALSE(r.applied.empty());
  expect_unique_names(*m);
  expect_same_results(original, m);
  // Capture mode keeps every original node.
  auto c = std::make_shared<Model>(*original);
  cpu::optimize(*c, CpuOptions{}, true, log);
  EXPECT_EQ(op_types(*c), op_types(*original));
}

}  // namespace

// --- fuse-sdpa -------------------------------------------------------------------------

namespace {

ModelBuilder decomposed_attention(int64_t opset, const std::string& scale_op, bool logits_read_twice = false) {
  ModelBuilder b(opset, 10);
  const std::vector<DimSpec> qd = {int64_t{2}, int64_t{3}, int64_t{5}, int64_t{8}};
  const std::vector<DimSpec> kd = {int64_t{2}, int64_t{3}, int64_t{7}, int64_t{8}};
  const std::vector<DimSpec> vd = {int64_t{2}, int64_t{3}, int64_t{7}, int64_t{4}};
  b.input("q", DataType::Float, qd);
  b.input("k", DataType::Float, kd);
  b.input("v", DataType::Float, vd);
  auto& t = b.node("Transpose", {"k"}, {"kt"}, "kt");
  attr_ints(t, "perm", {0, 1, 3, 2});
  b.node("MatMul", {"q", "kt"}, {"s"}, "qk");
  std::string logits = "s";
  if (!scale_op.empty()) {
    b.initializer(scalar("c", scale_op == "Div" ? std::sqrt(8.0f) : 0.3f));
    b.node(scale_op, {"s", "c"}, {"s2"}, "scale");
    logits = "s2";
  }
  b.node("Softmax", {logits}, {"p"}, "softmax");
  b.node("MatMul", {"p", "v"}, {"y"}, "pv");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}, int64_t{4}});
  if (logits_read_twice) b.output(logits, DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}, int64_t{7}});
  return b;
}

}  // namespace

TEST(FuseSdpa, DecomposedAttentionBecomesAttention) {
  for (const char* scale_op : {"Mul", "Div", ""}) {
    SCOPED_TRACE(scale_op);
    auto original = load_model(decomposed_attention(23, scale_op));
    auto m = apply(*original, cpu::fuse_sdpa, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"Attention"}));
    const Node& a = m->graph.nodes[0];
    EXPECT_EQ(a.inputs, (std::vector<std::string>{"q", "k", "v"}));
    const float want = std::string(scale_op) == "Div" ? 1 / std::sqrt(8.0f) : std::string(scale_op) == "Mul" ? 0.3f : 1;
    EXPECT_NEAR(a.attribute("scale")->f, want, 1e-7);
    EXPECT_EQ(provenance(a).size(), std::string(scale_op).empty() ? 4u : 5u);
    expect_same_results(original, m);
  }
}

TEST(FuseSdpa, NotBeforeOpset23NorWithSharedLogits) {
  apply(*load_model(decomposed_attention(22, "Mul")), cpu::fuse_sdpa, false);
  apply(*load_model(decomposed_attention(23, "Mul", true)), cpu::fuse_sdpa, false);
}
