// The fuse-elementwise pass (cpu/passes/fuse_elementwise.cpp): which chains
// become one FusedElementwise node and which must not, what the node says
// (ops, operands, params), that the CPU engine leaves it off unless asked
// for device fusions, and that the fused node's plain kernel (run by the CPU
// engine when a device leaves one to it) gives exactly the unfused
// reference results.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "random_chain.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

std::shared_ptr<Model> fused(const Model& original, bool expect_change) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  cpu::PassContext ctx{&log};
  EXPECT_EQ(cpu::fuse_elementwise(*m, ctx), expect_change);
  return m;
}

// The reference on the original against the CPU engine (no rewrites of its
// own) on the fused model: the plain kernel runs each op's reference kernel,
// so the results are the same bits.
void expect_exact(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten, uint64_t seed = 3) {
  InputSpec spec;
  spec.seed = seed;
  const NamedValues in = make_inputs(*original, spec);
  const NamedValues want = make_reference_engine()->prepare(original)->run(in);
  CpuOptions o;
  o.opt_level = 0;
  const NamedValues got = make_cpu_engine(o)->prepare(rewritten)->run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].second.tensor();
    const Tensor& b = got[k].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << want[k].first << "[" << i << "]: " << x << " vs " << y;
    }
  }
}

// x [2, 3, 4] + r [3, 1] -> Relu -> LeakyRelu(0.3) * s [4] -> Selu: one chain of five.
ModelBuilder residual_chain() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  b.input("r", DataType::Float, {int64_t{3}, int64_t{1}});
  b.initializer(make_float_tensor("s", {4}, {0.5f, -1.f, 2.f, 1.5f}));
  b.node("Add", {"x", "r"}, {"sum"}, "add");
  b.node("Relu", {"sum"}, {"act"}, "relu");
  attr_float(b.node("LeakyRelu", {"act"}, {"leaky"}, "leaky"), "alpha", 0.3f);
  b.node("Mul", {"s", "leaky"}, {"scaled"}, "scale");
  b.node("Selu", {"scaled"}, {"y"}, "selu");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{4}});
  return b;
}

}  // namespace

TEST(FuseElementwise, AChainBecomesOneNodeThatSaysWhatItComputes) {
  auto original = load_model(residual_chain());
  auto m = fused(*original, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedElementwise"}));
  const Node& f = m->graph.nodes[0];
  EXPECT_EQ(f.domain, cpu::kCpuDomain);
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "r", "s"}));
  EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(f.attribute("ops")->strings, (std::vector<std::string>{"Add", "Relu", "LeakyRelu", "Mul", "Selu"}));
  // Places: x 0, r 1, s 2, then the results 3 (Add), 4 (Relu), 5 (LeakyRelu), 6 (Mul).
  EXPECT_EQ(f.attribute("operands")->ints, (std::vector<int64_t>{0, 1, 3, -1, 4, -1, 2, 5, 6, -1}));
  const std::vector<float> p = f.attribute("params")->floats;
  ASSERT_EQ(p.size(), 15u);
  EXPECT_FLOAT_EQ(p[6], 0.3f);                        // LeakyRelu alpha, as given
  EXPECT_FLOAT_EQ(p[12], 1.67326319217681884765625f);  // Selu alpha and gamma: the defaults
  EXPECT_FLOAT_EQ(p[13], 1.05070102214813232421875f);
  EXPECT_EQ(cpu::fused_from(f), (std::vector<std::string>{"add", "relu", "leaky", "scale", "selu"}));
  expect_exact(original, m);
}

TEST(FuseElementwise, NotAcrossAValueReadTwiceOrAGraphOutput) {
  {  // 'sum' is read by Relu and by the final Add: two chains would need it
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{4}});
    // Neg, not Exp, before the chain: the comparison is bit for bit, and the CPU
    // engine's Exp (oneDNN's) need not round its last bit as the reference's does.
    b.node("Neg", {"x"}, {"sum"}, "neg");
    b.node("Relu", {"sum"}, {"act"}, "relu");
    b.node("Add", {"act", "sum"}, {"y"}, "add");
    b.output("y", DataType::Float, {int64_t{4}});
    auto original = load_model(b);
    auto m = fused(*original, true);  // Relu + Add still chain: 'sum' comes in from outside
    EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Neg", "FusedElementwise"}));
    expect_exact(original, m);
  }
  {
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{4}});
    b.node("Exp", {"x"}, {"e"}, "exp");
    b.node("Relu", {"e"}, {"y"}, "relu");
    b.output("e", DataType::Float, {int64_t{4}});
    b.output("y", DataType::Float, {int64_t{4}});
    fused(*load_model(b), false);
  }
}

