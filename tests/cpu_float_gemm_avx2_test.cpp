// The AVX2 float product (cpu/kernels/math/float_gemm_avx2.cpp): MatMul and
// Gemm of float rows by a constant 2-D B, on CPUs with AVX2 and FMA and no
// AVX-512. Against the reference on seeded random problems: rows from A's
// leading dims past and within one 6-row tile, K past one 256-block, N off
// the 16-column panels (and past the 8 from which A is packed), NaN and
// infinities in A; Gemm with transB, a bias row
// or none, beta 0; a B that is not a constant stays oneDNN's; the passes'
// FusedMatMul and FusedGemm with every activation; a prepared
// model run again with other row counts; and the weights given back
// (release_repacked_weights) and restored exactly when read.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"
#include "fused_product_model.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {
// On AVX-512 CPUs these run under ONNXSCOPE_CPU_ISA=avx2 (ctest's
// isa_avx2.cpu_float_gemm_avx2_test).
bool avx2_only() {
  return !ONNXSCOPE_CPU_AVX512("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
// Float sums of up to 700 terms of magnitude up to 2 against the reference's
// double ones rounded once.
constexpr double kAtol = 2e-4, kRtol = 1e-4;
}  // namespace

TEST(CpuFloatGemmAvx2, MatMulByAConstantB) {
  if (!avx2_only()) GTEST_SKIP() << "AVX-512 (without ONNXSCOPE_CPU_ISA=avx2) or no AVX2";
  Rng rng(301);
  for (int i = 0; i < 60; ++i) {
    Case c(13);
    Shape a;
    const int64_t rank = pick(rng, 1, 4);
    for (int64_t d = 0; d + 1 < rank; ++d) a.push_back(pick(rng, 1, d == 0 ? 20 : 4));
    // N past 8 panels in some: A is then packed into tiles (fewer read it as it lies).
    const int64_t K = i % 5 == 0 ? pick(rng, 257, 700) : pick(rng, 1, 120), N = i % 3 == 0 ? pick(rng, 113, 260) : pick(rng, 1, 70);
    a.push_back(K);
    c.what = "MatMul " + shape_to_string(a) + " x [" + std::to_string(K) + "," + std::to_string(N) + "]";
    c.input("a", random_tensor(rng, DataType::Float, a, -2, 2, i % 7 == 6));
    add_initializer(c.mb, "b", random_tensor(rng, DataType::Float, {K, N}, -1, 1));
    c.mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
    c.expect_kernel = "cpu-avx2";
    check(c, kAtol, kRtol);
  }
}

TEST(CpuFloatGemmAvx2, GemmTransposedOrNotWithABiasRow) {
  if (!avx2_only()) GTEST_SKIP() << "AVX-512 (without ONNXSCOPE_CPU_ISA=avx2) or no AVX2";
  Rng rng(302);
  for (int i = 0; i < 48; ++i) {
    Case c(13);
    const int64_t rows = pick(rng, 1, 40), K = i % 4 == 0 ? pick(rng, 257, 600) : pick(rng, 1, 160),
                  N = i % 3 == 0 ? pick(rng, 113, 200) : pick(rng, 1, 90);
    const bool trans_b = i % 2 == 0, with_c = i % 4 != 1, beta_zero = i % 6 == 3, constant_b = i % 8 != 7;
    c.what = "Gemm [" + std::to_string(rows) + "," + std::to_string(K) + "] x B" + (trans_b ? "^T" : "") + " N " +
             std::to_string(N) + (with_c ? (beta_zero ? " C, beta 0" : " + C") : "") + (constant_b ? "" : ", B an input");
    c.input("a", random_tensor(rng, DataType::Float, {rows, K}, -2, 2, i % 7 == 6));
    const Tensor b = random_tensor(rng, DataType::Float, trans_b ? Shape{N, K} : Shape{K, N}, -1, 1);
    if (constant_b) add_initializer(c.mb, "b", b);
    else c.input("b", b);
    std::vector<std::string> ins = {"a", "b"};
    if (with_c) {
      add_initializer(c.mb, "c", random_tensor(rng, DataType::Float, i % 3 ? Shape{N} : Shape{1, N}, -1, 1));
      ins.push_back("c");
    }
    auto& g = c.mb.node("Gemm", ins, {"y"}, "gemm");
    attr_int(g, "transB", trans_b ? 1 : 0);
    if (beta_zero) attr_float(g, "beta", 0.0f);
    c.expect_kernel = constant_b ? "cpu-avx2" : "onednn";
    check(c, kAtol, kRtol);
  }
}

// One prepared model run with other row counts (the kept panels serve each),
// its B's plain bytes given back and restored exactly when read; every run
// the same bits as the engine that keeps its weights.
TEST(CpuFloatGemmAvx2, PanelsKeptAndTheWeightsGivenBack) {
  if (!avx2_only()) GTEST_SKIP() << "AVX-512 (without ONNXSCOPE_CPU_ISA=avx2) or no AVX2";
  auto make = [] {
    ModelBuilder mb(13);
    mb.input("a", DataType::Float, {"rows", int64_t{300}});
    Rng wr(9);
    add_initializer(mb, "bt", random_tensor(wr, DataType::Float, {40, 300}, -1, 1));
    add_initializer(mb, "b", random_tensor(wr, DataType::Float, {40, 37}, -1, 1));
    attr_int(mb.node("Gemm", {"a", "bt"}, {"h"}, "gemm"), "transB", 1);
    mb.node("MatMul", {"h", "b"}, {"y"}, "mm");
    mb.output_untyped("y");
    auto loaded = mb.load();
    EXPECT_TRUE(loaded.ok()) << dump(loaded);
    return std::shared_ptr<const Model>(std::move(loaded.model));
  };
  auto m = make(), kept_model = make();
  const Tensor& bt = m->graph.initializer("bt")->value;
  const std::vector<std::byte> original(bt.raw(), bt.raw() + bt.byte_size());
  auto releasing = make_cpu_engine(CpuOptions{.threads = 2, .release_repacked_weights = true})->prepare(m);
  auto keeping = make_cpu_engine(CpuOptions{.threads = 2})->prepare(kept_model);
  auto ref = make_reference_engine()->prepare(kept_model);
  auto same = [&](int64_t rows) {
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(rows);
    spec.dims = {{"rows", rows}};
    const NamedValues in = make_inputs(*m, spec);
    const Tensor got = releasing->run(in).at(0).second.tensor();
    const Tensor want = keeping->run(in).at(0).second.tensor();
    const Tensor exact = ref->run(in).at(0).second.tensor();
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.byte_size()), 0) << "rows " << rows;
    for (uint64_t e = 0; e < got.element_count(); ++e)
      ASSERT_NEAR(got.data<float>()[e], exact.data<float>()[e], kAtol + kRtol * std::fabs(exact.data<float>()[e]))
          << "rows " << rows << " element " << e;
  };
  same(13);
  same(1);
  EXPECT_TRUE(bt.buffer()->bytes_released());
  EXPECT_TRUE(m->graph.initializer("b")->value.buffer()->bytes_released());
  EXPECT_FALSE(kept_model->graph.initializer("bt")->value.buffer()->bytes_released());
  ASSERT_EQ(bt.byte_size(), original.size());
  EXPECT_EQ(std::memcmp(bt.raw(), original.data(), original.size()), 0);  // restored exactly
  EXPECT_FALSE(bt.buffer()->bytes_released());
  same(7);
}

