// The CPU engine's elementwise, comparison, reduction, quantized and
// search kernels against the reference engine on seeded random problems (ggml's
// test-backend-ops discipline): random ranks and shapes (zero-sized dims
// included), every broadcast, random axes, steps and pads, several element
// types, and inputs holding NaN, infinities and signed zeros. An observer
// records which implementation ran, so a kernel that silently declines (the
// reference ran instead) fails the test, and a kernel that takes a problem it
// should leave (several reduced blocks) does too. The data-movement kernels
// are in cpu_ops_movement_test.cpp, the nn kernels in cpu_ops_nn_test.cpp,
// ONNX Runtime's QLinear operators in cpu_ops_qlinear_test.cpp, large tensors
// in cpu_ops_threads_test.cpp; the helpers in support/ops_harness.h.
//
// Tolerance for float32 results: |cpu - ref| <= 2e-5 * (1 + |ref|), and for
// unary ops 2e-7 + 2e-5 * |ref| (relative to the result, as the upstream
// suite's atol 1e-7 is: Log(1) must be 0, Softplus far left keeps its digits).
// oneDNN and Eigen evaluate exp, log, tanh and erf with vectorised
// approximations within a few ulps and sum in a different order; a wrong
// index, a missed broadcast or a dropped NaN is far outside that. NaN must meet NaN and an infinity the
// same infinity; every other type must match bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "cpu/kernels/quantization/vnni_gemm.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/reference.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace vnni = onnxscope::cpu::vnni;
using namespace onnxscope::test::harness;

