// The fuse-add-layernorm pass (cpu/passes/fuse_add_layernorm.cpp): a
// residual Add whose sum only a LayerNormalization reads becomes one
// FusedAddLayerNorm. Checked: what fires and what must not (a broadcast
// operand, a shape not known to match, a sum read elsewhere, LayerNorm's
// Mean output asked for), the node it makes, the plain kernel's bits against
// the unfused reference, and cuda-sim running it on the device.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/passes/passes.h"
#include "compare_outputs.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

struct Options {
  std::vector<DimSpec> b_shape = {std::string("batch"), int64_t{4}, int64_t{8}};
  bool bias = true;
  bool sum_read_twice = false;
  bool mean_output = false;
  int64_t opset = 17;
};

// y = LayerNormalization(Add(a, b), gamma, beta), a [batch, 4, 8].
ModelBuilder add_ln(const Options& o) {
  ModelBuilder b(o.opset);
  const std::vector<DimSpec> shape = {std::string("batch"), int64_t{4}, int64_t{8}};
  b.input("a", DataType::Float, shape);
  b.input("b", DataType::Float, o.b_shape);
  b.initializer(make_float_tensor("gamma", {8}, {1.f, 0.5f, 2.f, -1.f, 1.5f, 0.25f, 1.f, 3.f}));
  b.initializer(make_float_tensor("beta", {8}, {0.f, 0.1f, -0.2f, 0.3f, 0.f, 1.f, -1.f, 0.5f}));
  b.node("Add", {"a", "b"}, {"sum"}, "add");
  auto& ln = b.node("LayerNormalization", o.bias ? std::vector<std::string>{"sum", "gamma", "beta"} : std::vector<std::string>{"sum", "gamma"},
                    o.mean_output ? std::vector<std::string>{"y", "mean"} : std::vector<std::string>{"y"}, "ln");
  attr_float(ln, "epsilon", 1e-3f);
  b.output("y", DataType::Float, shape);
  if (o.mean_output) b.output("mean", DataType::Float, {std::string("batch"), int64_t{4}, int64_t{1}});
  if (o.sum_read_twice) {
    b.node("Neg", {"sum"}, {"n"}, "second_reader");
    b.output("n", DataType::Float, shape);
  }
  return b;
}

std::shared_ptr<Model> fused(const Model& original, bool expect_change) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  cpu::PassContext ctx{&log};
  EXPECT_EQ(cpu::fuse_add_layernorm(*m, ctx), expect_change);
  return m;
}

NamedValues inputs_for(const Model& m) {
  InputSpec spec;
  spec.seed = 4;
  spec.dims["batch"] = 3;
  return make_inputs(m, spec);
}


}  // namespace

TEST(FuseAddLayerNorm, AResidualSumNormalizedBecomesOneNode) {
  for (bool bias : {true, false}) {
    SCOPED_TRACE(bias);
    Options o;
    o.bias = bias;
    auto original = load_model(add_ln(o));
    auto m = fused(*original, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedAddLayerNorm"}));
    const Node& f = m->graph.nodes[0];
    EXPECT_EQ(f.domain, cpu::kCpuDomain);
    EXPECT_EQ(f.inputs, bias ? (std::vector<std::string>{"a", "b", "gamma", "beta"}) : (std::vector<std::string>{"a", "b", "gamma"}));
    EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
    EXPECT_FLOAT_EQ(f.attribute("epsilon")->f, 1e-3f);
    EXPECT_EQ(cpu::fused_from(f), (std::vector<std::string>{"add", "ln"}));
    // The plain kernel (the CPU engine without rewrites) gives the reference's bits.
    const NamedValues in = inputs_for(*original);
    CpuOptions co;
    co.opt_level = 0;
    expect_float_outputs(make_reference_engine()->prepare(original)->run(in), make_cpu_engine(co)->prepare(m)->run(in), 0);
  }
}

TEST(FuseAddLayerNorm, NotWhenTheSumIsNotPrivateOrTheShapesMayDiffer) {
  Options o;
  o.b_shape = {int64_t{4}, int64_t{8}};  // broadcast over the batch
  fused(*load_model(add_ln(o)), false);
  o = {};
  o.b_shape = {std::string("other"), int64_t{4}, int64_t{8}};  // may or may not be the batch
  fused(*load_model(add_ln(o)), false);
  o = {};
  o.sum_read_twice = true;
  fused(*load_model(add_ln(o)), false);
  o = {};
  o.mean_output = true;
  fused(*load_model(add_ln(o)), false);
}

// The CPU engine leaves the pass off; cuda-sim runs the fused node on the device.
TEST(FuseAddLayerNorm, OnlyDeviceEnginesRunIt) {
  auto original = load_model(add_ln({}));
  Model cpu_optimized = *original;
  Diagnostics log;
  cpu::optimize(cpu_optimized, CpuOptions{}, false, log);
  EXPECT_EQ(op_types(cpu_optimized), (std::vector<std::string>{"Add", "LayerNormalization"}));
  auto prepared = make_engine("cuda-sim")->prepare(original);
  const std::string p = prepared->placement();
  EXPECT_NE(p.find("1 of 1 nodes on the device"), std::string::npos) << p;
  EXPECT_NE(p.find("(FusedAddLayerNorm)"), std::string::npos) << p;
  const NamedValues in = inputs_for(*original);
  expect_float_outputs(make_reference_engine()->prepare(original)->run(in), prepared->run(in), 1e-5);
}

// A FusedAddLayerNorm written into a model by hand with operands of two
// shapes: refused at the node by the plain kernel and by the device alike.
TEST(FuseAddLayerNorm, OperandsOfTwoShapesAreRefusedEverywhere) {
  ModelBuilder b(17);
  b.opset("onnxscope.cpu", 1);
  b.input("a", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{8}});
  b.input("b", DataType::Float, {int64_t{4}, int64_t{8}});
  b.initializer(make_float_tensor("gamma", {8}, std::vector<float>(8, 1.f)));
  b.node("FusedAddLayerNorm", {"a", "b", "gamma"}, {"y"}, "fused", "onnxscope.cpu");
  b.output_untyped("y");
  auto m = load_model(b);
  InputSpec spec;
  const NamedValues in = make_inputs(*m, spec);
  CpuOptions co;
  co.opt_level = 0;
  for (const char* engine : {"cpu", "cuda-sim"}) {
    SCOPED_TRACE(engine);
    try {
      (std::string(engine) == "cpu" ? make_cpu_engine(co) : make_engine(engine))->prepare(m)->run(in);
      ADD_FAILURE() << "not refused";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("fused"), std::string::npos) << what;
      EXPECT_NE(what.find("differ in shape"), std::string::npos) << what;
    }
  }
}
