// The passes that take ONNX Runtime's own operators into the CPU engine's terms
// (expand-contrib-gelu, expand-contrib-fused), and its quantizer's dynamic
// linear layers into its optimizer's (fuse-matmul-integer-to-float): what
// they rewrite, what they leave, and the same results.
#include <gtest/gtest.h>

#include <cstring>

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

// ONNX Runtime's optimizer output: MatMul -> com.microsoft BiasGelu (erf)
// and MatMul -> FastGelu with and without its bias (tanh). expand-contrib-gelu
// makes each Add + Gelu, which the MatMul and its bias then absorb. A graph
// without them is left as it was (the pass once emptied such a graph).
TEST(ExpandContribGelu, BiasGeluAndFastGeluBecomeAddAndGeluThenFuseIntoTheMatMul) {
  for (const char* op : {"BiasGelu", "FastGelu", "FastGelu-no-bias"}) {
    SCOPED_TRACE(op);
    const bool with_bias = std::string(op) != "FastGelu-no-bias";
    for (int64_t opset : {int64_t{17}, int64_t{20}}) {
      ModelBuilder b(opset);
      b.opset("com.microsoft", 1);
      b.input("a", DataType::Float, {int64_t{3}, int64_t{8}});
      b.initializer(weights("w", {8, 7}, 61));
      b.initializer(weights("bias", {7}, 62));
      b.node("MatMul", {"a", "w"}, {"x"}, "mm");
      const std::string name = with_bias ? op : "FastGelu";
      b.node(name, with_bias ? std::vector<std::string>{"x", "bias"} : std::vector<std::string>{"x"}, {"y"}, "gelu",
             "com.microsoft");
      b.output("y", DataType::Float, {int64_t{3}, int64_t{7}});
      auto original = load_model(b);
      auto m = apply(*original, cpu::expand_contrib_gelu, true);
      ASSERT_EQ(op_types(*m), with_bias ? (std::vector<std::string>{"MatMul", "Add", "Gelu"})
                                        : (std::vector<std::string>{"MatMul", "Gelu"}));
      const Node& gelu = m->graph.nodes.back();
      EXPECT_EQ(gelu.domain, opset >= 20 ? "" : "onnxscope.cpu");
      EXPECT_EQ(gelu.attribute("approximate") ? gelu.attribute("approximate")->s : "none",
                name == "FastGelu" ? "tanh" : "none");
      expect_same_results(original, m);
      auto fused = apply(*m, cpu::fuse_matmul_bias_activation, true);
      ASSERT_EQ(op_types(*fused), (std::vector<std::string>{"FusedMatMul"}));
      EXPECT_EQ(fused->graph.nodes[0].attribute("activation")->s, "Gelu");
      expect_same_results(original, fused);
    }
  }
  ModelBuilder plain(17);
  plain.input("x", DataType::Float, {int64_t{3}});
  plain.node("Relu", {"x"}, {"y"}, "relu");
  plain.output("y", DataType::Float, {int64_t{3}});
  auto untouched = apply(*load_model(plain), cpu::expand_contrib_gelu, false);
  ASSERT_EQ(op_types(*untouched), (std::vector<std::string>{"Relu"}));
  EXPECT_EQ(untouched->graph.nodes[0].name, "relu");
}

// ONNX Runtime's saved optimized models: com.microsoft QuickGelu after a Conv
// (its rewrite of the exporter's SiLU, 49 of them in EfficientNet-B0) and
// com.microsoft Gelu. QuickGelu at alpha 1 becomes Sigmoid + Mul, the SiLU
// that fuse-conv-activation then takes into the Conv; at another alpha a Mul
// first; Gelu becomes the engine's Gelu.
TEST(ExpandContribGelu, QuickGeluBecomesSiluAndFusesIntoTheConvGeluBecomesGelu) {
  for (float alpha : {1.0f, 1.702f}) {
    SCOPED_TRACE(alpha);
    ModelBuilder b(17);
    b.opset("com.microsoft", 1);
    b.input("x", DataType::Float, {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{6}});
    b.initializer(weights("w", {4, 3, 3, 3}, 71));
    b.node("Conv", {"x", "w"}, {"c"}, "conv");
    b.node("Gelu", {"x"}, {"g"}, "gelu", "com.microsoft");
    attr_float(b.node("QuickGelu", {"c"}, {"y"}, "qg", "com.microsoft"), "alpha", alpha);
    b.output("g", DataType::Float, {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{6}});
    b.output("y", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{4}, int64_t{4}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::expand_contrib_gelu, true);
    ASSERT_EQ(op_types(*m), alpha == 1.0f ? (std::vector<std::string>{"Conv", "Gelu", "Sigmoid", "Mul"})
                                          : (std::vector<std::string>{"Conv", "Gelu", "Mul", "Sigmoid", "Mul"}));
    EXPECT_EQ(m->graph.nodes[1].domain, "onnxscope.cpu");
    expect_same_results(original, m);
    if (alpha == 1.0f) {
      auto fused = apply(*m, cpu::fuse_conv_activation, true);
      ASSERT_EQ(op_types(*fused), (std::vector<std::string>{"Gelu", "FusedConv"}));
      expect_same_results(original, fused);
    }
  }
}

