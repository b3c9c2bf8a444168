// The CPU kernels against the reference on tensors large enough that the
// kernels split them across threads (the harness's random shapes stay below
// the grain and run on one): outputs cut mid-row, single rows of a whole
// tensor (a batch of one), runs of one channel, and the whole float range.
// The same harness (support/ops_harness.h): the CPU kernel must run the node.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "core/cpu_features.h"
#include "float_range.h"
#include "model_builder.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

// Outputs past the kernels' thread grain, cut by threads across row ends: the
// same shape (one row of the whole tensor), a bias row, a channel operand, a
// scalar, and short rows against one repeated row (the blocked layout's
// per-channel operand), each with rows longer and shorter than a thread's chunk.
TEST(CpuOpsThreads, BinaryOnOutputsLargeEnoughToThread) {
  Rng rng(31);
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 41, 1000}, {3, 41, 1000}}, {{7, 24011}, {24011}}, {{1, 37, 61, 59}, {37, 1, 1}},
      {{2, 5, 9001}, {5, 1}},          {{70001}, {}},       {{300, 257}, {257}},
      // A per-channel operand on the blocked layout (rows of 16 against one), and rows of 7.
      {{1, 6, 57, 61, 16}, {1, 6, 1, 1, 16}}, {{2, 3, 2001, 7}, {3, 1, 7}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max"})
    for (const auto& [a, b] : shapes) {
      Case c(15);
      const bool pow = op == std::string("Pow");
      c.what = std::string(op) + " " + shape_to_string(a) + " " + shape_to_string(b);
      c.input("a", random_tensor(rng, DataType::Float, a, pow ? 0.1 : -3, 3, false));
      c.input("b", random_tensor(rng, DataType::Float, b, pow ? -2 : -3, pow ? 2 : 3, false));
      c.mb.node(op, {"a", "b"}, {"y"}, "n");
      check(c);
    }
}

// Every binade of float32, both signs: subnormals, values where exp
// overflows or underflows, Sin and Cos past their fast reduction (2^13),
// and 0, inf and NaN, with a tail past the last whole vector. Tolerances
// are relative (2e-6, about 16 ulp) with an absolute floor below FLT_MIN
// (results there are subnormal); Sin and Cos also 1e-9 absolute, what
// reducing x by pi/2 in float32 parts leaves near their zeros. Where the
// CPU has AVX2 and no AVX-512 (or ONNXSCOPE_CPU_ISA=avx2: ctest's
// isa_avx2.cpu_ops_threads_test), the AVX2 kernels (math/unary_avx2.cpp,
// cpu-simd) must be the ones that run.
TEST(CpuOpsThreads, UnaryOverTheWholeFloatRange) {
  std::vector<float> v = onnxscope::test::every_binade_both_signs();
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 8191.99f, 8192.0f, 8192.01f, -8192.01f, 1e5f, 3.14159274f,
                  88.72f, 88.73f, -86.01f, -87.33f, -87.4f, -103.9f, -104.1f, 0.499999f, 0.5f, 0.625f, 0.624999f,
                  9.01f, 20.0f, 20.01f})
    v.push_back(f);
  // Dense where the functions change formula or are most used.
  for (int i = -40000; i <= 40000; ++i) v.push_back(static_cast<float>(i) * 2.5e-4f);
  v.resize(v.size() + 5, 0.75f);
  const bool avx2_kernels =
      !ONNXSCOPE_CPU_AVX512("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const std::set<std::string> on_avx2 = {"Exp", "Sigmoid", "Tanh", "Erf", "Softplus", "Mish", "Sin", "Cos", "Relu"};
  for (const char* op : {"Exp", "Log", "Sigmoid", "Tanh", "Erf", "Softplus", "Mish", "Sin", "Cos", "Relu", "Abs"}) {
    Case c(18);
    c.what = op;
    Tensor x = Tensor::zeros(DataType::Float, {static_cast<int64_t>(v.size())});
    std::memcpy(x.mutable_data<float>(), v.data(), v.size() * sizeof(float));
    c.input("x", std::move(x));
    c.mb.node(op, {"x"}, {"y"}, "n");
    if (avx2_kernels && on_avx2.count(op)) c.expect_kernel = "cpu-simd";
    const bool trig = op == std::string("Sin") || op == std::string("Cos");
    check(c, trig ? 1e-9 : 1e-37, 2e-6);
  }
}

// Concat on axis 1 of a batch of one is one row of the output; with batches,
// rows start mid-chunk; an empty input in between copies nothing.
TEST(CpuOpsThreads, ConcatCutAcrossInputsAndRows) {
  Rng rng(41);
  const std::vector<std::vector<Shape>> cases = {
      {{1, 96, 56, 56}, {1, 32, 56, 56}, {1, 17, 56, 56}},
      {{3, 7, 5000}, {3, 0, 5000}, {3, 11, 5000}},
      {{2, 40000, 3}, {2, 20001, 3}},
  };
  for (const DataType t : {DataType::Float, DataType::Uint8, DataType::Int64})
    for (const auto& shapes : cases) {
      Case c(13);
      std::vector<std::string> names;
      for (size_t k = 0; k < shapes.size(); ++k) {
        names.push_back("x" + std::to_string(k));
        c.input(names.back(), random_tensor(rng, t, shapes[k]));
      }
      c.what = "Concat " + std::string(dtype_name(t)) + " of " + std::to_string(shapes.size()) + " from " + shape_to_string(shapes[0]);
      attr_int(c.mb.node("Concat", names, {"y"}, "n"), "axis", 1);
      check(c, 0, 0);
    }
}

