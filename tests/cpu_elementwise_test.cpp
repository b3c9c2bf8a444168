// The CPU engine's Eigen binary kernels against the reference on every kind
// of broadcast: the block fast path (same shape, scalar, trailing bias,
// per-channel) and broadcast rows for the rest.
#include <gtest/gtest.h>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

#include <cstring>

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

struct KernelOf : Observer {
  std::string kernel;
  void on_node(const NodeEvent& e) override { kernel = std::string(e.kernel); }
};

std::vector<DimSpec> dims(const Shape& s) {
  std::vector<DimSpec> d;
  for (int64_t v : s) d.emplace_back(v);
  return d;
}

void check(const std::string& op, const Shape& a, const Shape& b, bool fast) {
  ModelBuilder mb(17, 8);
  mb.input("a", DataType::Float, dims(a));
  mb.input("b", DataType::Float, dims(b));
  mb.node(op, {"a", "b"}, {"y"}, "n");
  mb.output_untyped("y");
  auto r = mb.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  InputSpec spec;
  spec.seed = 11;
  NamedValues in = make_inputs(*m, spec);
  auto ref = make_reference_engine()->prepare(m)->run(in);
  KernelOf k;
  RunOptions ro;
  ro.observer = &k;
  CpuOptions co;
  co.opt_level = 0;
  auto cpu = make_cpu_engine(co)->prepare(m)->run(in, ro);
  EXPECT_EQ(k.kernel, fast ? "cpu-eigen" : "reference") << op << shape_to_string(a) << shape_to_string(b);
  const Tensor& x = ref[0].second.tensor();
  const Tensor& y = cpu[0].second.tensor();
  ASSERT_EQ(x.shape(), y.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i)
    ASSERT_NEAR(x.data<float>()[i], y.data<float>()[i], 1e-6 * (1 + std::abs(x.data<float>()[i])))
        << op << shape_to_string(a) << shape_to_string(b) << " at " << i;
}

}  // namespace

TEST(CpuElementwise, BroadcastPatternsMatchTheReference) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    check(op, {2, 3, 5, 7}, {2, 3, 5, 7}, true);  // same shape
    check(op, {2, 3, 5, 7}, {}, true);            // scalar
    check(op, {2, 3, 5, 7}, {7}, true);           // trailing bias
    check(op, {2, 3, 5, 7}, {5, 7}, true);
    check(op, {2, 3, 5, 7}, {3, 1, 1}, true);     // per channel
    check(op, {2, 3, 5, 7}, {1, 3, 1, 1}, true);
    check(op, {2, 3, 5, 7}, {2, 3, 1, 1}, true);  // per (batch, channel)
    check(op, {4, 0, 3}, {3}, true);              // zero-sized
    check(op, {2, 3, 5, 7}, {3, 1, 7}, true);     // not one block: broadcast rows
    check(op, {5, 7}, {2, 5, 7}, true);           // b larger than a
    check(op, {}, {2, 3, 5}, true);               // a scalar first
    check(op, {5, 1}, {1, 7}, true);              // outer product
    check(op, {2, 1, 5, 1}, {3, 1, 7}, true);
    check(op, {0, 3}, {1, 3}, true);
  }
}

// Concat as block copies against the reference, every axis, mixed sizes,
// zero-sized inputs and a non-float type; strings are left to the reference.
TEST(CpuDataMovement, ConcatMatchesTheReference) {
  auto run = [](DataType t, const std::vector<Shape>& shapes, int64_t axis, const std::string& want_kernel) {
    ModelBuilder mb(17, 8);
    std::vector<std::string> names;
    for (size_t k = 0; k < shapes.size(); ++k) {
      names.push_back("x" + std::to_string(k));
      mb.input(names.back(), t, dims(shapes[k]));
    }
    auto& n = mb.node("Concat", names, {"y"}, "cat");
    attr_int(n, "axis", axis);
    mb.output_untyped("y");
    auto r = mb.load();
    ASSERT_TRUE(r.ok()) << dump(r);
    std::shared_ptr<const Model> m = std::move(r.model);
    InputSpec spec;
    spec.seed = 5;
    NamedValues in = make_inputs(*m, spec);
    auto ref = make_reference_engine()->prepare(m)->run(in);
    KernelOf k;
    RunOptions ro;
    ro.observer = &k;
    auto cpu = make_cpu_engine()->prepare(m)->run(in, ro);
    EXPECT_EQ(k.kernel, want_kernel);
    const Tensor& a = ref[0].second.tensor();
    const Tensor& b = cpu[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    if (a.is_string()) EXPECT_EQ(a.strings(), b.strings());
    else EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0) << "axis " << axis;
  };
  for (int64_t axis : {0, 1, 2, -1})
    run(DataType::Float, {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}}, axis, "cpu-copy");
  run(DataType::Float, {{2, 1, 5}, {2, 4, 5}, {2, 0, 5}}, 1, "cpu-copy");
  run(DataType::Int64, {{3, 2}, {3, 7}}, 1, "cpu-copy");
  run(DataType::Uint8, {{1, 9}, {4, 9}}, 0, "cpu-copy");
  run(DataType::String, {{2}, {3}}, 0, "reference");
}