namespace {

// --- elementwise ---------------------------------------------------------------

struct UnaryOp {
  const char* op;
  int64_t opset;
  double lo, hi;
  std::function<void(onnx::NodeProto&)> attrs = nullptr;
};

const std::vector<UnaryOp>& unary_ops() {
  static const std::vector<UnaryOp> ops = {
      {"Relu", 14, -3, 3}, {"LeakyRelu", 16, -3, 3, [](auto& n) { attr_float(n, "alpha", 0.2f); }},
      {"Elu", 6, -5, 3, [](auto& n) { attr_float(n, "alpha", 0.7f); }}, {"Sigmoid", 13, -20, 20},
      {"Tanh", 13, -10, 10}, {"Exp", 13, -20, 20}, {"Log", 13, 0.001, 100}, {"Sqrt", 13, 0, 100},
      {"Abs", 13, -3, 3}, {"Neg", 13, -3, 3}, {"Softplus", 1, -20, 20}, {"Mish", 18, -10, 10},
      {"HardSwish", 14, -5, 5}, {"HardSigmoid", 6, -5, 5, [](auto& n) { attr_float(n, "alpha", 0.3f); }},
      {"Reciprocal", 13, 0.1, 10}, {"Floor", 13, -5, 5}, {"Ceil", 13, -5, 5}, {"Round", 11, -5, 5},
      {"Sin", 7, -6, 6}, {"Cos", 7, -6, 6}, {"Sign", 13, -2, 2}, {"Softsign", 1, -5, 5},
      {"Selu", 6, -4, 4}, {"Celu", 12, -4, 4, [](auto& n) { attr_float(n, "alpha", 0.5f); }},
      {"ThresholdedRelu", 10, -3, 3, [](auto& n) { attr_float(n, "alpha", 0.5f); }}, {"Erf", 13, -3, 3},
      {"Gelu", 20, -5, 5}, {"Gelu", 20, -5, 5, [](auto& n) { attr_string(n, "approximate", "tanh"); }},
      {"Swish", 24, -8, 8, [](auto& n) { attr_float(n, "alpha", 1.5f); }}, {"Clip", 13, -4, 4},
  };
  return ops;
}

// behind: the kernels behind the AVX-512 ones (oneDNN's eltwise, Eigen's).
void unary_case(Rng& rng, const UnaryOp& u, bool specials, bool behind = false) {
  Case c(u.opset);
  if (behind) c.disabled_kernels = {"cpu-avx512"};
  const Shape s = random_shape(rng, 0, 4, 40);
  c.what = std::string(u.op) + " " + shape_to_string(s) + (specials ? " with NaN/inf" : "") + (behind ? " (behind AVX-512)" : "");
  c.input("x", random_tensor(rng, DataType::Float, s, u.lo, u.hi, specials));
  const bool clip = std::string(u.op) == "Clip";
  if (clip) {
    c.mb.initializer(make_float_tensor("lo", {}, {-1.5f}));
    c.mb.initializer(make_float_tensor("hi", {}, {2.0f}));
  }
  auto& n = c.mb.node(u.op, clip ? std::vector<std::string>{"x", "lo", "hi"} : std::vector<std::string>{"x"}, {"y"}, "n");
  if (u.attrs) u.attrs(n);
  // Zero-sized tensors go to the reference where only oneDNN has the op.
  const bool onednn_only = std::string(u.op) == "Swish";
  c.expect_fast = !(onednn_only && count(s) == 0);
  // Relative to the result: a tiny result (Softplus far left, Log near 1) must keep its digits.
  // Gelu's 1 + erf(x / sqrt 2) cancels far left of zero in float32 (at x = -3.5 it is
  // 1 - 0.99999925): there the upstream suite's rtol 1e-3 is what float32 can promise.
  check(c, 2e-7, std::string(u.op) == "Gelu" ? 1e-3 : 2e-5);
}

TEST(CpuOpsHarness, UnaryMatchesTheReference) {
  Rng rng(1);
  for (const auto& u : unary_ops())
    for (int i = 0; i < 6; ++i) unary_case(rng, u, false);
}

// The kernels the AVX-512 ones shadow on a machine that has it.
TEST(CpuOpsHarness, UnaryBehindAvx512MatchesTheReference) {
  Rng rng(11);
  for (const auto& u : unary_ops())
    for (int i = 0; i < 6; ++i) unary_case(rng, u, i % 2 == 1, true);
}

TEST(CpuOpsHarness, UnaryKeepsNaNAndInfinities) {
  Rng rng(2);
  for (const auto& u : unary_ops())
    for (int i = 0; i < 4; ++i) unary_case(rng, u, true);
}

// Relu is max(0, x) as the spec's Max and numpy's maximum make it: NaN stays
// NaN (onnxruntime and onnx.reference give NaN; a 0 there hid where a NaN
// came from), on the reference and on every cpu kernel for it.
TEST(CpuOpsHarness, ReluKeepsNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {std::nanf(""), -1.0f, -0.0f, 0.0f, 1.5f, inf, -inf};
  const std::vector<float> want = {0.0f, 0.0f, 0.0f, 0.0f, 1.5f, inf, 0.0f};  // [0] is NaN
  ModelBuilder mb(14);
  mb.input("x", DataType::Float, {int64_t(x.size())});
  mb.node("Relu", {"x"}, {"y"}, "relu");
  mb.output_untyped("y");
  auto model = std::shared_ptr<const Model>(mb.load().model);
  Tensor t = Tensor::zeros(DataType::Float, {int64_t(x.size())});
  std::copy(x.begin(), x.end(), t.mutable_data<float>());
  std::vector<std::pair<std::string, std::unique_ptr<Engine>>> engines;
  engines.emplace_back("reference", make_reference_engine());
  engines.emplace_back("cpu", make_cpu_engine());
  CpuOptions behind;
  behind.disabled_kernels = {"cpu-avx512"};
  engines.emplace_back("cpu behind cpu-avx512", make_cpu_engine(behind));
  for (auto& [name, engine] : engines) {
    SCOPED_TRACE(name);
    const Tensor y = engine->prepare(model)->run({{"x", Value(t)}}).at(0).second.tensor();
    EXPECT_TRUE(std::isnan(y.data<float>()[0]));
    for (size_t i = 1; i < x.size(); ++i) EXPECT_EQ(y.data<float>()[i], want[i]) << "at " << x[i];
  }
}

TEST(CpuOpsHarness, BinaryMatchesTheReferenceOnEveryBroadcast) {
  Rng rng(3);
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
    for (int i = 0; i < 16; ++i) {
      Case c(op == std::string("Max") || op == std::string("Min") ? 13 : 15);
      const auto [a, b] = broadcast_pair(rng);
      const bool pow = op == std::string("Pow");
      const bool specials = i % 4 == 3;
      c.what = std::string(op) + " " + shape_to_string(a) + " " + shape_to_string(b) + (specials ? " with NaN/inf" : "");
      c.input("a", random_tensor(rng, DataType::Float, a, pow ? 0.1 : -3, 3, specials));
      c.input("b", random_tensor(rng, DataType::Float, b, pow ? -2 : -3, pow ? 2 : 3, specials));
      c.mb.node(op, {"a", "b"}, {"y"}, "n");
      check(c);
    }
}

TEST(CpuOpsHarness, PowWithOneExponent) {
  Rng rng(4);
  for (float e : {2.0f, 1.0f, 0.5f, 3.0f, -1.0f, -0.5f})
    for (int i = 0; i < 3; ++i) {
      Case c(15);
      const Shape s = random_shape(rng, 1, 4, 30);
      c.what = "Pow " + shape_to_string(s) + " ^ " + std::to_string(e);
      c.input("a", random_tensor(rng, DataType::Float, s, -3, 3, i == 2));
      c.mb.initializer(make_float_tensor("e", {}, {e}));
      c.mb.node("Pow", {"a", "e"}, {"y"}, "n");
      check(c);
    }
}

TEST(CpuOpsHarness, ComparisonsAndLogic) {
  Rng rng(5);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    for (DataType t : {DataType::Float, DataType::Int64, DataType::Int32})
      for (int i = 0; i < 5; ++i) {
        Case c(16);
        const auto [a, b] = broadcast_pair(rng);
        c.what = std::string(op) + " " + std::string(dtype_name(t)) + " " + shape_to_string(a) + " " + shape_to_string(b);
        // A small range, so equal values are common.
        c.input("a", random_tensor(rng, t, a, -3, 3, t == DataType::Float && i == 4));
        c.input("b", random_tensor(rng, t, b, -3, 3, t == DataType::Float && i == 4));
        c.mb.node(op, {"a", "b"}, {"y"}, "n");
        check(c);
      }
  for (const char* op : {"And", "Or", "Xor"})
    for (int i = 0; i < 8; ++i) {
      Case c(16);
      const auto [a, b] = broadcast_pair(rng);
      c.what = std::string(op) + " " + shape_to_string(a) + " " + shape_to_string(b);
      c.input("a", random_tensor(rng, DataType::Bool, a));
      c.input("b", random_tensor(rng, DataType::Bool, b));
      c.mb.node(op, {"a", "b"}, {"y"}, "n");
      check(c);
    }
  for (int i = 0; i < 4; ++i) {
    Case c(16);
    const Shape s = random_shape(rng, 0, 4);
    c.what = "Not " + shape_to_string(s);
    c.input("x", random_tensor(rng, DataType::Bool, s));
    c.mb.node("Not", {"x"}, {"y"}, "n");
    check(c);
  }
}

// --- reductions ------------------------------------------------------------------

TEST(CpuOpsHarness, ReductionsOverAnyAxes) {
  Rng rng(6);
  const char* ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                       "ReduceL1",  "ReduceL2",   "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  for (const char* op : ops)
    for (int i = 0; i < 14; ++i) {
      const int64_t opset = i % 2 ? 18 : 13;
      const bool from_input = opset >= 18 || std::string(op) == "ReduceSum";
      Case c(opset);
      Shape s = random_shape(rng, 1, 4, 12);
      for (auto& d : s) d = std::max<int64_t>(d, 1);  // an empty reduction is the reference's
      const int64_t rank = static_cast<int64_t>(s.size());
      std::vector<int64_t> axes;
      for (int64_t d = 0; d < rank; ++d)
        if (pick(rng, 0, 1)) axes.push_back(pick(rng, 0, 1) ? d : d - rank);
      const bool keep = pick(rng, 0, 1);
      const bool positive = std::string(op) == "ReduceProd" || std::string(op) == "ReduceLogSum";
      c.what = std::string(op) + "-" + std::to_string(opset) + " " + shape_to_string(s) + " axes " +
               shape_to_string(axes) + (keep ? " keepdims" : "");
      c.input("x", random_tensor(rng, DataType::Float, s, positive ? 0.5 : -3, positive ? 1.5 : 3, i == 13));
      auto& n = from_input && !axes.empty() ? c.mb.node(op, {"x", "axes"}, {"y"}, "n") : c.mb.node(op, {"x"}, {"y"}, "n");
      if (from_input && !axes.empty()) c.ints("axes", axes);
      if (!from_input && !axes.empty()) attr_ints(n, "axes", axes);
      attr_int(n, "keepdims", keep);
      // Fast when the reduced dims (those above 1) form one block.
      std::vector<bool> red(static_cast<size_t>(rank), axes.empty());
      for (int64_t a : axes) red[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
      int blocks = 0;
      bool in = false;
      for (size_t d = 0; d < red.size(); ++d) {
        if (s[d] == 1) continue;
        if (red[d] && !in) ++blocks;
        in = red[d];
      }
      c.expect_fast = blocks <= 1;
      check(c);
    }
}

// ReduceL2 whose sum of squares is infinite (an infinity in the row, or
// squares past the float range whose root is past it too) is +inf over either
// axis: the SSE square root Eigen's fast math uses made it NaN (found by ten
// times the cases of ReductionsOverAnyAxes).
TEST(CpuOpsHarness, ReduceL2OfAnInfiniteSumIsInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t axis : {int64_t{-1}, int64_t{0}}) {
    Case c(18);
    c.what = "ReduceL2 axis " + std::to_string(axis);
    Tensor x = Tensor::zeros(DataType::Float, {5, 3});
    // Every row and every column holds an infinity or two squares of 3e38.
    const float v[] = {inf, 1, 1, 3e38f, 3e38f, 1, 1, 3e38f, -inf, -inf, 0, 3e38f, 4, 3e38f, 3e38f};
    std::copy(std::begin(v), std::end(v), x.mutable_data<float>());
    c.input("x", x);
    c.ints("axes", {axis});
    attr_int(c.mb.node("ReduceL2", {"x", "axes"}, {"y"}, "n"), "keepdims", 1);
    check(c);
  }
}

// ReduceMax, ReduceMin and ReduceLogSumExp over the last axis (the vector row
// path): rows of every length from 1 to 70 (vector body and tail), with a NaN
// or an infinity planted in the body or the tail of some rows; NaN anywhere
// in a row makes its result NaN.
TEST(CpuOpsHarness, RowMaxMinKeepNaNWhereverItIs) {
  Rng rng(43);
  for (const char* op : {"ReduceMax", "ReduceMin", "ReduceLogSumExp"})
    for (int64_t n = 1; n <= 70; ++n) {
      Case c(18);
      c.what = std::string(op) + " rows of " + std::to_string(n);
      Tensor x = random_tensor(rng, DataType::Float, {6, n}, -3, 3);
      float* v = x.mutable_data<float>();
      v[1 * n + pick(rng, 0, n - 1)] = NAN;                  // anywhere
      v[2 * n + n - 1] = NAN;                                // the last (a tail when n % 16)
      v[3 * n + pick(rng, 0, n - 1)] = INFINITY;
      v[4 * n + pick(rng, 0, n - 1)] = -INFINITY;
      c.input("x", std::move(x));
      c.mb.initializer(make_int64_tensor("axes", {1}, {1}));
      c.mb.node(op, {"x", "axes"}, {"y"}, "n");
      check(c);
    }
}

// GlobalAveragePool and GlobalMaxPool on plain layouts: 1-D to 3-D spatial
// dims, planes of 1 to ~3,000 values, NaN and infinities planted in some
// planes (NaN propagates); no channels goes to the reference. (Not values of
// 1e30 and -1e30 together: such a sum is ill-conditioned, and a different
// order of the same double additions gives a different answer.)
TEST(CpuOpsHarness, GlobalPoolsOnPlainLayouts) {
  Rng rng(47);
  for (int i = 0; i < 40; ++i) {
    const char* op = i % 2 ? "GlobalMaxPool" : "GlobalAveragePool";
    Shape s{pick(rng, 1, 2), i == 38 || i == 39 ? 0 : pick(rng, 1, 40)};
    const int64_t k = 1 + i % 3;
    for (int64_t d = 0; d < k; ++d) s.push_back(pick(rng, 1, k == 1 ? 3000 : k == 2 ? 56 : 14));
    Case c(13);
    c.what = std::string(op) + " " + shape_to_string(s);
    Tensor x = random_tensor(rng, DataType::Float, s, -3, 3);
    const uint64_t n = x.element_count();
    if (n > 0 && i % 4 < 2) {
      x.mutable_data<float>()[static_cast<uint64_t>(pick(rng, 0, static_cast<int64_t>(n) - 1))] = NAN;
      x.mutable_data<float>()[static_cast<uint64_t>(pick(rng, 0, static_cast<int64_t>(n) - 1))] = INFINITY;
      x.mutable_data<float>()[n - 1] = -INFINITY;
    }
    c.input("x", std::move(x));
    c.mb.node(op, {"x"}, {"y"}, "n");
    c.expect_fast = s[1] != 0;
    check(c);
  }
}

TEST(CpuOpsHarness, RmsNormalizationAnyAxis) {
  Rng rng(14);
  for (int i = 0; i < 24; ++i) {
    Case c(23);
    Shape s = random_shape(rng, 1, 4, 12);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    if (i % 4 == 0) s.back() = 512;
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = pick(rng, -rank, rank - 1);
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    Shape norm(s.begin() + static_cast<int64_t>(a), s.end());
    c.what = "RMSNormalization " + shape_to_string(s) + " axis " + std::to_string(axis);
    // No 1e30s: squared in float32 (stash_type 1) they overflow where the reference, in double, does not.
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3));
    c.input("scale", random_tensor(rng, DataType::Float, norm, 0.5, 1.5));
    auto& n = c.mb.node("RMSNormalization", {"x", "scale"}, {"y"}, "n");
    attr_int(n, "axis", axis);
    attr_float(n, "epsilon", i % 2 ? 1e-6f : 1e-5f);
    check(c);
  }
}

