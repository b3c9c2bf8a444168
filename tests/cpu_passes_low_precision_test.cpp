// compute-low-precision-in-float32: float16/bfloat16 nodes compute in float32
// between Casts; data movement keeps its type; every value of the model keeps
// its name and type; results within one rounding of the reference's.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <map>

#include "cpu/kernels/kernels.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"
#include "pass_test_util.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

using namespace onnxscope::test::passes;

onnx::TensorProto low_weights(const std::string& name, DataType t, const std::vector<int64_t>& dims, uint32_t seed) {
  std::string raw;
  for (float v : random_floats(static_cast<size_t>(product(dims)), seed)) {
    const uint16_t h = t == DataType::BFloat16 ? float_to_bfloat16(v) : float_to_half(v);
    raw.append(reinterpret_cast<const char*>(&h), 2);
  }
  return make_tensor_raw(name, t, dims, raw);
}

double as_double(const Tensor& t, uint64_t i) {
  uint16_t h;
  std::memcpy(&h, t.raw() + i * 2, 2);
  return t.dtype() == DataType::BFloat16 ? bfloat16_to_float(h) : half_to_float(h);
}

// The original on the reference against the rewritten model on the cpu
// engine (no further rewrites): the same outputs, types and shapes, each value
// within one unit in the last place of the low type (the float32 kernel's
// result rounded once more).
void expect_within_one_rounding(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten) {
  InputSpec spec;
  spec.seed = 3;
  const NamedValues inputs = make_inputs(*original, spec);
  const NamedValues want = make_reference_engine()->prepare(original)->run(inputs);
  CpuOptions o;
  o.opt_level = 0;
  const NamedValues got = make_cpu_engine(o)->prepare(rewritten)->run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].second.tensor();
    const Tensor& b = got[k].second.tensor();
    ASSERT_EQ(a.dtype(), b.dtype()) << want[k].first;
    ASSERT_EQ(a.shape(), b.shape()) << want[k].first;
    const double ulp = a.dtype() == DataType::BFloat16 ? 1.0 / 128 : 1.0 / 1024;
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      const double x = as_double(a, i), y = as_double(b, i);
      EXPECT_LE(std::abs(x - y), ulp * std::max(std::abs(x), 6.1e-5)) << want[k].first << "[" << i << "]: " << x << " vs " << y;
    }
  }
}

std::shared_ptr<Model> mlp(DataType t) {
  ModelBuilder b(17);
  b.input("x", t, {int64_t{2}, int64_t{8}});
  b.initializer(low_weights("w", t, {8, 6}, 5));
  b.initializer(low_weights("bias", t, {6}, 6));
  b.initializer(make_int64_tensor("shape", {2}, {3, 4}));
  b.node("MatMul", {"x", "w"}, {"xw"}, "matmul");
  b.node("Add", {"xw", "bias"}, {"y"}, "add");
  b.node("Reshape", {"y", "shape"}, {"r"}, "reshape");
  b.node("Sigmoid", {"r"}, {"s"}, "sigmoid");
  b.node("Mul", {"s", "r"}, {"out"}, "silu");
  b.output("out", t, {int64_t{3}, int64_t{4}});
  return load_model(b);
}

TEST(ComputeLowPrecisionInFloat32, HalfNodesComputeInFloat32BetweenCastsDataMovementKeepsItsType) {
  for (DataType t : {DataType::Float16, DataType::BFloat16}) {
    SCOPED_TRACE(dtype_info(t).name);
    auto original = mlp(t);
    auto m = apply(*original, cpu::compute_low_precision_in_float32, true);
    // x widened once; MatMul, Add on float32, rounded; Reshape as it was; Sigmoid and Mul on float32,
    // or a float16 Sigmoid as it is where the engine's AVX-512 kernel computes float16 itself.
    if (t == DataType::Float16 && cpu::unary_avx512_takes_half("Sigmoid")) {
      EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Cast", "MatMul", "Cast", "Cast", "Add", "Cast", "Reshape", "Sigmoid",
                                                        "Cast", "Cast", "Mul", "Cast"}));
    } else {
      EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Cast", "MatMul", "Cast", "Cast", "Add", "Cast", "Reshape", "Cast",
                                                        "Sigmoid", "Cast", "Cast", "Mul", "Cast"}));
    }
    for (const Node& n : m->graph.nodes) {
      if (n.op_type == "Reshape") {
        EXPECT_EQ(n.inputs[0], "y");  // the low value itself
      }
      if (n.op_type == "MatMul") {
        const Initializer* w = m->graph.initializer(n.inputs[1]);
        ASSERT_NE(w, nullptr) << "the weight is converted at prepare time, not cast on every run";
        EXPECT_EQ(w->value.dtype(), DataType::Float);
      }
    }
    // Every value of the model is still made, under its name, in its type.
    for (const char* v : {"xw", "y", "r", "s", "out"}) {
      bool made = false;
      for (const Node& n : m->graph.nodes)
        if (!n.outputs.empty() && n.outputs[0] == v) {
          made = true;
          if (n.op_type == "Cast") {
            EXPECT_EQ(n.attribute("to")->i, static_cast<int64_t>(t)) << v;
          }
        }
      EXPECT_TRUE(made) << v;
    }
    expect_within_one_rounding(original, m);
    // Run again, nothing is left to do.
    apply(*m, cpu::compute_low_precision_in_float32, false);
  }
}

