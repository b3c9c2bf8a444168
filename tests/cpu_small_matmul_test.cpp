// The small-product kernel (cpu/kernels/math/small_matmul.cpp): MatMul and
// FusedMatMul of up to 16 rows by a plain B, on AVX-512 register tiles with
// the bias and the fused activation applied in registers. Against the
// reference on seeded random problems (rows from A's leading dims, K and N
// off every tile width, NaN and infinities in A), through the harness for
// MatMul and through the engine's fusion passes for FusedMatMul; products
// past its limits go to oneDNN.
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
bool has_avx512() { return ONNXSCOPE_CPU_AVX512("avx512f"); }
}  // namespace

TEST(CpuSmallMatMul, FewRowsByAPlainMatrix) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512: oneDNN's kernels run these";
  Rng rng(91);
  for (int i = 0; i < 80; ++i) {
    Case c(13);
    Shape a;
    const int64_t rank = pick(rng, 1, 4);
    int64_t rows = 1;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      a.push_back(pick(rng, 1, std::max<int64_t>(1, 16 / rows)));
      rows *= a.back();
    }
    const int64_t K = pick(rng, 1, 200), N = pick(rng, 1, std::max<int64_t>(1, std::min<int64_t>(300, (1 << 18) / (rows * K))));
    a.push_back(K);
    c.what = "MatMul " + shape_to_string(a) + " x [" + std::to_string(K) + "," + std::to_string(N) + "]";
    c.input("a", random_tensor(rng, DataType::Float, a, -2, 2, i % 7 == 6));
    c.input("b", random_tensor(rng, DataType::Float, {K, N}, -1, 1));
    c.mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
    c.expect_kernel = "cpu-avx512";
    check(c, 1e-5, 1e-5);
  }
}

TEST(CpuSmallMatMul, LargerProductsAreOneDnns) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
  Rng rng(92);
  const Shape cases[][2] = {{{17, 8}, {8, 8}},           // 17 rows
                            {{2, 9, 4}, {4, 4}},         // 18 rows from the batch
                            {{4, 512}, {512, 256}},      // 2^19 multiply-adds
                            {{2, 3, 5}, {2, 5, 4}}};     // a batch of B's
  for (const auto& s : cases) {
    Case c(13);
    c.what = "MatMul " + shape_to_string(s[0]) + " x " + shape_to_string(s[1]);
    c.input("a", random_tensor(rng, DataType::Float, s[0], -2, 2));
    c.input("b", random_tensor(rng, DataType::Float, s[1], -1, 1));
    c.mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
    c.expect_kernel = "onednn";
    check(c, 1e-4, 1e-5);
  }
}

// Gemm as torch's Linear exports it on a 2-D input: B a constant [N, K] with
// transB (transposed once and kept for the node), C a bias row or absent,
// beta 1 or 0 (C then dropped); a B that is not a constant stays oneDNN's.
TEST(CpuSmallMatMul, GemmWithAConstantTransposedB) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
  Rng rng(94);
  for (int i = 0; i < 40; ++i) {
    Case c(13);
    const int64_t rows = pick(rng, 1, 16), K = pick(rng, 1, 160);
    const int64_t N = pick(rng, 1, std::min<int64_t>(150, (int64_t{1} << 18) / (rows * K)));  // within its limit
    const bool with_c = i % 4 != 0, beta_zero = i % 4 == 1, constant_b = i % 10 != 9;
    c.what = "Gemm [" + std::to_string(rows) + "," + std::to_string(K) + "] x [" + std::to_string(N) + "," +
             std::to_string(K) + "]^T" + (with_c ? (beta_zero ? " C, beta 0" : " + C") : "") +
             (constant_b ? "" : ", B an input");
    c.input("a", random_tensor(rng, DataType::Float, {rows, K}, -2, 2, i % 7 == 6));
    const Tensor b = random_tensor(rng, DataType::Float, {N, K}, -1, 1);
    if (constant_b) add_initializer(c.mb, "b", b);
    else c.input("b", b);
    std::vector<std::string> ins = {"a", "b"};
    if (with_c) {
      add_initializer(c.mb, "c", random_tensor(rng, DataType::Float, i % 3 ? Shape{N} : Shape{1, N}, -1, 1));
      ins.push_back("c");
    }
    auto& g = c.mb.node("Gemm", ins, {"y"}, "gemm");
    attr_int(g, "transB", 1);
    if (beta_zero) attr_float(g, "beta", 0.0f);
    c.expect_kernel = constant_b ? "cpu-avx512" : "onednn";
    check(c, 1e-5, 1e-5);
  }
  // One prepared model run again and again: the kept transposed B serves each run.
  ModelBuilder mb(13);
  mb.input("a", DataType::Float, {"rows", int64_t{48}});
  Rng wr(7);
  add_initializer(mb, "b", random_tensor(wr, DataType::Float, {40, 48}, -1, 1));
  attr_int(mb.node("Gemm", {"a", "b"}, {"y"}, "gemm"), "transB", 1);
  mb.output_untyped("y");
  auto loaded = mb.load();
  ASSERT_TRUE(loaded.ok()) << dump(loaded);
  std::shared_ptr<const Model> m = std::move(loaded.model);
  auto cpu = make_cpu_engine(CpuOptions{.threads = 2})->prepare(m);
  auto ref = make_reference_engine()->prepare(m);
  for (int64_t rows : {3, 3, 16, 1, 3}) {
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(rows * 11);
    spec.dims = {{"rows", rows}};
    const NamedValues in = make_inputs(*m, spec);
    const Tensor got = cpu->run(in).at(0).second.tensor();
    const Tensor want = ref->run(in).at(0).second.tensor();
    ASSERT_EQ(got.shape(), want.shape());
    for (uint64_t e = 0; e < got.element_count(); ++e)
      ASSERT_NEAR(got.data<float>()[e], want.data<float>()[e], 1e-4) << "rows " << rows << " element " << e;
  }
}