// A FusedConv reading another's output: ONNX Runtime saves no type for the
// values its contrib nodes make, so the second's X is untyped; its float
// weights say the node is float, and both become the engine's (regnet_y_400mf
// saved so ran 49 of its 65 FusedConvs on the reference's kernels).
TEST(ExpandContribFused, AFusedConvAfterAFusedConvIsTheEnginesToo) {
  ModelBuilder b(17);
  b.opset("com.microsoft", 1);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{6}});
  b.initializer(weights("w1", {4, 3, 3, 3}, 81));
  b.initializer(weights("w2", {2, 4, 1, 1}, 82));
  attr_string(b.node("FusedConv", {"x", "w1"}, {"a"}, "c1", "com.microsoft"), "activation", "Relu");
  attr_string(b.node("FusedConv", {"a", "w2"}, {"y"}, "c2", "com.microsoft"), "activation", "Relu");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{4}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::expand_contrib_fused, true);
  ASSERT_EQ(m->graph.nodes.size(), 2u);
  for (const Node& n : m->graph.nodes) EXPECT_EQ(n.domain, "onnxscope.cpu") << n.name;
  expect_same_results(original, m);
}

// ONNX Runtime's saved optimized models: com.microsoft FusedConv becomes the
// engine's FusedConv (same attributes), unless it has a sum input Z;
// FusedGemm the engine's FusedGemm for the activations it has;
// FusedMatMul becomes MatMul with Transposes for transA / transB and a Mul
// for alpha, unless transBatch is set (the reference runs those).
TEST(ExpandContribFused, FusedConvAndFusedMatMulInTheEnginesTerms) {
  {
    ModelBuilder b(17);
    b.opset("com.microsoft", 1);
    b.input("x", DataType::Float, {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{6}});
    b.input("z", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{6}, int64_t{6}});
    b.initializer(weights("w", {4, 3, 3, 3}, 71));
    b.initializer(weights("bias", {4}, 72));
    auto& c1 = b.node("FusedConv", {"x", "w", "bias"}, {"c"}, "conv", "com.microsoft");
    attr_ints(c1, "pads", {1, 1, 1, 1});
    attr_string(c1, "activation", "LeakyRelu");
    attr_floats(c1, "activation_params", {0.2f});
    auto& c2 = b.node("FusedConv", {"x", "w", "bias", "z"}, {"d"}, "conv_sum", "com.microsoft");
    attr_ints(c2, "pads", {1, 1, 1, 1});
    attr_string(c2, "activation", "Relu");
    b.node("Add", {"c", "d"}, {"y"}, "add");
    b.output("y", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{6}, int64_t{6}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::expand_contrib_fused, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv", "FusedConv", "Add"}));
    EXPECT_EQ(m->graph.nodes[0].domain, "onnxscope.cpu");
    EXPECT_EQ(m->graph.nodes[1].domain, "com.microsoft");  // the sum input: the reference's
    expect_same_results(original, m);
  }
  // FusedGemm: the engine's own, its activation_alpha / _beta as activation_params;
  // an activation the engine's FusedGemm lacks (Elu) stays with the reference.
  for (const char* act : {"Relu", "LeakyRelu", "HardSigmoid", "Elu"}) {
    SCOPED_TRACE(act);
    ModelBuilder b(17);
    b.opset("com.microsoft", 1);
    b.input("a", DataType::Float, {int64_t{3}, int64_t{5}});
    b.initializer(weights("w", {4, 5}, 81));
    b.initializer(weights("c", {4}, 82));
    auto& n = b.node("FusedGemm", {"a", "w", "c"}, {"y"}, "gemm", "com.microsoft");
    attr_int(n, "transB", 1);
    attr_float(n, "alpha", 0.5f);
    attr_string(n, "activation", act);
    if (std::string(act) != "Relu") attr_float(n, "activation_alpha", 0.3f);
    if (std::string(act) == "HardSigmoid") attr_float(n, "activation_beta", 0.4f);
    b.output("y", DataType::Float, {int64_t{3}, int64_t{4}});
    auto original = load_model(b);
    const bool engine_has_it = std::string(act) != "Elu";
    auto m = apply(*original, cpu::expand_contrib_fused, engine_has_it);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedGemm"}));
    EXPECT_EQ(m->graph.nodes[0].domain, engine_has_it ? "onnxscope.cpu" : "com.microsoft");
    if (engine_has_it && std::string(act) != "Relu") {
      EXPECT_NE(m->graph.nodes[0].attribute("activation_params"), nullptr);
    }
    expect_same_results(original, m);
  }
  for (int form = 0; form < 4; ++form) {
    SCOPED_TRACE(form);
    const bool ta = form & 1, tb = form & 2;
    ModelBuilder b(17);
    b.opset("com.microsoft", 1);
    b.input("a", DataType::Float, ta ? std::vector<DimSpec>{int64_t{2}, int64_t{5}, int64_t{3}} : std::vector<DimSpec>{int64_t{2}, int64_t{3}, int64_t{5}});
    b.initializer(weights("bm", tb ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{5, 4}, 73 + form));
    auto& n = b.node("FusedMatMul", {"a", "bm"}, {"y"}, "fm", "com.microsoft");
    attr_int(n, "transA", ta);
    attr_int(n, "transB", tb);
    if (form != 0) attr_float(n, "alpha", 0.125f);
    b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::expand_contrib_fused, true);
    std::vector<std::string> want;
    if (ta) want.push_back("Transpose");
    if (tb) want.push_back("Transpose");
    want.push_back("MatMul");
    if (form != 0) want.push_back("Mul");
    EXPECT_EQ(op_types(*m), want);
    expect_same_results(original, m);
  }
  ModelBuilder batched(17);  // transBatchA: left to the reference kernel
  batched.opset("com.microsoft", 1);
  batched.input("a", DataType::Float, {int64_t{3}, int64_t{2}, int64_t{5}});
  batched.input("b", DataType::Float, {int64_t{2}, int64_t{5}, int64_t{4}});
  attr_int(batched.node("FusedMatMul", {"a", "b"}, {"y"}, "fm", "com.microsoft"), "transBatchA", 1);
  batched.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  auto kept = apply(*load_model(batched), cpu::expand_contrib_fused, false);
  ASSERT_EQ(op_types(*kept), (std::vector<std::string>{"FusedMatMul"}));
  EXPECT_EQ(kept->graph.nodes[0].name, "fm");
}