TEST(CpuOpsHarness, BatchNormalizationInference) {
  Rng rng(22);
  for (int i = 0; i < 20; ++i) {
    Case c(i % 2 ? 15 : 9);
    Shape s = {pick(rng, 1, 3), pick(rng, 1, 9)};
    for (int64_t d = 0, r = pick(rng, 0, 3); d < r; ++d) s.push_back(pick(rng, 1, 9));
    const int64_t ch = s[1];
    c.what = "BatchNormalization " + shape_to_string(s);
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3, i % 5 == 4));
    c.input("scale", random_tensor(rng, DataType::Float, {ch}, 0.5, 1.5));
    c.input("bias", random_tensor(rng, DataType::Float, {ch}, -1, 1));
    c.input("mean", random_tensor(rng, DataType::Float, {ch}, -1, 1));
    c.input("var", random_tensor(rng, DataType::Float, {ch}, 0.1, 2));
    attr_float(c.mb.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "n"), "epsilon",
               i % 3 ? 1e-5f : 0.1f);
    check(c);
  }
}

TEST(CpuOpsHarness, InstanceAndGroupNormalization) {
  Rng rng(17);
  for (int i = 0; i < 30; ++i) {
    const bool group = i % 2 == 1;
    Case c(group ? 21 : 6);
    Shape s = {pick(rng, 1, 2), pick(rng, 1, 8), pick(rng, 1, 9)};
    if (i % 3 == 0) s.push_back(pick(rng, 1, 9));
    if (i % 5 == 0) s.push_back(pick(rng, 1, 4));
    int64_t groups = 1;
    if (group) {
      std::vector<int64_t> divisors;
      for (int64_t g = 1; g <= s[1]; ++g)
        if (s[1] % g == 0) divisors.push_back(g);
      groups = divisors[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(divisors.size()) - 1))];
    }
    const char* op = group ? "GroupNormalization" : "InstanceNormalization";
    c.what = std::string(op) + " " + shape_to_string(s) + (group ? " groups " + std::to_string(groups) : "");
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3));
    c.input("scale", random_tensor(rng, DataType::Float, {s[1]}, 0.5, 1.5));
    c.input("bias", random_tensor(rng, DataType::Float, {s[1]}, -1, 1));
    auto& n = c.mb.node(op, {"x", "scale", "bias"}, {"y"}, "n");
    attr_float(n, "epsilon", i % 4 == 0 ? 1e-2f : 1e-5f);
    if (group) attr_int(n, "num_groups", groups);
    check(c);
  }
  // A mean far from zero against the spread: one-element groups (whose
  // variance is 0, so the scale is 1 / sqrt(eps): the result is the bias), and
  // values of 1000 with a spread of 0.01. Scaling x and the mean apart and
  // subtracting after cancelled: the bias came out 4.8e-5 off (found by ten
  // times the cases above).
  for (const Shape& s : {Shape{1, 8, 1}, Shape{2, 4, 64}}) {
    Case c(21);
    c.what = "GroupNormalization " + shape_to_string(s) + " mean far from zero";
    Tensor x = random_tensor(rng, DataType::Float, s, 999.99, 1000.01);
    if (s[2] == 1) x = random_tensor(rng, DataType::Float, s, -3, 3);
    c.input("x", x);
    c.input("scale", random_tensor(rng, DataType::Float, {s[1]}, 0.5, 1.5));
    c.input("bias", random_tensor(rng, DataType::Float, {s[1]}, -1, 1));
    attr_int(c.mb.node("GroupNormalization", {"x", "scale", "bias"}, {"y"}, "n"), "num_groups", s[1]);
    check(c);
  }
}