TEST(ComputeLowPrecisionInFloat32, LeavesFloat32ModelsCastsAndSubgraphsAlone) {
  ModelBuilder f(17);
  f.input("x", DataType::Float, {int64_t{4}});
  f.node("Sigmoid", {"x"}, {"y"}, "sigmoid");
  f.output("y", DataType::Float, {int64_t{4}});
  apply(*load_model(f), cpu::compute_low_precision_in_float32, false);

  ModelBuilder c(17);
  c.input("x", DataType::Float, {int64_t{4}});
  auto& cast = c.node("Cast", {"x"}, {"h"}, "to_half");
  attr_int(cast, "to", static_cast<int64_t>(DataType::Float16));
  c.node("Neg", {"h"}, {"y"}, "neg");
  c.output("y", DataType::Float16, {int64_t{4}});
  auto original = load_model(c);
  auto m = apply(*original, cpu::compute_low_precision_in_float32, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Cast", "Cast", "Neg", "Cast"}));  // the model's Cast kept
  expect_within_one_rounding(original, m);
}

// A model made in memory without value types (as `precision` writes them):
// the pass infers the types first.
TEST(ComputeLowPrecisionInFloat32, InfersTypesAModelMadeInMemoryLacks) {
  auto original = mlp(DataType::Float16);
  auto bare = std::make_shared<Model>(*original);
  bare->graph.value_info.clear();
  auto m = apply(*bare, cpu::compute_low_precision_in_float32, true);
  const std::vector<std::string> ops = op_types(*m);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), std::string("Cast")), cpu::unary_avx512_takes_half("Sigmoid") ? 7 : 8);
  expect_within_one_rounding(original, m);
}

// The whole engine: a float16 model runs on float32 kernels, not the reference's.
TEST(ComputeLowPrecisionInFloat32, TheCpuEngineRunsHalfNodesOnItsFloat32Kernels) {
  auto original = mlp(DataType::Float16);
  CpuOptions o;
  auto prepared = make_cpu_engine(o)->prepare(original);
  struct Kernels : Observer {
    std::vector<std::string> impls;
    void on_node(const NodeEvent& e) override {
      if (e.node->op_type == "MatMul" || e.node->op_type == "Sigmoid") impls.emplace_back(e.kernel);
    }
  } seen;
  RunOptions ro;
  ro.observer = &seen;
  ro.capture_original = false;
  InputSpec spec;
  prepared->run(make_inputs(*original, spec), ro);
  ASSERT_FALSE(seen.impls.empty());
  for (const auto& impl : seen.impls) EXPECT_NE(impl, "reference");
}

}  // namespace

namespace {

// The plan that keeps every original node (capture runs: diff, the
// debugger) and opt-level 0 run no passes: the "cpu-float32" kernels take
// the half nodes there, with the same widening and rounding.
TEST(Float32Kernels, HalfNodesRunOnTheFloat32KernelsWhereNoPassRuns) {
  for (DataType t : {DataType::Float16, DataType::BFloat16}) {
    SCOPED_TRACE(dtype_info(t).name);
    auto original = mlp(t);
    expect_within_one_rounding(original, original);  // opt-level 0: no pass, the kernels alone
    struct Seen : Observer {
      std::map<std::string, std::string> kernel;
      std::map<std::string, DataType> type;
      void on_node(const NodeEvent& e) override {
        kernel[e.node->op_type] = std::string(e.kernel);
        if (!e.outputs.empty() && e.outputs[0].is_tensor()) type[e.node->op_type] = e.outputs[0].tensor().dtype();
      }
    } seen;
    RunOptions ro;
    ro.observer = &seen;
    ro.capture_original = true;
    InputSpec spec;
    make_cpu_engine(CpuOptions{})->prepare(original)->run(make_inputs(*original, spec), ro);
    for (const char* op : {"MatMul", "Add", "Sigmoid", "Mul"}) {
      const bool itself = t == DataType::Float16 && cpu::unary_avx512_takes_half(op);
      EXPECT_EQ(seen.kernel[op], itself ? "cpu-avx512" : "cpu-float32") << op;
      EXPECT_EQ(seen.type[op], t) << op << ": the node's output keeps its type";
    }
    EXPECT_NE(seen.kernel["Reshape"], "cpu-float32");
    // Left out, the reference kernels run them.
    CpuOptions without;
    without.disabled_kernels.insert("cpu-float32");
    without.opt_level = 0;
    Seen ref;
    ro.observer = &ref;
    make_cpu_engine(without)->prepare(original)->run(make_inputs(*original, spec), ro);
    EXPECT_EQ(ref.kernel["MatMul"], "reference");
  }
}

}  // namespace
