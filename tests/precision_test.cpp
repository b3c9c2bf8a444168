// node_error_model: every node's own error in float16 from one run, the
// model's own values untouched; and the search ranking by it.
#include <gtest/gtest.h>

#include <cmath>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/diff.h"
#include "onnxscope/inputs.h"
#include "onnxscope/precision.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// y = (x + 1000) - 1000 then Relu: the Sub alone, fed x + 1000 rounded to
// float16 (a step of 0.5 there), is off by up to 0.25 on values of about 1;
// the Add alone is off by the same 0.25 on values of about 1000; Relu by a
// float16 rounding of its own values.
std::shared_ptr<const Model> cancelling() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{64}});
  b.initializer(make_float_tensor("k", {}, {1000.0f}));
  b.node("Add", {"x", "k"}, {"big"}, "add");
  b.node("Sub", {"big", "k"}, {"back"}, "sub");
  b.node("Relu", {"back"}, {"y"}, "relu");
  b.output("y", DataType::Float, {int64_t{64}});
  return load_model(b);
}

double max_abs_diff(const Value& a, const Value& b) { return diff_values(a, b, DiffTolerance{}).max_abs; }

TEST(NodeErrorModel, EachNodeAloneFromOneRunTheModelsValuesUntouched) {
  auto m = cancelling();
  InputSpec spec;
  spec.seed = 5;
  const NamedValues inputs = make_inputs(*m, spec);
  auto engine = make_cpu_engine(CpuOptions{});
  const Capture fp32 = capture_run(*engine, m, inputs);
  for (bool emulate : {true, false}) {
    SCOPED_TRACE(emulate ? "emulated" : "float16");
    std::vector<NodeAlone> alone;
    auto errors = node_error_model(*m, fp32, DataType::Float16, {"relu"}, emulate, nullptr, alone);
    ASSERT_EQ(alone.size(), 2u);  // relu is kept: not run again
    EXPECT_EQ(alone[0].node, "add");
    EXPECT_EQ(alone[1].node, "sub");
    const NamedValues outs = engine->prepare(errors)->run(inputs);
    std::map<std::string, Value> got(outs.begin(), outs.end());
    EXPECT_EQ(max_abs_diff(fp32.values.at("y"), got.at("y")), 0.0);  // the model's own output as it was
    const double add = max_abs_diff(fp32.values.at("big"), got.at(alone[0].outputs[0].second));
    const double sub = max_abs_diff(fp32.values.at("back"), got.at(alone[1].outputs[0].second));
    EXPECT_GT(sub, 0.1);
    EXPECT_LE(sub, 0.25);
    EXPECT_GT(add, 0.1);
    EXPECT_LE(add, 0.25);
  }
}

// The search keeps the Sub first: its own error is the largest for its values' scale.
TEST(NodeErrorModel, TheSearchKeepsTheNodeWithTheLargestOwnError) {
  auto m = cancelling();
  InputSpec spec;
  spec.seed = 5;
  auto engine = make_cpu_engine(CpuOptions{});
  PrecisionOptions o;
  o.tolerance.atol = 0.01;
  const PrecisionResult r = find_mixed_precision(m, make_inputs(*m, spec), *engine, o);
  ASSERT_FALSE(r.keep.empty());
  EXPECT_EQ(r.keep.front(), "sub");
  EXPECT_TRUE(r.met);
}

}  // namespace