// quantize_dynamic's linear layer: DynamicQuantizeLinear, Mul(scale, w_scale),
// MatMulInteger, Cast, Mul [, Add(bias)]. `layers` linear layers read the
// same X (one DynamicQuantizeLinear, as BERT's Q, K and V projections);
// w_scale one value or per column; the Mul and Add operands in either order
// (flip); `bad` breaks one condition: 1 weights that are a graph input, 2 a
// w_scale that is one, 3 the Cast's result read twice.
ModelBuilder dynamic_linear(int layers, bool per_column, bool bias, bool flip, DataType wt, int bad = 0) {
  ModelBuilder b(14);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{5}, int64_t{16}});
  b.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"}, "dql");
  Rng rng(91);
  for (int l = 0; l < layers; ++l) {
    const std::string p = "l" + std::to_string(l) + "_";
    if (bad == 1) b.input(p + "w", wt, {int64_t{16}, int64_t{6}});
    else b.initializer(raw(p + "w", bytes(rng, wt, {16, 6}, 1, 255)));
    if (bad == 2) b.input(p + "ws", DataType::Float, {});
    else b.initializer(per_column ? weights(p + "ws", {6}, 92 + l, 0.01f, 0.05f) : scalar(p + "ws", 0.03f));
    b.initializer(raw(p + "wz", bytes(rng, wt, {}, 120, 136)));
    b.node("Mul", flip ? std::vector<std::string>{p + "ws", "xs"} : std::vector<std::string>{"xs", p + "ws"}, {p + "s"}, p + "scales");
    b.node("MatMulInteger", {"xq", p + "w", "xz", p + "wz"}, {p + "q"}, p + "mmi");
    auto& cast = b.node("Cast", {p + "q"}, {p + "c"}, p + "cast");
    attr_int(cast, "to", 1);
    b.node("Mul", flip ? std::vector<std::string>{p + "s", p + "c"} : std::vector<std::string>{p + "c", p + "s"}, {p + "y"}, p + "mul");
    std::string out = p + "y";
    if (bias) {
      b.initializer(weights(p + "bias", {6}, 95 + l));
      b.node("Add", flip ? std::vector<std::string>{p + "bias", p + "y"} : std::vector<std::string>{p + "y", p + "bias"}, {p + "out"}, p + "add");
      out = p + "out";
    }
    b.output(out, DataType::Float, {int64_t{2}, int64_t{5}, int64_t{6}});
    if (bad == 3 && l == 0) {
      b.node("Neg", {p + "c"}, {p + "n"}, p + "neg");
      b.output(p + "n", DataType::Float, {int64_t{2}, int64_t{5}, int64_t{6}});
    }
  }
  return b;
}