TEST(CpuOpsHarness, ArgMaxAndArgMin) {
  Rng rng(18);
  for (int i = 0; i < 48; ++i) {
    const bool max = i % 2 == 0;
    const DataType t = i % 6 < 2 ? DataType::Int64 : i % 6 < 4 ? DataType::Int32 : DataType::Float;
    Case c(13);
    Shape s = random_shape(rng, 1, 4, 9);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = pick(rng, -rank, rank - 1);
    const bool keep = pick(rng, 0, 1), last = i % 4 >= 2;
    const char* op = max ? "ArgMax" : "ArgMin";
    c.what = std::string(op) + " " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " axis " +
             std::to_string(axis) + (keep ? " keepdims" : "") + (last ? " last" : "");
    // A narrow range, so ties are common; NaN and infinities in some float cases.
    c.input("x", random_tensor(rng, t, s, -2, 2, t == DataType::Float && i % 3 == 0));
    auto& n = c.mb.node(op, {"x"}, {"y"}, "n");
    attr_int(n, "axis", axis);
    attr_int(n, "keepdims", keep);
    attr_int(n, "select_last_index", last);
    check(c);
  }
}

// --- quantization ------------------------------------------------------------------

TEST(CpuOpsHarness, MatMulIntegerEveryTypeAndZeroPoint) {
  Rng rng(19);
  for (int i = 0; i < 32; ++i) {
    Case c(10);
    c.expect_fast = cpu_has_int8_vnni();  // else the reference runs it (see ops_harness.h)
    const DataType ta = i % 4 < 2 ? DataType::Uint8 : DataType::Int8, tb = i % 2 ? DataType::Uint8 : DataType::Int8;
    Shape as = random_shape(rng, 2, 3, 40);
    for (auto& d : as) d = std::max<int64_t>(d, 1);
    const int64_t k = as.back(), n = pick(rng, 1, 48);
    if (i % 8 == 7) as.back() = 768;  // BERT's hidden size
    const Shape bs = {as.back(), n};
    c.what = "MatMulInteger " + std::string(dtype_name(ta)) + " x " + std::string(dtype_name(tb)) + " " +
             shape_to_string(as) + " x " + shape_to_string(bs);
    (void)k;
    auto ints = [&](DataType t, const Shape& s) {
      Tensor x = Tensor::zeros(t, s);
      for (uint64_t e = 0; e < x.element_count(); ++e)
        reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(pick(rng, 0, 255));
      return x;
    };
    c.input("a", ints(ta, as));
    c.input("b", ints(tb, bs));
    std::vector<std::string> ins = {"a", "b"};
    const int zp = i % 3;  // none, scalars, B per column
    if (zp > 0) {
      c.input("az", ints(ta, {}));
      c.input("bz", ints(tb, zp == 2 ? Shape{n} : Shape{}));
      ins.push_back("az");
      ins.push_back("bz");
      c.what += zp == 2 ? " zero points (B per column)" : " zero points";
    }
    c.mb.node("MatMulInteger", ins, {"y"}, "n");
    // Bit for bit: int32 sums (the reference keeps the low 32 bits of int64 ones).
    check(c, 0, 0);
  }
}

