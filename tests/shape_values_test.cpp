// Values computed from the inputs' shapes alone (reference/shape_values.h):
// which nodes count (Shape chains through Gather, Unsqueeze, Concat; a
// Shape of a Reshape whose shape is such a value; not a Shape of NonZero,
// not a random operator, not an input that overrides an initializer), and
// the CPU engine reusing their kept results on later runs with the same
// input shapes: the outputs stay the reference's when the data changes
// (a data-dependent shape included) and when the shapes change, and an
// observed run runs every node.
#include <gtest/gtest.h>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "reference/shape_values.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// x [batch, 4, 3] -> Reshape(x, [batch, -1]) by a Shape chain, MatMul by a
// weight; also Shape(NonZero(x > 0)), which depends on x's values.
ModelBuilder shape_chain_model() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {std::string("batch"), int64_t{4}, int64_t{3}});
  b.initializer(make_int64_tensor("zero", {1}, {0}));
  b.initializer(make_int64_tensor("minus1", {1}, {-1}));
  b.initializer(make_float_tensor("w", {12, 2}, std::vector<float>(24, 0.5f)));
  b.initializer(make_float_tensor("zero_f", {}, {0.f}));
  b.node("Shape", {"x"}, {"s"}, "shape");                        // 0 determined
  b.node("Gather", {"s", "zero"}, {"n"}, "gather");              // 1 determined
  attr_int(b.node("Concat", {"n", "minus1"}, {"target"}, "concat"), "axis", 0);  // 2 determined
  b.node("Reshape", {"x", "target"}, {"flat"}, "reshape");       // 3 data
  b.node("MatMul", {"flat", "w"}, {"y"}, "matmul");              // 4 data
  b.node("Shape", {"y"}, {"ys"}, "shape_y");                     // 5 determined: y's shape follows
  b.node("Greater", {"x", "zero_f"}, {"pos"}, "greater");        // 6 data
  b.node("NonZero", {"pos"}, {"nz"}, "nonzero");                 // 7 data, data-dependent shape
  b.node("Shape", {"nz"}, {"nzs"}, "shape_nz");                  // 8 not determined
  b.node("Add", {"ys", "n"}, {"sum"}, "add");                    // 9 determined
  b.output_untyped("y");
  b.output_untyped("nzs");
  b.output_untyped("sum");
  return b;
}

TEST(ShapeValues, WhichNodesTheInputShapesDetermine) {
  auto m = load_model(shape_chain_model());
  EXPECT_EQ(ref::shape_determined_nodes(*m, nullptr), (std::vector<uint8_t>{1, 1, 1, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(ShapeValues, RandomOperatorsAndOverridableInitializersAreNot) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}});
  b.input("k", DataType::Int64, {int64_t{1}});
  b.initializer(make_int64_tensor("k", {1}, {1}));  // a default the caller may override
  b.node("Shape", {"x"}, {"s"}, "shape");
  attr_int(b.node("Cast", {"s"}, {"sf"}, "cast"), "to", 1);
  b.node("RandomUniformLike", {"sf"}, {"r"}, "random");
  b.node("Add", {"s", "k"}, {"sk"}, "add_k");
  b.node("Identity", {"sk"}, {"out"}, "identity");
  b.output_untyped("r");
  b.output_untyped("out");
  auto m = load_model(b);
  EXPECT_EQ(ref::shape_determined_nodes(*m, nullptr), (std::vector<uint8_t>{1, 1, 0, 0, 0}));
}

Tensor filled(const Shape& s, float start, float step) {
  Tensor t = Tensor::zeros(DataType::Float, s);
  for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

void expect_same(const NamedValues& want, const NamedValues& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].second.tensor();
    const Tensor& b = got[k].second.tensor();
    ASSERT_EQ(a.shape(), b.shape()) << want[k].first;
    ASSERT_EQ(a.dtype(), b.dtype()) << want[k].first;
    for (uint64_t i = 0; i < a.element_count(); ++i)
      ASSERT_DOUBLE_EQ(a.element_as_double(i), b.element_as_double(i)) << want[k].first << "[" << i << "]";
  }
}

TEST(ShapeValues, TheCpuEngineReusesThemWhileTheShapesStay) {
  auto m = load_model(shape_chain_model());
  auto ref = make_reference_engine()->prepare(m);
  auto cpu = make_cpu_engine(CpuOptions{.threads = 2})->prepare(m);
  struct Step {
    int64_t batch;
    float start;
    bool reused;  // the kept values of an earlier run with this shape
  };
  // The data moves the count of positive elements (NonZero's shape) while the shape stays.
  const std::vector<Step> steps = {{2, -1.f, false}, {2, -3.f, true}, {2, 0.5f, true}, {5, -2.f, false},
                                   {5, 1.f, true},   {2, -1.f, false}};
  for (const Step& s : steps) {
    SCOPED_TRACE("batch " + std::to_string(s.batch) + " from " + std::to_string(s.start));
    const NamedValues in{{"x", Value(filled({s.batch, 4, 3}, s.start, 0.25f))}};
    expect_same(ref->run(in, {}), cpu->run(in, {}));
    EXPECT_EQ(cpu->last_run_stats().shape_nodes_reused > 0, s.reused);
  }
  // An observer sees every node run.
  struct Count : Observer {
    size_t nodes = 0;
    void on_node(const NodeEvent&) override { ++nodes; }
  } seen;
  RunOptions ro;
  ro.observer = &seen;
  ro.capture_original = false;
  const NamedValues in{{"x", Value(filled({2, 4, 3}, -1.f, 0.25f))}};
  expect_same(ref->run(in, {}), cpu->run(in, ro));
  EXPECT_EQ(cpu->last_run_stats().shape_nodes_reused, 0u);
  EXPECT_GE(seen.nodes, 8u);
}

// The reference engine runs every node, every run.
TEST(ShapeValues, TheReferenceRunsEveryNode) {
  auto ref = make_reference_engine()->prepare(load_model(shape_chain_model()));
  const NamedValues in{{"x", Value(filled({2, 4, 3}, -1.f, 0.25f))}};
  for (int k = 0; k < 3; ++k) {
    ref->run(in, {});
    EXPECT_EQ(ref->last_run_stats().shape_nodes_reused, 0u);
  }
}

}  // namespace