// The reference on the rewritten model gives the original's bits (the
// contrib operators' arithmetic is the unfused nodes').
void expect_same_reference_bits(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten) {
  InputSpec spec;
  spec.seed = 5;
  auto inputs = make_inputs(*original, spec);
  auto want = make_reference_engine()->prepare(original)->run(inputs);
  auto got = make_reference_engine()->prepare(rewritten)->run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].second.tensor();
    const Tensor& b = got[k].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    ASSERT_EQ(a.dtype(), b.dtype());
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0) << want[k].first;
  }
}

TEST(FuseMatMulIntegerToFloat, QuantizeDynamicLinearLayers) {
  for (int layers : {1, 3})
    for (int form = 0; form < 8; ++form) {
      const bool per_column = form & 1, bias = form & 2, flip = form & 4;
      const DataType wt = form % 3 ? DataType::Int8 : DataType::Uint8;
      SCOPED_TRACE(std::to_string(layers) + " layers, form " + std::to_string(form));
      auto original = load_model(dynamic_linear(layers, per_column, bias, flip, wt));
      auto m = apply(*original, cpu::fuse_matmul_integer_to_float, true);
      std::vector<std::string> want;
      if (layers == 1) {
        want = {"DynamicQuantizeMatMul"};  // the DynamicQuantizeLinear feeds it alone: taken in
      } else {
        want = {"DynamicQuantizeLinear"};
        for (int l = 0; l < layers; ++l) want.push_back("MatMulIntegerToFloat");
      }
      ASSERT_EQ(op_types(*m), want);
      const Node& f = m->graph.nodes.back();
      EXPECT_EQ(f.domain, "com.microsoft");
      EXPECT_EQ(m->opset_version("com.microsoft"), 1);
      const std::string p = "l" + std::to_string(layers - 1) + "_";
      std::vector<std::string> from = {p + "scales", p + "mmi", p + "cast", p + "mul"};
      if (bias) from.push_back(p + "add");
      if (layers == 1) from.insert(from.begin(), "dql");
      EXPECT_EQ(provenance(f), from);
      EXPECT_EQ(f.inputs.back(), bias ? p + "bias" : p + "wz");
      expect_same_reference_bits(original, m);
      expect_same_results(original, m);
    }
  for (int bad = 1; bad <= 3; ++bad) {
    SCOPED_TRACE("bad " + std::to_string(bad));
    auto m = apply(*load_model(dynamic_linear(1, false, true, false, DataType::Int8, bad)), cpu::fuse_matmul_integer_to_float,
                   false);
    EXPECT_EQ(m->graph.nodes.size(), bad == 3 ? 7u : 6u);
  }
}

}  // namespace