TEST(CpuOpsHarness, QLinearMatMulEveryType) {
  Rng rng(21);
  for (int i = 0; i < 24; ++i) {
    Case c(10);
    // oneDNN's int8 matmul with VNNI, else the exact Eigen form (qgemm.cpp).
    const DataType ta = i % 2 ? DataType::Uint8 : DataType::Int8, tb = (i / 2) % 2 ? DataType::Uint8 : DataType::Int8,
                   ty = (i / 4) % 2 ? DataType::Uint8 : DataType::Int8;
    Shape as = random_shape(rng, 2, 3, 30);
    for (auto& d : as) d = std::max<int64_t>(d, 1);
    if (i % 6 == 5) as.back() = 768;
    const Shape bs = {as.back(), pick(rng, 1, 40)};
    auto ints = [&](DataType t, const Shape& s) {
      Tensor x = Tensor::zeros(t, s);
      for (uint64_t e = 0; e < x.element_count(); ++e)
        reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(pick(rng, 0, 255));
      return x;
    };
    c.what = "QLinearMatMul " + std::string(dtype_name(ta)) + " x " + std::string(dtype_name(tb)) + " -> " +
             std::string(dtype_name(ty)) + " " + shape_to_string(as) + " x " + shape_to_string(bs);
    c.input("a", ints(ta, as));
    c.input("b", ints(tb, bs));
    c.input("az", ints(ta, {}));
    c.input("bz", ints(tb, {}));
    c.input("yz", ints(ty, {}));
    c.mb.initializer(make_float_tensor("as", {}, {0.02f}));
    c.mb.initializer(make_float_tensor("bs", {}, {0.005f}));
    c.mb.initializer(make_float_tensor("ys", {}, {i % 3 == 0 ? 0.7f : 0.05f}));  // some saturate, some do not
    c.mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "n");
    check(c, 0, 0);
  }
  // Multipliers at the requantization's edges: 0.5 (every odd sum a tie, to
  // even), past 2^51 (saturating), infinite (y_scale 0: a zero sum gives
  // NaN, so the zero point) and NaN.
  for (const float ys : {2.0f, 1e-30f, 0.0f, std::nanf("")}) {
    Case c(10);
    // oneDNN's int8 matmul with VNNI, else the exact Eigen form (qgemm.cpp).
    c.what = "QLinearMatMul u8 x u8 -> u8 [3,40] x [40,17], y_scale " + std::to_string(ys);
    Tensor a = Tensor::zeros(DataType::Uint8, {3, 40}), b = Tensor::zeros(DataType::Uint8, {40, 17});
    for (uint64_t e = 0; e < a.element_count(); ++e) a.mutable_data<uint8_t>()[e] = static_cast<uint8_t>(pick(rng, 0, 255));
    for (uint64_t e = 0; e < b.element_count(); ++e) b.mutable_data<uint8_t>()[e] = static_cast<uint8_t>(pick(rng, 0, 255));
    for (int64_t k = 0; k < 40; ++k) a.mutable_data<uint8_t>()[k] = 128;  // row 0 minus its zero point: all zero sums
    c.input("a", a);
    c.input("b", b);
    for (const char* z : {"az", "bz", "yz"}) {
      Tensor t = Tensor::zeros(DataType::Uint8, {});
      t.mutable_data<uint8_t>()[0] = 128;
      c.input(z, t);
    }
    c.mb.initializer(make_float_tensor("as", {}, {1.0f}));
    c.mb.initializer(make_float_tensor("bs", {}, {1.0f}));
    c.mb.initializer(make_float_tensor("ys", {}, {ys}));
    c.mb.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"}, "n");
    check(c, 0, 0);
  }
}