// One outer index ([1,C,H,W] -> [1,H,W,C] is a single [C, HW] transpose), cut
// into bands of rows across threads; 2- and 8-byte elements take the plain tiles.
TEST(CpuOpsThreads, TransposeOfOneOuterIndex) {
  Rng rng(42);
  const std::vector<std::pair<Shape, std::vector<int64_t>>> cases = {
      {{1, 96, 56, 56}, {0, 2, 3, 1}}, {{1, 56, 56, 96}, {0, 3, 1, 2}}, {{333, 517}, {1, 0}}, {{2, 70, 3001}, {0, 2, 1}}};
  for (const DataType t : {DataType::Float, DataType::Float16, DataType::Int64})
    for (const auto& [s, perm] : cases) {
      Case c(13);
      c.what = "Transpose " + std::string(dtype_name(t)) + " " + shape_to_string(s) + " perm " + shape_to_string(perm);
      c.input("x", random_tensor(rng, t, s));
      attr_ints(c.mb.node("Transpose", {"x"}, {"y"}, "n"), "perm", perm);
      check(c, 0, 0);
    }
}

// One outer index reduced over a middle axis, and Softmax on axis 1 of one
// image: the lanes (not the outer rows) are shared out, in chunks of 16 that
// do not divide the row (777 and 49 lanes); ReduceLogSumExp splits from a
// smaller size than the cheap reductions.
TEST(CpuOpsThreads, ReductionAndSoftmaxLanesOfOneOuterIndex) {
  Rng rng(44);
  for (const auto& [op, s] : std::vector<std::pair<std::string, Shape>>{
           {"ReduceLogSumExp", {1, 130, 777}}, {"ReduceSum", {1, 400, 777}}, {"ReduceMax", {1, 400, 777}}}) {
    Case c(18);
    c.what = op + " " + shape_to_string(s) + " axis 1";
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3, false));
    c.ints("axes", {1});
    attr_int(c.mb.node(op, {"x", "axes"}, {"y"}, "n"), "keepdims", 0);
    check(c);
  }
  for (const char* op : {"Softmax", "LogSoftmax"})
    for (const Shape& s : {Shape{1, 1000, 49}, Shape{1, 5, 37}}) {
      Case c(13);
      c.what = std::string(op) + " " + shape_to_string(s) + " axis 1";
      c.input("x", random_tensor(rng, DataType::Float, s, -8, 8, false));
      attr_int(c.mb.node(op, {"x"}, {"y"}, "n"), "axis", 1);
      check(c, 1e-6, 2e-5);
    }
}

// Per tensor, the quantizers' loops run over the whole tensor as one run; per
// axis, threads cut runs of one channel. DynamicQuantizeLinear's range is
// taken in parts (NaN in some parts, the extremes in others).
TEST(CpuOpsThreads, QuantizeLinearOnLargeTensors) {
  Rng rng(43);
  for (const bool per_axis : {false, true})
    for (const bool quantize : {true, false}) {
      Case c(13);
      const Shape s = {1, 128, 3, 777};
      const int64_t channels = per_axis ? 3 : 1;
      const char* op = quantize ? "QuantizeLinear" : "DequantizeLinear";
      c.what = std::string(op) + (per_axis ? " per axis" : " per tensor");
      c.input("x", quantize ? random_tensor(rng, DataType::Float, s, -40, 40, true) : random_tensor(rng, DataType::Uint8, s));
      std::vector<float> scales = {0.5f, 0.1f, 1.0f / 3};
      scales.resize(static_cast<size_t>(channels));
      c.mb.initializer(make_float_tensor("s", per_axis ? std::vector<int64_t>{channels} : std::vector<int64_t>{}, scales));
      Tensor z = Tensor::zeros(DataType::Uint8, per_axis ? Shape{channels} : Shape{});
      for (uint64_t e = 0; e < z.element_count(); ++e) z.mutable_data<uint8_t>()[e] = static_cast<uint8_t>(pick(rng, 0, 255));
      c.input("z", std::move(z));
      auto& n = c.mb.node(op, {"x", "s", "z"}, {"y"}, "n");
      if (per_axis) attr_int(n, "axis", 2);
      check(c, 0, 0);
    }
  for (int i = 0; i < 3; ++i) {
    Case c(11);
    const Shape s = {1, 128, 768 + i};
    c.what = "DynamicQuantizeLinear " + shape_to_string(s);
    Tensor x = random_tensor(rng, DataType::Float, s, -5, 5, i == 2);
    // The extremes in the last part, so that a range taken from one part only is wrong.
    x.mutable_data<float>()[x.element_count() - 3] = -9.5f;
    x.mutable_data<float>()[x.element_count() - 1] = 11.25f;
    c.input("x", std::move(x));
    c.mb.node("DynamicQuantizeLinear", {"x"}, {"y", "y_scale", "y_zero_point"}, "n");
    c.mb.output_untyped("y_scale");
    c.mb.output_untyped("y_zero_point");
    check(c, 0, 0);
  }
}

}  // namespace
