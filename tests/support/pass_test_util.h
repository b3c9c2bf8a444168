// Helpers of the CPU engine's pass tests (cpu_passes*_test.cpp): seeded
// weights, applying one pass to a copy of a model, and running the original
// on the reference against the rewritten model on the CPU engine.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

namespace onnxscope::test::passes {

using onnxscope::cpu::PassContext;

using PassFn = bool (*)(Model&, PassContext&);

using Rng = std::mt19937;

inline int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// 8-bit values: uint8 in [lo, hi], int8 as the same draws minus 128.
inline Tensor bytes(Rng& rng, DataType t, const Shape& s, int lo = 0, int hi = 255) {
  Tensor x = Tensor::zeros(t, s);
  for (uint64_t e = 0; e < x.element_count(); ++e) {
    const int v = static_cast<int>(pick(rng, lo, hi));
    reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(t == DataType::Int8 ? v - 128 : v);
  }
  return x;
}

// An initializer holding `t`'s bytes.
inline onnx::TensorProto raw(const std::string& name, const Tensor& t) {
  return make_tensor_raw(name, t.dtype(), t.shape(), std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()));
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

inline int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (auto d : dims) p *= d;
  return p;
}

inline onnx::TensorProto weights(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed,
                          float lo = -1, float hi = 1) {
  return make_float_tensor(name, dims, random_floats(static_cast<size_t>(product(dims)), seed, lo, hi));
}

inline onnx::TensorProto scalar(const std::string& name, float v) { return make_float_tensor(name, {}, {v}); }

inline void expect_unique_names(const Model& m) {
  std::set<std::string> seen;
  for (const auto& n : m.graph.nodes)
    if (!n.name.empty()) {
      EXPECT_TRUE(seen.insert(n.name).second) << "duplicate node name " << n.name;
    }
}

// Runs one pass on a copy of `original` and returns the copy.
inline std::shared_ptr<Model> apply(const Model& original, PassFn pass, bool expect_change, uint64_t max_fold = 64 << 20) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  PassContext ctx{&log, max_fold};
  EXPECT_EQ(pass(*m, ctx), expect_change);
  expect_unique_names(*m);
  return m;
}

// Within 1e-5 of the element, plus 1e-6 of the tensor's largest magnitude
// (at least 1): an element that is a near-cancelling sum of large terms
// carries their float rounding, whose order is the CPU's (AVX2 and AVX-512
// convolutions sum in different orders), not a rounding of its own size.
inline bool close(double a, double b, double peak = 1.0) {
  return std::abs(a - b) <= 1e-5 * std::max(std::abs(a), std::abs(b)) + 1e-6 * std::max(1.0, peak);
}

// Reference on the original vs the CPU engine (no further rewrites) on the rewritten model.
inline void expect_same_results(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten,
                         uint64_t seed = 7) {
  InputSpec spec;
  spec.seed = seed;
  auto inputs = make_inputs(*original, spec);
  auto want = make_reference_engine()->prepare(original)->run(inputs);
  CpuOptions o;
  o.opt_level = 0;
  auto got = make_cpu_engine(o)->prepare(rewritten)->run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].second.tensor();
    const Tensor& b = got[k].second.tensor();
    ASSERT_EQ(a.shape(), b.shape()) << want[k].first;
    ASSERT_EQ(a.dtype(), b.dtype()) << want[k].first;
    size_t bad = 0;
    double peak = 0;
    for (uint64_t i = 0; i < a.element_count(); ++i)
      if (std::isfinite(a.element_as_double(i))) peak = std::max(peak, std::abs(a.element_as_double(i)));
    for (uint64_t i = 0; i < a.element_count(); ++i)
      if (!close(a.element_as_double(i), b.element_as_double(i), peak) && bad++ < 5)
        ADD_FAILURE() << want[k].first << "[" << i << "]: reference " << a.element_as_double(i) << ", cpu "
                      << b.element_as_double(i);
  }
}

inline std::vector<std::string> provenance(const Node& n) { return cpu::fused_from(n); }

// RGB stem conv -> Relu -> depthwise conv + residual Add -> Clip(0, 6) ->
// 1x1 conv to 24 channels (not a multiple of 16) -> MaxPool (not blocked) ->
// conv whose output is also a graph output.
inline ModelBuilder small_cnn() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{13}, int64_t{11}});
  b.initializer(weights("w0", {32, 3, 3, 3}, 1, -0.3f, 0.3f));
  b.initializer(weights("b0", {32}, 2));
  b.initializer(weights("w1", {32, 1, 3, 3}, 3, -0.3f, 0.3f));
  b.initializer(weights("w2", {24, 32, 1, 1}, 4, -0.3f, 0.3f));
  b.initializer(weights("w3", {16, 24, 3, 3}, 5, -0.3f, 0.3f));
  b.initializer(make_float_tensor("lo", {}, {0.f}));
  b.initializer(make_float_tensor("hi", {}, {6.f}));
  auto& c0 = b.node("Conv", {"x", "w0", "b0"}, {"c0"}, "stem");
  attr_ints(c0, "pads", {1, 1, 1, 1});
  attr_ints(c0, "strides", {2, 2});
  b.node("Relu", {"c0"}, {"r0"}, "relu0");
  auto& c1 = b.node("Conv", {"r0", "w1"}, {"c1"}, "dw");
  attr_int(c1, "group", 32);
  attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Add", {"c1", "r0"}, {"a1"}, "residual");
  b.node("Clip", {"a1", "lo", "hi"}, {"k1"}, "relu6");
  b.node("Conv", {"k1", "w2"}, {"c2"}, "project");
  auto& mp = b.node("MaxPool", {"c2"}, {"p2"}, "pool");
  attr_ints(mp, "kernel_shape", {2, 2});
  auto& c3 = b.node("Conv", {"p2", "w3"}, {"c3"}, "head");
  attr_ints(c3, "pads", {1, 1, 1, 1});
  attr_ints(b.node("ReduceMean", {"c3"}, {"m"}, "gap"), "axes", {-1, -2});
  b.output("c3", DataType::Float, {int64_t{2}, int64_t{16}, int64_t{3}, int64_t{3}});
  b.output("c2", DataType::Float, {int64_t{2}, int64_t{24}, int64_t{7}, int64_t{6}});
  b.output("m", DataType::Float, {int64_t{2}, int64_t{16}, int64_t{1}, int64_t{1}});
  return b;
}

}  // namespace onnxscope::test::passes