// ConvInteger and QLinearConv: every input and weight type, zero points
// (the weights' scalar or per output channel, chosen so w - zw fits int8),
// 1-D to 3-D, groups (depthwise too), strides, dilations, asymmetric pads and
// auto_pad, bias; bit for bit. Weights whose shifted values leave int8 go to
// the reference.
TEST(CpuOpsHarness, ConvIntegerAndQLinearConv) {
  Rng rng(23);
  auto ints = [&](DataType t, const Shape& s, int lo = 0, int hi = 255) {
    Tensor x = Tensor::zeros(t, s);
    for (uint64_t e = 0; e < x.element_count(); ++e) {
      const int v = static_cast<int>(pick(rng, lo, hi));
      reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(t == DataType::Int8 ? v - 128 : v);
    }
    return x;
  };
  auto raw = [](const std::string& name, const Tensor& t) {
    return make_tensor_raw(name, t.dtype(), t.shape(), std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()));
  };
  for (int i = 0; i < 40; ++i) {
    const bool qlinear = i % 2 == 1;
    Case c(10);
    // oneDNN's int8 convolution with VNNI, else the 8-bit product's (AVX2).
    c.expect_fast = cpu_has_int8_vnni() || vnni::available();
    const DataType tx = (i / 2) % 2 ? DataType::Uint8 : DataType::Int8, tw = (i / 4) % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t spatial_rank = i % 5 == 0 ? 1 : (i % 7 == 0 ? 3 : 2);
    const int64_t group = i % 6 == 3 ? pick(rng, 2, 3) : 1;
    const bool depthwise = i % 10 == 9;
    const int64_t cg = depthwise ? 1 : pick(rng, 1, 9), C = cg * (depthwise ? 4 : group);
    const int64_t G = depthwise ? C : group, M = G * pick(rng, 1, 5);
    Shape xs{pick(rng, 1, 2), C}, ws{M, cg};
    std::vector<int64_t> strides, dilations, pads_b, pads_e;
    for (int64_t d = 0; d < spatial_rank; ++d) {
      const int64_t k = pick(rng, 1, 3);
      ws.push_back(k);
      strides.push_back(pick(rng, 1, 2));
      dilations.push_back(pick(rng, 1, 2));
      pads_b.push_back(pick(rng, 0, 2));
      pads_e.push_back(pick(rng, 0, 1));
      xs.push_back(pick(rng, (k - 1) * dilations.back() + 1, spatial_rank == 3 ? 7 : 14));
    }
    // The weights: int8 anywhere with zero point 0 or a small one; uint8 around 128 with zero point 128 or per channel.
    const bool w_zp_per_channel = i % 3 == 0;
    Tensor w = tw == DataType::Int8 ? ints(tw, ws, 64, 191) : ints(tw, ws, 20, 235);
    Tensor wz = Tensor::zeros(tw, w_zp_per_channel ? Shape{M} : Shape{});
    for (uint64_t e = 0; e < wz.element_count(); ++e)
      reinterpret_cast<uint8_t*>(wz.mutable_raw())[e] =
          static_cast<uint8_t>(tw == DataType::Uint8 ? pick(rng, 110, 146) : static_cast<uint8_t>(static_cast<int8_t>(pick(rng, -20, 20))));
    c.what = std::string(qlinear ? "QLinearConv " : "ConvInteger ") + std::string(dtype_name(tx)) + " x " +
             std::string(dtype_name(tw)) + " " + shape_to_string(xs) + " * " + shape_to_string(ws) + " group " +
             std::to_string(G) + " strides " + shape_to_string(strides) + " dilations " + shape_to_string(dilations) +
             " pads " + shape_to_string(pads_b) + shape_to_string(pads_e) + (w_zp_per_channel ? " w_zp per channel" : "");
    c.input("x", ints(tx, xs));
    c.input("xz", ints(tx, {}));
    c.mb.initializer(raw("w", w));
    c.mb.initializer(raw("wz", wz));
    std::vector<std::string> ins;
    if (qlinear) {
      const DataType ty = (i / 8) % 2 ? DataType::Uint8 : DataType::Int8;
      c.input("yz", ints(ty, {}));
      c.mb.initializer(make_float_tensor("xs", {}, {0.02f}));
      std::vector<float> wscale(static_cast<size_t>(w_zp_per_channel ? M : 1));
      for (auto& v : wscale) v = 0.001f * static_cast<float>(pick(rng, 1, 20));
      c.mb.initializer(make_float_tensor("ws", w_zp_per_channel ? std::vector<int64_t>{M} : std::vector<int64_t>{}, wscale));
      c.mb.initializer(make_float_tensor("ys", {}, {i % 3 == 1 ? 0.02f : 0.3f}));  // some saturate
      ins = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
      if (i % 4 == 1) {
        Tensor b = Tensor::zeros(DataType::Int32, {M});
        for (int64_t m = 0; m < M; ++m) b.mutable_data<int32_t>()[m] = static_cast<int32_t>(pick(rng, -20000, 20000));
        c.mb.initializer(raw("b", b));
        ins.push_back("b");
      }
    } else {
      ins = {"x", "w", "xz", "wz"};
    }
    auto& n = c.mb.node(qlinear ? "QLinearConv" : "ConvInteger", ins, {"y"}, "n");
    attr_int(n, "group", G);
    // A padded 3-D convolution is the reference's (oneDNN 2.6 puts the input's
    // zero point wrongly in its padding: conv_integer.cpp).
    bool padded = false;
    for (int64_t d = 0; d < spatial_rank; ++d) {
      const int64_t in = xs[static_cast<size_t>(2 + d)], k = ws[static_cast<size_t>(2 + d)], s = strides[static_cast<size_t>(d)];
      padded |= i % 8 == 6 ? ((in + s - 1) / s - 1) * s + k > in : pads_b[static_cast<size_t>(d)] + pads_e[static_cast<size_t>(d)] > 0;
    }
    if (spatial_rank == 3 && padded && cpu_has_int8_vnni()) c.expect_fast = false;
    if (i % 8 == 6) {
      attr_string(n, "auto_pad", "SAME_UPPER");
      std::fill(dilations.begin(), dilations.end(), 1);
    } else {
      std::vector<int64_t> pads = pads_b;
      pads.insert(pads.end(), pads_e.begin(), pads_e.end());
      attr_ints(n, "pads", pads);
    }
    attr_ints(n, "strides", strides);
    attr_ints(n, "dilations", dilations);
    check(c, 0, 0);
    if (cpu_has_int8_vnni() && vnni::available()) {  // the product's form, which CPUs without VNNI run
      Case product = c;
      product.what += " (8-bit product)";
      product.expect_fast = true;
      product.expect_kernel = "cpu-int8";
      vnni::set_vnni(false);
      check(product, 0, 0);
      vnni::set_vnni(true);
    }
  }
  // Channels and pixels past 16: the 8-bit product's transposes of X and Y
  // in whole 16 x 16 blocks and their edges; 1x1 read in place and 3x3
  // gathered; depthwise 3x3 (its planes; rows of 46, 53 and 28 outputs at
  // stride 1: the AVX2 sums' 32-wide chunks and a last chunk of two, three
  // and four vectors, the last partial), strides 1 and 2.
  for (int i = 0; i < 8; ++i) {
    const bool qlinear = i % 2 == 1, pointwise = i < 2, depthwise = i >= 4;
    const int64_t C = depthwise ? 24 : i % 2 ? 40 : 16, M = depthwise ? 24 : i % 2 ? 16 : 48, k = pointwise ? 1 : 3;
    const int64_t W = i == 6 ? 52 : i == 7 ? 27 : depthwise ? 45 : 21, stride = i == 5 ? 2 : 1;
    Case c(10);
    c.expect_fast = cpu_has_int8_vnni() || vnni::available();
    c.what = std::string(qlinear ? "QLinearConv" : "ConvInteger") + " uint8 x int8 [2," + std::to_string(C) + ",19," +
             std::to_string(W) + "] * [" + std::to_string(M) + "," + std::to_string(C) + "," + std::to_string(k) + "," +
             std::to_string(k) + "]";
    c.input("x", ints(DataType::Uint8, {2, C, 19, W}));
    c.input("xz", ints(DataType::Uint8, {}));
    c.mb.initializer(raw("w", ints(DataType::Int8, {M, depthwise ? 1 : C, k, k}, 64, 191)));
    c.mb.initializer(raw("wz", Tensor::zeros(DataType::Int8, {})));
    std::vector<std::string> ins = {"x", "w", "xz", "wz"};
    if (qlinear) {
      c.input("yz", ints(DataType::Uint8, {}));
      c.mb.initializer(make_float_tensor("xs", {}, {0.02f}));
      c.mb.initializer(make_float_tensor("ws", {}, {0.004f}));
      c.mb.initializer(make_float_tensor("ys", {}, {0.5f}));
      ins = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
    }
    auto& n = c.mb.node(qlinear ? "QLinearConv" : "ConvInteger", ins, {"y"}, "n");
    if (!pointwise) attr_ints(n, "pads", {1, 2, 0, 1});
    if (depthwise) {
      attr_int(n, "group", C);
      attr_ints(n, "strides", {stride, stride});
    }
    check(c, 0, 0);
  }
  // Weights 255 with zero point 0 (uint8): 255 does not fit int8, the reference runs it.
  Case c(10);
  c.what = "ConvInteger uint8 weights past int8";
  c.input("x", ints(DataType::Uint8, {1, 2, 5, 5}));
  Tensor w = Tensor::zeros(DataType::Uint8, {3, 2, 3, 3});
  std::memset(w.mutable_raw(), 255, w.byte_size());
  c.mb.initializer(raw("w", w));
  c.mb.node("ConvInteger", {"x", "w"}, {"y"}, "n");
  c.expect_fast = false;
  check(c, 0, 0);
  // A 3-D convolution padded on its width with an input zero point: oneDNN
  // 2.6's int8 kernel gave sums off by thousands (400 cases of the loop above
  // drew two; its 40 none), so the reference runs it where oneDNN's would;
  // without VNNI, the 8-bit product does.
  Case p3(10);
  p3.what = "ConvInteger 3-D padded on the width, input zero point 9";
  p3.input("x", ints(DataType::Int8, {2, 7, 3, 5, 5}));
  Tensor xz = Tensor::zeros(DataType::Int8, {});
  xz.mutable_data<int8_t>()[0] = 9;
  p3.input("xz", xz);
  p3.mb.initializer(raw("w", ints(DataType::Int8, {5, 7, 2, 2, 3}, 64, 191)));
  Tensor wz = Tensor::zeros(DataType::Int8, {});
  wz.mutable_data<int8_t>()[0] = 5;
  p3.mb.initializer(raw("wz", wz));
  attr_ints(p3.mb.node("ConvInteger", {"x", "w", "xz", "wz"}, {"y"}, "n"), "pads", {0, 0, 1, 0, 0, 1});
  p3.expect_fast = !cpu_has_int8_vnni() && vnni::available();
  check(p3, 0, 0);
}

