// The fuse-conv-residual pass (cpu/passes/fuse_conv_residual.cpp): a Conv
// whose output a residual Add (or a two-input Sum) alone reads, and the Relu
// that alone reads the sum, become one FusedConv with a sum input Z. Checked:
// which patterns fire and which must not, what the node says, that the plain
// kernel (the CPU engine's, for a device that leaves the node to it) gives
// the unfused reference's bits, that the CPU engine leaves the pass off, and
// that cuda-sim runs the fused node (Z added in the epilogue, or broadcast
// when its shape is not the output's) as the reference runs the original.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/passes/passes.h"
#include "compare_outputs.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/cuda.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

onnx::TensorProto weights(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(gen);
  return make_float_tensor(name, dims, v);
}

struct Block {
  bool relu = true;
  bool sum = false;                // the residual as Sum(c, r), not Add(r, c)
  bool bias = true;
  std::vector<int64_t> r_shape = {2, 4, 5, 5};
  bool conv_out_read_twice = false;
  bool conv_out_is_output = false;
  bool sum_is_output = false;
};

// y = Relu(Add(r, Conv(x, W, B))): a residual block's end.
ModelBuilder block(const Block& o) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{5}, int64_t{5}});
  std::vector<DimSpec> r_dims(o.r_shape.begin(), o.r_shape.end());
  b.input("r", DataType::Float, r_dims);
  b.initializer(weights("W", {4, 3, 3, 3}, 1));
  if (o.bias) b.initializer(weights("B", {4}, 2));
  auto& c = b.node("Conv", o.bias ? std::vector<std::string>{"x", "W", "B"} : std::vector<std::string>{"x", "W"}, {"c"}, "conv");
  attr_ints(c, "pads", {1, 1, 1, 1});
  if (o.sum) b.node("Sum", {"c", "r"}, {"s"}, "add");
  else b.node("Add", {"r", "c"}, {"s"}, "add");
  const std::vector<DimSpec> out = {int64_t{2}, int64_t{4}, int64_t{5}, int64_t{5}};
  if (o.relu) {
    b.node("Relu", {"s"}, {"y"}, "relu");
    b.output("y", DataType::Float, out);
  } else {
    b.output("s", DataType::Float, out);
  }
  if (o.sum_is_output && o.relu) b.output("s", DataType::Float, out);
  if (o.conv_out_is_output) b.output("c", DataType::Float, out);
  if (o.conv_out_read_twice) {
    b.node("Neg", {"c"}, {"n"}, "second_reader");
    b.output("n", DataType::Float, out);
  }
  return b;
}

std::shared_ptr<Model> fused(const Model& original, bool expect_change) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  cpu::PassContext ctx{&log};
  EXPECT_EQ(cpu::fuse_conv_residual(*m, ctx), expect_change);
  return m;
}

NamedValues reference_run(const std::shared_ptr<Model>& m, const NamedValues& in) {
  return make_reference_engine()->prepare(m)->run(in);
}


// The plain kernel (CPU engine, no rewrites of its own) on the fused model
// gives the reference's bits on the original.
void expect_exact(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten) {
  InputSpec spec;
  spec.seed = 5;
  const NamedValues in = make_inputs(*original, spec);
  CpuOptions o;
  o.opt_level = 0;
  expect_float_outputs(reference_run(original, in), make_cpu_engine(o)->prepare(rewritten)->run(in), 0);
}

}  // namespace

TEST(FuseConvResidual, ABlockEndBecomesOneFusedConvWithASumInput) {
  auto original = load_model(block({}));
  auto m = fused(*original, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv"}));
  const Node& f = m->graph.nodes[0];
  EXPECT_EQ(f.domain, cpu::kCpuDomain);
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "W", "B", "r"}));
  EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(f.attribute("activation")->s, "Relu");
  EXPECT_EQ(f.attribute("pads")->ints, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(cpu::fused_from(f), (std::vector<std::string>{"conv", "add", "relu"}));
  expect_exact(original, m);
}

TEST(FuseConvResidual, WithoutAReluOrABiasAndAsASum) {
  Block o;
  o.relu = false;
  o.bias = false;
  o.sum = true;
  auto original = load_model(block(o));
  auto m = fused(*original, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv"}));
  const Node& f = m->graph.nodes[0];
  EXPECT_EQ(f.inputs, (std::vector<std::string>{"x", "W", "", "r"}));
  EXPECT_EQ(f.attribute("activation")->s, "");
  expect_exact(original, m);
}

// A residual that broadcasts ([4, 1, 1] against [2, 4, 5, 5]) keeps the
// Add's meaning.
TEST(FuseConvResidual, ABroadcastResidualKeepsTheAddsMeaning) {
  Block o;
  o.r_shape = {4, 1, 1};
  auto original = load_model(block(o));
  auto m = fused(*original, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv"}));
  expect_exact(original, m);
}

TEST(FuseConvResidual, NotWhenAnIntermediateIsReadElsewhere) {
  Block o;
  o.conv_out_read_twice = true;
  fused(*load_model(block(o)), false);
  o = {};
  o.conv_out_is_output = true;
  fused(*load_model(block(o)), false);
  o = {};
  o.sum_is_output = true;  // the Add still fuses; the Relu stays on its own
  auto original = load_model(block(o));
  auto m = fused(*original, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"FusedConv", "Relu"}));
  EXPECT_EQ(m->graph.nodes[0].attribute("activation")->s, "");
  expect_exact(original, m);
}

// The CPU engine does not run it (its blocked layout adds residuals its own
// way); the device engines do: cuda-sim fuses each block end, and its
// results are the reference's (the sum in the epilogue, or broadcast).
TEST(FuseConvResidual, OnlyDeviceEnginesRunIt) {
  for (const std::vector<int64_t>& r_shape : {std::vector<int64_t>{2, 4, 5, 5}, std::vector<int64_t>{4, 1, 1}}) {
    SCOPED_TRACE(r_shape.size());
    Block o;
    o.r_shape = r_shape;
    auto original = load_model(block(o));
    Diagnostics log;
    Model cpu_optimized = *original;
    cpu::optimize(cpu_optimized, CpuOptions{}, false, log);
    for (const Node& n : cpu_optimized.graph.nodes)
      EXPECT_FALSE(n.op_type == "FusedConv" && n.inputs.size() > 3) << "the CPU engine added a sum input";

    auto prepared = make_engine("cuda-sim")->prepare(original);
    const std::string p = prepared->placement();
    EXPECT_NE(p.find("1 of 1 nodes on the device"), std::string::npos) << p;
    EXPECT_NE(p.find("device  conv_residual (FusedConv)"), std::string::npos) << p;
    InputSpec spec;
    spec.seed = 9;
    const NamedValues in = make_inputs(*original, spec);
    const NamedValues got = prepared->run(in);
    expect_float_outputs(reference_run(original, in), got, 1e-5);
  }
}
