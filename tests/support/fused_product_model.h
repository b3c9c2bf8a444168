// A one-layer model the CPU engine's passes fuse into one product node:
// x [rows, K] (or [1, rows, K]) times a constant w [K, N], plus a constant
// bias row, then `act` ("" for none; Relu, LeakyRelu, Sigmoid, Tanh,
// HardSigmoid, HardSwish, Gelu, GeluTanh, Clip) as its own node. The
// weights are drawn from a generator seeded with `seed`. Used by the
// product kernels' tests (cpu_small_matmul_test, cpu_float_gemm_avx2_test).
#pragma once

#include <cstdint>
#include <string>

#include "model_builder.h"
#include "ops_harness.h"

namespace onnxscope::test {

inline void build_fused_product(ModelBuilder& mb, const std::string& act, bool rank2, int64_t rows, int64_t K,
                                int64_t N, unsigned seed) {
  using harness::add_initializer;
  using harness::random_tensor;
  if (rank2) mb.input("x", DataType::Float, {rows, K});
  else mb.input("x", DataType::Float, {int64_t{1}, rows, K});
  harness::Rng wr(seed);
  add_initializer(mb, "w", random_tensor(wr, DataType::Float, {K, N}, -1, 1));
  add_initializer(mb, "bias", random_tensor(wr, DataType::Float, {N}, -1, 1));
  mb.node("MatMul", {"x", "w"}, {"m"}, "mm");
  mb.node("Add", {"m", "bias"}, {act.empty() ? "y" : "s"}, "add");
  if (act == "Clip") {
    mb.initializer(make_float_tensor("lo", {}, {-0.5f}));
    mb.initializer(make_float_tensor("hi", {}, {1.5f}));
    mb.node("Clip", {"s", "lo", "hi"}, {"y"}, "act");
  } else if (act == "Gelu" || act == "GeluTanh") {
    auto& g = mb.node("Gelu", {"s"}, {"y"}, "act");
    if (act == "GeluTanh") attr_string(g, "approximate", "tanh");
  } else if (act == "LeakyRelu") {
    attr_float(mb.node("LeakyRelu", {"s"}, {"y"}, "act"), "alpha", 0.2f);
  } else if (act == "HardSigmoid") {
    auto& h = mb.node("HardSigmoid", {"s"}, {"y"}, "act");
    attr_float(h, "alpha", 0.3f);
    attr_float(h, "beta", 0.4f);
  } else if (!act.empty()) {
    mb.node(act, {"s"}, {"y"}, "act");
  }
  mb.output_untyped("y");
}

}  // namespace onnxscope::test