// Einsum as a batched product: the equations exporters write (attention
// scores and context, batched and broadcast matmuls, projections, outer
// products, ellipses), random sizes, operands whose groups do not collapse
// (copied first) and outputs in another order (permuted after). Equations it
// leaves (one operand, a label summed in one operand only) go to the reference.
TEST(CpuOpsHarness, EinsumAsABatchedProduct) {
  Rng rng(29);
  struct Eq {
    const char* equation;
    const char* a;  // labels of A and B, for their sizes
    const char* b;
    bool fast;
  };
  const Eq eqs[] = {
      {"bhqd,bhkd->bhqk", "bhqd", "bhkd", true}, {"bhqk,bhkd->bhqd", "bhqk", "bhkd", true},
      {"bij,bjk->bik", "bij", "bjk", true},       {"bnd,dh->bnh", "bnd", "dh", true},
      {"ij,jk", "ij", "jk", true},                {"i,j->ij", "i", "j", true},
      {"bqd,bkd->bkq", "bqd", "bkd", true},       {"ibnd,jbnd->bnij", "ibnd", "jbnd", true},
      {"bhld,lrd->bhlr", "bhld", "lrd", true},    {"ji,jk->ki", "ji", "jk", true},
      {"...ij,...jk->...ik", "xij", "xjk", true}, {"abc,cd->abd", "abc", "cd", true},
      {"ij,ij->i", "ij", "ij", true},             {"ij,jk->", "ij", "jk", false},
      {"ij,k->i", "ij", "k", false},
  };
  for (int rep = 0; rep < 3; ++rep)
    for (const Eq& e : eqs) {
      std::map<char, int64_t> size;
      for (const char* l = e.a; *l; ++l) size.emplace(*l, pick(rng, 1, 9));
      for (const char* l = e.b; *l; ++l) size.emplace(*l, pick(rng, 1, 9));
      Shape as, bs;
      for (const char* l = e.a; *l; ++l) as.push_back(size[*l]);
      for (const char* l = e.b; *l; ++l) bs.push_back(size[*l]);
      Case c(12);
      c.what = std::string("Einsum ") + e.equation + " " + shape_to_string(as) + " " + shape_to_string(bs);
      c.input("a", random_tensor(rng, DataType::Float, as));
      c.input("b", random_tensor(rng, DataType::Float, bs));
      attr_string(c.mb.node("Einsum", {"a", "b"}, {"y"}, "n"), "equation", e.equation);
      c.expect_fast = e.fast;
      check(c);
    }
}

// TopK: any axis, largest and smallest, k from 1 to the whole axis (the
// buffered path up to 16 and the partial sort past it), values with NaN,
// infinities, signed zeros and many ties (ties keep the lower index).
TEST(CpuOpsHarness, TopKAnyAxisWithTiesAndNaN) {
  Rng rng(31);
  for (int i = 0; i < 48; ++i) {
    Case c(11);
    const Shape s = [&] {
      Shape r = random_shape(rng, 1, 4, i % 4 == 0 ? 60 : 9);
      for (auto& d : r) d = std::max<int64_t>(d, 1);
      return r;
    }();
    const int64_t axis = pick(rng, -static_cast<int64_t>(s.size()), static_cast<int64_t>(s.size()) - 1);
    const int64_t dim = s[static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(s.size()) : axis)];
    const int64_t k = i % 5 == 0 ? dim : pick(rng, 1, dim);
    const bool largest = i % 2 == 0;
    c.what = "TopK " + shape_to_string(s) + " axis " + std::to_string(axis) + " k " + std::to_string(k) +
             (largest ? " largest" : " smallest");
    // Ties: values from a few levels; specials: NaN, infinities, signed zeros.
    Tensor x = random_tensor(rng, DataType::Float, s, -2, 2, true);
    if (i % 3 == 0)
      for (uint64_t e = 0; e < x.element_count(); ++e) x.mutable_data<float>()[e] = std::floor(x.data<float>()[e]);
    c.input("x", std::move(x));
    c.mb.initializer(make_int64_tensor("k", {1}, {k}));
    auto& n = c.mb.node("TopK", {"x", "k"}, {"values", "indices"}, "n");
    attr_int(n, "axis", axis);
    attr_int(n, "largest", largest ? 1 : 0);
    c.outputs = {"values", "indices"};
    check(c, 0, 0);
  }
}

// Range: every type it takes, positive and negative steps, fractional real
// steps (numpy's arange rule), empty ranges, integers that wrap.
TEST(CpuOpsHarness, RangeOfEveryTypeItTakes) {
  Rng rng(37);
  const DataType types[] = {DataType::Int32, DataType::Int64, DataType::Float, DataType::Double};
  for (int i = 0; i < 40; ++i) {
    const DataType t = types[i % 4];
    const bool real = t == DataType::Float || t == DataType::Double;
    double start = static_cast<double>(pick(rng, -50, 50)), delta = static_cast<double>(pick(rng, 1, 7)) * (i % 3 == 0 ? -1 : 1);
    if (real) {
      start += 0.1 * static_cast<double>(pick(rng, 0, 9));
      delta *= 0.37;
    }
    const double limit = start + delta * static_cast<double>(pick(rng, -2, 300)) + (real ? 0.05 : 0);
    Case c(11);
    c.what = "Range " + std::string(dtype_name(t)) + " " + std::to_string(start) + " " + std::to_string(limit) + " " +
             std::to_string(delta);
    auto scalar = [&](double v) {
      Tensor x = Tensor::zeros(t, {});
      switch (t) {
        case DataType::Int32: x.mutable_data<int32_t>()[0] = static_cast<int32_t>(v); break;
        case DataType::Int64: x.mutable_data<int64_t>()[0] = static_cast<int64_t>(v); break;
        case DataType::Float: x.mutable_data<float>()[0] = static_cast<float>(v); break;
        default: x.mutable_data<double>()[0] = v;
      }
      return x;
    };
    c.input("s", scalar(start));
    c.input("l", scalar(limit));
    c.input("d", scalar(delta));
    c.mb.node("Range", {"s", "l", "d"}, {"y"}, "n");
    check(c, 0, 0);
  }
  // int32 values past 2^31 wrap as the reference's do.
  Case c(11);
  c.what = "Range int32 wrapping";
  Tensor s = Tensor::zeros(DataType::Int32, {}), l = Tensor::zeros(DataType::Int32, {}), d = Tensor::zeros(DataType::Int32, {});
  s.mutable_data<int32_t>()[0] = INT32_MAX - 5;
  l.mutable_data<int32_t>()[0] = INT32_MAX;
  d.mutable_data<int32_t>()[0] = 2;
  c.input("s", s);
  c.input("l", l);
  c.input("d", d);
  c.mb.node("Range", {"s", "l", "d"}, {"y"}, "n");
  check(c, 0, 0);
}