TEST(FuseElementwise, NotOtherTypesNorUnknownAttributes) {
  {
    ModelBuilder b(17);
    b.input("x", DataType::Int32, {int64_t{4}});
    b.node("Add", {"x", "x"}, {"s"}, "add");
    b.node("Abs", {"s"}, {"y"}, "abs");
    b.output("y", DataType::Int32, {int64_t{4}});
    fused(*load_model(b), false);
  }
  {  // Gelu of an approximation the contract does not know stays itself
    ModelBuilder b(20);
    b.input("x", DataType::Float, {int64_t{4}});
    b.node("Exp", {"x"}, {"e"}, "exp");
    attr_string(b.node("Gelu", {"e"}, {"y"}, "gelu"), "approximate", "cubic");
    b.output("y", DataType::Float, {int64_t{4}});
    fused(*load_model(b), false);
  }
}

TEST(FuseElementwise, ChainsStopAtEightOpsAndFourInputs) {
  {
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{5}});
    std::string v = "x";
    for (int i = 0; i < 10; ++i) {
      const std::string out = i == 9 ? "y" : "t" + std::to_string(i);
      b.node(i % 2 ? "Sigmoid" : "Tanh", {v}, {out}, "op" + std::to_string(i));
      v = out;
    }
    b.output("y", DataType::Float, {int64_t{5}});
    auto original = load_model(b);
    auto m = fused(*original, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedElementwise", "FusedElementwise"}));
    EXPECT_EQ(m->graph.nodes[0].attribute("ops")->strings.size(), 8u);
    EXPECT_EQ(m->graph.nodes[1].attribute("ops")->strings.size(), 2u);
    expect_exact(original, m);
  }
  {  // x0 + x1 + x2 + x3 + x4: the first three Adds read four inputs, the last one is left
    ModelBuilder b(17);
    for (int i = 0; i < 5; ++i) b.input("x" + std::to_string(i), DataType::Float, {int64_t{3}});
    b.node("Add", {"x0", "x1"}, {"a1"}, "add1");
    b.node("Add", {"a1", "x2"}, {"a2"}, "add2");
    b.node("Add", {"x3", "a2"}, {"a3"}, "add3");
    b.node("Add", {"a3", "x4"}, {"y"}, "add4");
    b.output("y", DataType::Float, {int64_t{3}});
    auto original = load_model(b);
    auto m = fused(*original, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedElementwise", "Add"}));
    EXPECT_EQ(m->graph.nodes[0].inputs.size(), 4u);
    expect_exact(original, m);
  }
}

// The CPU engine keeps its own kernels: the pass runs only with device
// fusions asked for (as the offload engine asks), and not when disabled.
TEST(FuseElementwise, OnlyForDevices) {
  auto original = load_model(residual_chain());
  auto run = [&](CpuOptions o) {
    auto m = std::make_shared<Model>(*original);
    Diagnostics log;
    cpu::optimize(*m, o, false, log);
    return op_types(*m);
  };
  CpuOptions cpu;
  EXPECT_EQ(run(cpu).size(), 5u);
  CpuOptions device;
  device.device_fusions = true;
  EXPECT_EQ(run(device), (std::vector<std::string>{"FusedElementwise"}));
  device.disabled_passes.insert("fuse-elementwise");
  EXPECT_EQ(run(device).size(), 5u);
}

// A Gradient node differentiates the graph as it runs, and has no rule for
// a fused node: such a graph keeps its nodes (the upstream suite's
// test_gradient_of_add_and_mul).
TEST(FuseElementwise, NotInAGraphAGradientNodeDifferentiates) {
  ModelBuilder b(17);
  b.opset("ai.onnx.preview.training", 1);
  b.input("a", DataType::Float, {int64_t{3}});
  b.input("b", DataType::Float, {int64_t{3}});
  b.node("Add", {"a", "b"}, {"c"}, "add");
  b.node("Mul", {"c", "a"}, {"y"}, "mul");
  auto& g = b.node("Gradient", {"a", "b"}, {"dy_da", "dy_db"}, "gradient", "ai.onnx.preview.training");
  auto* xs = g.add_attribute();
  xs->set_name("xs");
  xs->set_type(onnx::AttributeProto::STRINGS);
  xs->add_strings("a");
  xs->add_strings("b");
  attr_string(g, "y", "y");
  b.output("y", DataType::Float, {int64_t{3}});
  b.output_untyped("dy_da");
  b.output_untyped("dy_db");
  auto m = load_model(b);
  CpuOptions device;
  device.device_fusions = true;
  Diagnostics log;
  cpu::optimize(*m, device, false, log);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Add", "Mul", "Gradient"}));
}

// Random chains (support/random_chain.h): one fused node whose plain kernel
// gives the unfused reference's bits.
TEST(FuseElementwise, RandomChainsKeepTheReferenceBits) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    auto original = load_model(random_elementwise_chain(rng));
    auto m = fused(*original, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedElementwise"}));
    expect_exact(original, m, static_cast<uint64_t>(trial));
  }
}
