// Diff and blame on a model with a planted fault: one kernel perturbed
// through a test-only registry. The faulty node must be the first divergence
// and top the blame list; nodes downstream inherit error but introduce none.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "cpu/thread_pool.h"
#include "model_builder.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/diff.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reduce.h"
#include "onnxscope/reference.h"
#include "onnxscope/conformance/runner.h"

#include <unistd.h>

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// Relu that is off by 0.25 wherever it is positive: the planted fault.
void faulty_relu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    float v = x.data<float>()[i];
    y.mutable_data<float>()[i] = v > 0 ? v + 0.25f : 0.0f;
  }
}

std::shared_ptr<const Model> chain_model() {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{4}, int64_t{8}});
  b.initializer(make_float_tensor("two", {}, {2.0f}));
  b.node("Mul", {"x", "two"}, {"m"}, "scale");
  b.node("Relu", {"m"}, {"r"}, "faulty");
  b.node("Add", {"r", "x"}, {"a"}, "residual");
  b.node("Sigmoid", {"a"}, {"y"}, "squash");
  b.output("y", DataType::Float, {int64_t{4}, int64_t{8}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

Tensor floats(Shape s, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

}  // namespace

TEST(Diff, TensorStatistics) {
  DiffTolerance tol;
  TensorDiff same = diff_tensors(floats({3}, {1, 2, 3}), floats({3}, {1, 2, 3}), tol);
  EXPECT_TRUE(same.within());
  EXPECT_EQ(same.max_abs, 0);
  EXPECT_DOUBLE_EQ(same.cosine, 1.0);
  TensorDiff d = diff_tensors(floats({4}, {1, 2, 3, NAN}), floats({4}, {1, 2.5f, 3, 1}), tol);
  EXPECT_EQ(d.out_of_tolerance, 2u);  // the 0.5 error and the NaN on one side only
  EXPECT_EQ(d.nan_a, 1u);
  EXPECT_EQ(d.nan_b, 0u);
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_EQ(d.worst_index, 3u);
  TensorDiff shape = diff_tensors(floats({2}, {1, 2}), floats({1, 2}, {1, 2}), tol);
  EXPECT_FALSE(shape.comparable);
  EXPECT_NE(shape.problem.find("shape"), std::string::npos);
}

TEST(Diff, UlpDistance) {
  DiffTolerance tol;
  tol.max_ulp = 1;
  float one = 1.0f, next = std::nextafter(1.0f, 2.0f), next2 = std::nextafter(next, 2.0f);
  EXPECT_TRUE(diff_tensors(floats({1}, {one}), floats({1}, {next}), tol).within());
  TensorDiff two = diff_tensors(floats({1}, {one}), floats({1}, {next2}), tol);
  EXPECT_FALSE(two.within());
  EXPECT_EQ(two.max_ulp, 2u);
  // Across zero: -0 and +0 are 0 ULP apart, the smallest denormals 1 apart each side.
  EXPECT_EQ(diff_tensors(floats({1}, {-0.0f}), floats({1}, {0.0f}), tol).max_ulp, 0u);
}

TEST(Diff, PlantedFaultIsFirstDivergenceAndTopBlame) {
  auto model = chain_model();
  InputSpec spec;
  spec.seed = 7;
  NamedValues inputs = make_inputs(*model, spec);
  auto good = make_reference_engine();
  static KernelRegistry fault;
  fault.add(KernelDef{"", "Relu", 1, INT_MAX, "planted-fault", faulty_relu, nullptr});
  ReferenceOptions o;
  o.extra_kernels = &fault;
  auto bad = make_reference_engine(o);

  Capture a = capture_run(*good, model, inputs);
  Capture b = capture_run(*bad, model, inputs);
  EXPECT_EQ(b.kernel_of.at("r"), "planted-fault");
  DiffTolerance tol;
  DiffReport report = diff_captures(*model, a, b, tol);
  ASSERT_TRUE(report.first_divergence.has_value());
  EXPECT_EQ(report.nodes[*report.first_divergence].node, "faulty");
  EXPECT_FALSE(report.nodes[0].diverges);  // 'scale' before the fault is clean
  EXPECT_TRUE(report.nodes[2].diverges);   // 'residual' carries the error...

  // A stop request after two nodes: those two are blamed, the rest are not.
  DiffReport partial = report;
  int polls = 0;
  EXPECT_FALSE(blame_nodes(*model, a, *bad, tol, partial, [&] { return ++polls > 2; }));
  EXPECT_TRUE(partial.nodes[1].introduced.has_value());
  EXPECT_FALSE(partial.nodes[2].introduced.has_value());

  EXPECT_TRUE(blame_nodes(*model, a, *bad, tol, report));
  ASSERT_FALSE(report.blame_order.empty());
  EXPECT_EQ(report.nodes[report.blame_order.front()].node, "faulty");
  EXPECT_NEAR(report.nodes[1].introduced_score, 0.25, 1e-6);
  EXPECT_EQ(report.nodes[2].introduced_score, 0.0);  // ...but introduces none
  EXPECT_EQ(report.nodes[3].introduced_score, 0.0);
}

// reduce writes a backend-style folder of the faulty node alone, which the
// conformance runner passes on the good engine and fails on the faulty one.
TEST(Diff, ReduceWritesARunnableReproOfThePlantedFault) {
  auto model = chain_model();
  NamedValues inputs = make_inputs(*model, InputSpec{});
  auto good = make_reference_engine();
  static KernelRegistry fault;
  fault.add(KernelDef{"", "Relu", 1, INT_MAX, "planted-fault", faulty_relu, nullptr});
  ReferenceOptions o;
  o.extra_kernels = &fault;
  auto bad = make_reference_engine(o);
  Capture a = capture_run(*good, model, inputs);
  Capture b = capture_run(*bad, model, inputs);
  DiffTolerance tol;
  DiffReport report = diff_captures(*model, a, b, tol);
  blame_nodes(*model, a, *bad, tol, report);
  const auto dir = std::filesystem::temp_directory_path() / ("onnxscope-reduce-" + std::to_string(getpid())) / "test_repro";
  ReduceResult r = reduce_divergence(*model, a, *bad, tol, report, dir);
  ASSERT_TRUE(r.reproduced);
  EXPECT_EQ(r.nodes, (std::vector<std::string>{"faulty"}));
  auto cases = conformance::discover_suite(dir.parent_path());
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(conformance::run_case(cases[0], *good, {}).status, conformance::Status::Pass);
  EXPECT_EQ(conformance::run_case(cases[0], *bad, {}).status, conformance::Status::Fail);
  std::filesystem::remove_all(dir.parent_path());
}

// Tensors of many blocks (the elements are shared out to the threads a
// block at a time, and chunks of finite values take a shorter path): the
// statistics against a plain loop over every element, and the same numbers,
// bit for bit, at one thread and at two.
TEST(Diff, LargeTensorsGiveThePlainLoopsStatisticsAtAnyThreadCount) {
  const int64_t n = 300'001;
  Tensor a = Tensor::zeros(DataType::Float, {n}), b = Tensor::zeros(DataType::Float, {n});
  Tensor h = Tensor::zeros(DataType::Float16, {n});
  float* x = a.mutable_data<float>();
  float* y = b.mutable_data<float>();
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::sin(0.001f * static_cast<float>(i)) * 3.0f;
    y[i] = x[i] * (1.0f + 1e-4f * std::cos(0.37f * static_cast<float>(i)));
    const uint16_t hv = float_to_half(x[i]);
    std::memcpy(h.mutable_raw() + 2 * i, &hv, 2);
  }
  x[70'000] = NAN;                   // NaN in A only
  y[140'000] = INFINITY;             // inf in B only
  x[200'000] = 1.0f, y[200'000] = 2.0f;  // the two largest finite errors, equal: the first is the worst
  x[250'000] = 1.0f, y[250'000] = 2.0f;
  DiffTolerance tol;
  // The plain loop: the finite pairs' largest error, the count out of tolerance.
  double max_abs_finite = 0;
  uint64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) {
      ++bad;
      continue;
    }
    const double e = std::fabs(double(x[i]) - double(y[i]));
    max_abs_finite = std::max(max_abs_finite, e);
    bad += e > tol.atol + tol.rtol * std::fabs(double(x[i]));
  }
  TensorDiff runs[2];
  for (int threads : {1, 2}) {
    cpu::set_thread_count(threads);
    runs[threads - 1] = diff_tensors(a, b, tol, "y");
  }
  cpu::set_thread_count(0);
  const TensorDiff& d = runs[0];
  EXPECT_EQ(d.out_of_tolerance, bad);
  EXPECT_EQ(d.nan_only_a.count, 1u);
  EXPECT_EQ(d.nan_only_a.first, 70'000u);
  EXPECT_EQ(d.inf_only_b.count, 1u);
  EXPECT_EQ(d.inf_only_b.first, 140'000u);
  EXPECT_TRUE(std::isinf(d.max_abs));
  EXPECT_EQ(d.worst_index, 70'000u);  // a non-finite mismatch is the largest violation; the first of them
  for (const TensorDiff& t : {runs[0], runs[1]}) {
    EXPECT_EQ(t.out_of_tolerance, d.out_of_tolerance);
    EXPECT_EQ(t.worst_index, d.worst_index);
    EXPECT_EQ(t.max_ulp, d.max_ulp);
    EXPECT_EQ(std::memcmp(&t.mean_abs, &d.mean_abs, 8), 0);
    EXPECT_EQ(std::memcmp(&t.rmse, &d.rmse, 8), 0);
    EXPECT_EQ(std::memcmp(&t.cosine, &d.cosine, 8), 0);
    EXPECT_EQ(std::memcmp(&t.max_rel, &d.max_rel, 8), 0);
  }
  // Finite values only: the largest error is the plain loop's, at its first place.
  x[70'000] = 0.5f, y[70'000] = 0.5f, y[140'000] = x[140'000];
  const TensorDiff f = diff_tensors(a, b, tol, "y");
  EXPECT_EQ(f.max_abs, 1.0);
  EXPECT_EQ(f.worst_index, 200'000u);
  EXPECT_EQ(f.out_of_tolerance, bad - 2);
  // Against its float16 copy (the changed elements copied again): distances on the float16 grid.
  for (int64_t i : {int64_t{70'000}, int64_t{200'000}, int64_t{250'000}}) {
    const uint16_t hv = float_to_half(x[i]);
    std::memcpy(h.mutable_raw() + 2 * i, &hv, 2);
  }
  DiffTolerance ulp;
  ulp.max_ulp = 0;
  const TensorDiff g = diff_tensors(a, h, ulp, "y");
  EXPECT_EQ(g.max_ulp, 0u);  // each float rounds to its own half: the same place on the half grid
  EXPECT_EQ(g.out_of_tolerance, 0u);
}