// CumSum: any axis (int32 or int64 axis input), exclusive, reverse, float
// (summed in double as the reference does), double and wrapping integers.
TEST(CpuOpsHarness, CumSumAnyAxisExclusiveReverse) {
  Rng rng(41);
  const DataType types[] = {DataType::Float, DataType::Int64, DataType::Int32, DataType::Double};
  for (int i = 0; i < 48; ++i) {
    const DataType t = types[i % 4];
    const Shape s = i % 5 == 0 ? random_shape(rng, 1, 2, 1500) : random_shape(rng, 1, 4, 9);
    const int64_t rank = static_cast<int64_t>(s.size()), axis = pick(rng, -rank, rank - 1);
    Case c(14);
    c.what = "CumSum " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " axis " + std::to_string(axis);
    c.input("x", random_tensor(rng, t, s, -100, 100, t != DataType::Int32));
    if (i % 2) {
      Tensor a = Tensor::zeros(DataType::Int32, {});
      a.mutable_data<int32_t>()[0] = static_cast<int32_t>(axis);
      c.input("axis", a);
    } else {
      c.mb.initializer(make_int64_tensor("axis", {}, {axis}));
    }
    auto& n = c.mb.node("CumSum", {"x", "axis"}, {"y"}, "n");
    attr_int(n, "exclusive", (i / 2) % 2);
    attr_int(n, "reverse", (i / 4) % 2);
    check(c);
  }
}

TEST(CpuOpsHarness, QuantizeAndDequantizeLinear) {
  Rng rng(20);
  for (int i = 0; i < 48; ++i) {
    const bool quantize = i % 2 == 0;
    const DataType q = (i / 2) % 2 ? DataType::Int8 : DataType::Uint8;
    const bool per_axis = (i / 4) % 2 == 1;
    Case c(per_axis ? 13 : 10);
    Shape s = random_shape(rng, 1, 4, 9);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    const int64_t rank = static_cast<int64_t>(s.size());
    const int64_t axis = pick(rng, -rank, rank - 1);
    const int64_t channels = per_axis ? s[static_cast<size_t>(axis < 0 ? axis + rank : axis)] : 1;
    const char* op = quantize ? "QuantizeLinear" : "DequantizeLinear";
    c.what = std::string(op) + " " + std::string(dtype_name(q)) + " " + shape_to_string(s) +
             (per_axis ? " per axis " + std::to_string(axis) : " per tensor");
    // Values past the range, halves (to see the rounding), NaN and infinities.
    c.input("x", quantize ? random_tensor(rng, DataType::Float, s, -40, 40, true) : random_tensor(rng, q, s, -128, 127));
    std::vector<float> scales;
    for (int64_t k = 0; k < channels; ++k) scales.push_back(std::vector<float>{0.5f, 0.1f, 0.02f, 1.0f / 3, 1.0f}[static_cast<size_t>(pick(rng, 0, 4))]);  // 1: the specials 0.5, -0.5 and 2.5 are ties
    c.mb.initializer(make_float_tensor("s", per_axis ? std::vector<int64_t>{channels} : std::vector<int64_t>{}, scales));
    std::vector<std::string> ins = {"x", "s"};
    if (i % 3 != 0) {
      Tensor z = Tensor::zeros(q, per_axis ? Shape{channels} : Shape{});
      for (uint64_t e = 0; e < z.element_count(); ++e) reinterpret_cast<uint8_t*>(z.mutable_raw())[e] = static_cast<uint8_t>(pick(rng, 0, 255));
      c.input("z", std::move(z));
      ins.push_back("z");
    } else if (quantize && q == DataType::Int8) {
      continue;  // without a zero point the output is uint8
    }
    auto& n = c.mb.node(op, ins, {"y"}, "n");
    if (per_axis) attr_int(n, "axis", axis);
    check(c, 0, 0);  // bit for bit
  }
  for (int i = 0; i < 12; ++i) {
    Case c(11);
    const Shape s = random_shape(rng, 0, 3, 20);
    c.what = "DynamicQuantizeLinear " + shape_to_string(s);
    const double lo = i % 3 == 0 ? 0.5 : -5, hi = i % 3 == 1 ? -0.5 : 5;  // all positive, all negative, both
    c.input("x", random_tensor(rng, DataType::Float, s, lo, hi, i % 4 == 3));
    c.mb.node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zero_point"}, "n");
    c.mb.output_untyped("y_scale");
    c.mb.output_untyped("y_zero_point");
    check(c, 0, 0);
  }
}

TEST(CpuOpsHarness, SoftmaxOnAnyAxis) {
  Rng rng(24);
  for (int i = 0; i < 32; ++i) {
    Case c(13);
    Shape s = random_shape(rng, 2, 4, 12);
    for (auto& d : s) d = std::max<int64_t>(d, 1);
    if (i % 5 == 0) s[1] = 1000;  // a classifier's classes on axis 1
    const int64_t rank = static_cast<int64_t>(s.size());
    // Not the last axis (oneDNN's, tested in cpu_kernels_test), written either way.
    const int64_t axis = pick(rng, 0, rank - 2) - (pick(rng, 0, 1) ? rank : 0);
    const char* op = i % 2 ? "LogSoftmax" : "Softmax";
    c.what = std::string(op) + " " + shape_to_string(s) + " axis " + std::to_string(axis);
    c.input("x", random_tensor(rng, DataType::Float, s, -8, 8, i % 4 == 3));
    attr_int(c.mb.node(op, {"x"}, {"y"}, "n"), "axis", axis);
    check(c, 1e-6, 2e-5);
  }
}

}  // namespace