// Weights resident once (CpuOptions::release_repacked_weights): the transposed
// copy of a Gemm's constant B stands in for it and B's plain bytes are given
// back, restored exactly when read; a MatMul's B is read where it lies (no
// copy, nothing given back). Every run matches the engine that keeps its
// weights, bit for bit, before and after the read.
TEST(CpuSmallMatMul, TheTransposedCopyGivesTheWeightsBack) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
  auto make = [] {
    ModelBuilder mb(13);
    mb.input("a", DataType::Float, {"rows", int64_t{48}});
    Rng wr(8);
    add_initializer(mb, "bt", random_tensor(wr, DataType::Float, {40, 48}, -1, 1));
    add_initializer(mb, "b", random_tensor(wr, DataType::Float, {40, 24}, -1, 1));
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
  auto same = [&](int64_t rows) {
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(rows);
    spec.dims = {{"rows", rows}};
    const NamedValues in = make_inputs(*m, spec);
    const Tensor got = releasing->run(in).at(0).second.tensor();
    const Tensor want = keeping->run(in).at(0).second.tensor();
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.byte_size()), 0) << "rows " << rows;
  };
  same(3);
  same(5);
  EXPECT_TRUE(bt.buffer()->bytes_released());
  EXPECT_FALSE(m->graph.initializer("b")->value.buffer()->bytes_released());
  EXPECT_FALSE(kept_model->graph.initializer("bt")->value.buffer()->bytes_released());
  ASSERT_EQ(bt.byte_size(), original.size());
  EXPECT_EQ(std::memcmp(bt.raw(), original.data(), original.size()), 0);  // restored exactly
  EXPECT_FALSE(bt.buffer()->bytes_released());
  same(4);
}

// MatMul + Add(bias) + an activation, fused by the engine's passes into one
// node this kernel runs: a FusedMatMul (A of rank 3), or a Gemm / FusedGemm
// (A of rank 2: matmul-add-to-gemm), with every activation they carry.
TEST(CpuSmallMatMul, FusedBiasAndEveryActivation) {
  if (!has_avx512()) GTEST_SKIP() << "no AVX-512";
  const char* acts[] = {"", "Relu", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh", "Clip"};
  Rng rng(93);
  for (int i = 0; i < 40; ++i) {
    const std::string act = acts[i % 10];
    const int64_t rows = pick(rng, 1, 16), K = pick(rng, 1, 150), N = pick(rng, 1, 130);
    ModelBuilder mb(20);
    const bool rank2 = i % 2 == 0;
    build_fused_product(mb, act, rank2, rows, K, N, static_cast<unsigned>(i));
    SCOPED_TRACE("[" + std::to_string(rows) + "," + std::to_string(K) + "] x [" + std::to_string(K) + "," +
                 std::to_string(N) + "] + bias " + act);
    auto loaded = mb.load();
    ASSERT_TRUE(loaded.ok()) << dump(loaded);
    const FusedRun r = run_fused(std::move(loaded.model), static_cast<uint64_t>(i));
    ASSERT_EQ(r.ran.size(), 1u) << "not fused into one node";
    EXPECT_EQ(r.ran[0], (rank2 ? (act.empty() ? "Gemm" : "FusedGemm") : "FusedMatMul") + std::string(" cpu-avx512"));
    const NamedValues& want = r.want;
    const NamedValues& got = r.got;
    const Tensor& a = want[0].second.tensor();
    const Tensor& b = got[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t e = 0; e < a.element_count(); ++e)
      ASSERT_NEAR(b.data<float>()[e], a.data<float>()[e], 2e-5 + 2e-5 * std::fabs(a.data<float>()[e]) + 2e-6 * K)
          << "element " << e;
  }
}