// MatMul + Add(bias) + an activation, fused by the engine's passes into one
// node this kernel runs: a FusedMatMul (A of rank 3) or a Gemm / FusedGemm
// (A of rank 2), every activation applied as the last block's tiles are
// stored (K past one block in some).
TEST(CpuFloatGemmAvx2, FusedBiasAndEveryActivation) {
  if (!avx2_only()) GTEST_SKIP() << "AVX-512 (without ONNXSCOPE_CPU_ISA=avx2) or no AVX2";
  const char* acts[] = {"", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh", "Clip"};
  Rng rng(303);
  for (int i = 0; i < 40; ++i) {
    const std::string act = acts[i % 10];
    const int64_t rows = pick(rng, 1, 30), K = i % 3 == 0 ? pick(rng, 257, 400) : pick(rng, 1, 150),
                  N = i % 4 == 0 ? pick(rng, 113, 200) : pick(rng, 1, 70);
    ModelBuilder mb(20);
    const bool rank2 = i % 2 == 0;
    build_fused_product(mb, act, rank2, rows, K, N, static_cast<unsigned>(i));
    SCOPED_TRACE("[" + std::to_string(rows) + "," + std::to_string(K) + "] x [" + std::to_string(K) + "," +
                 std::to_string(N) + "] + bias " + act);
    auto loaded = mb.load();
    ASSERT_TRUE(loaded.ok()) << dump(loaded);
    const FusedRun r = run_fused(std::move(loaded.model), static_cast<uint64_t>(i));
    ASSERT_EQ(r.ran.size(), 1u) << "not fused into one node";
    EXPECT_EQ(r.ran[0], (rank2 ? (act.empty() ? "Gemm" : "FusedGemm") : "FusedMatMul") + std::string(" cpu-avx2"));
    const Tensor& a = r.want[0].second.tensor();
    const Tensor& b = r.got[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t e = 0; e < a.element_count(); ++e)
      ASSERT_NEAR(b.data<float>()[e], a.data<float>()[e], 2e-5 + 2e-5 * std::fabs(a.data<float>()[e]) + 2e-6 * K)
          << "element " << e;
  }
}

// Each output is one float sum in the order of t, the bias first, whatever
// the tiles (one or two rows: several panels a tile), row blocks
// (rows_per_block: 24 to 96), 256-step blocks of t and threads: the engine's bits against fmaf in that order, for row counts
// past several row blocks and in their remainders, at 1 and 2 threads.
TEST(CpuFloatGemmAvx2, OneSumInTheOrderOfTAcrossRowBlocks) {
  if (!avx2_only()) GTEST_SKIP() << "AVX-512 (without ONNXSCOPE_CPU_ISA=avx2) or no AVX2";
  // A as it lies (3 panels), A packed (13: one or two rows by whole panels
  // 4 or 3 at a time, then the rest one at a time), 16 whole panels.
  for (const int64_t N : {int64_t{40}, int64_t{200}, int64_t{256}}) {
    constexpr int64_t K = 300;
    ModelBuilder mb(13);
    mb.input("a", DataType::Float, {"rows", K});
    Rng wr(static_cast<uint64_t>(N));
    const Tensor b = random_tensor(wr, DataType::Float, {K, N}, -1, 1);
    const Tensor bias = random_tensor(wr, DataType::Float, {N}, -1, 1);
    add_initializer(mb, "b", b);
    add_initializer(mb, "c", bias);
    mb.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
    mb.output_untyped("y");
    auto loaded = mb.load();
    ASSERT_TRUE(loaded.ok()) << dump(loaded);
    const std::shared_ptr<const Model> m(std::move(loaded.model));
    for (const int threads : {1, 2}) {
      auto cpu = make_cpu_engine(CpuOptions{.threads = threads})->prepare(m);
      for (const int64_t rows : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{23}, int64_t{47}, int64_t{49}, int64_t{97},
                                 int64_t{151}, int64_t{251}}) {
        InputSpec spec;
        spec.seed = static_cast<uint64_t>(rows);
        spec.dims = {{"rows", rows}};
        const NamedValues in = make_inputs(*m, spec);
        const Tensor& a = in.at(0).second.tensor();
        const Tensor y = cpu->run(in).at(0).second.tensor();
        ASSERT_EQ(y.shape(), (Shape{rows, N}));
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < N; ++j) {
            float s = bias.data<float>()[j];
            for (int64_t t = 0; t < K; ++t) s = std::fmaf(a.data<float>()[i * K + t], b.data<float>()[t * N + j], s);
            ASSERT_EQ(y.data<float>()[i * N + j], s)
                << "N " << N << " threads " << threads << " rows " << rows << " at (" << i << ", " << j << ")";
          }
      }
    }
  }
}
