// The CPU engine's FusedAttention kernel (cpu/kernels/nn/fused_attention.cpp)
// against the reference on the unfused graph it replaces: seeded random
// attention in the forms exporters write (Q and K^T each scaled, a logits
// Div, a float mask of any broadcast rank or Where(bool, 0, -inf) with rows
// that see no key, the NaN guard, heads read from and written to
// [B, S, H, D] through Transposes), at sizes that fall on and off the
// kernel's blocks (8 query rows, 16 and 32 keys, 16 and 32 columns of V).
// Each case checks that the fused node ran on the kernel of the CPU at hand
// (AVX-512's, or AVX2's where AVX-512 is absent or capped:
// isa_avx2.cpu_fused_attention_test), so a kernel that declines fails; on a
// CPU with neither the pass must leave the MatMuls alone.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

using Rng = std::mt19937;
int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

// The kernel the CPU at hand runs FusedAttention on ("" where none does).
std::string attention_kernel() {
  if (ONNXSCOPE_CPU_AVX512("avx512f")) return "cpu-avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "cpu-avx2";
  return "";
}

struct KernelOf : Observer {
  std::string kernel;
  int fused = 0;
  void on_node(const NodeEvent& e) override {
    if (e.node->op_type == cpu::kFusedAttention) {
      kernel = std::string(e.kernel);
      ++fused;
    }
  }
};

struct Drawn {
  ModelBuilder m;
  std::string what;
  bool nan_in_q = false;
};

Drawn draw(Rng& rng) {
  Drawn c;
  const bool bshd = pick(rng, 0, 2) == 0;
  const int64_t B = pick(rng, 1, 2), H = pick(rng, 1, 3), Sq = pick(rng, 1, 40), T = pick(rng, 1, 70);
  const int64_t D = pick(rng, 1, 80), Dv = pick(rng, 1, 80);
  c.what = "B " + std::to_string(B) + " H " + std::to_string(H) + " Sq " + std::to_string(Sq) + " T " +
           std::to_string(T) + " D " + std::to_string(D) + " Dv " + std::to_string(Dv);
  auto in = [&](const std::string& name, int64_t s, int64_t d) {
    if (bshd) {
      c.m.input(name + "_in", DataType::Float, {B, s, H, d});
      attr_ints(c.m.node("Transpose", {name + "_in"}, {name}, name + "_heads"), "perm", {0, 2, 1, 3});
    } else {
      c.m.input(name, DataType::Float, {B, H, s, d});
    }
  };
  in("q", Sq, D);
  in("k", T, D);
  in("v", T, Dv);
  if (bshd) c.what += ", [B, S, H, D]";
  const float half = static_cast<float>(std::pow(static_cast<double>(D), -0.25));
  c.m.initializer(make_float_tensor("half", {}, {half}));
  attr_ints(c.m.node("Transpose", {"k"}, {"kt"}, "kt"), "perm", {0, 1, 3, 2});
  c.m.node("Mul", {"q", "half"}, {"qs"}, "scale_q");
  c.m.node("Mul", {"kt", "half"}, {"kts"}, "scale_k");
  c.m.node("MatMul", {"qs", "kts"}, {"s"}, "qk");
  std::string logits = "s";
  if (pick(rng, 0, 3) == 0) {
    c.m.initializer(make_float_tensor("temperature", {}, {1.5f}));
    c.m.node("Div", {logits, "temperature"}, {"sd"}, "div");
    logits = "sd";
    c.what += ", / 1.5";
  }
  switch (pick(rng, 0, 2)) {
    case 1: {  // a float mask of any rank that broadcasts into the scores
      const std::vector<int64_t> full = {B, H, Sq, T};
      std::vector<int64_t> ms(full.begin() + pick(rng, 0, 3), full.end());
      for (auto& d : ms)
        if (pick(rng, 0, 1)) d = 1;
      std::vector<DimSpec> dims(ms.begin(), ms.end());
      c.m.input("mask", DataType::Float, dims);
      c.m.node("Add", {logits, "mask"}, {"sm"}, "add_mask");
      logits = "sm";
      c.what += ", float mask of rank " + std::to_string(ms.size());
      break;
    }
    case 2: {  // Where(keep, 0, -inf): the inputs leave some rows with no key
      c.m.input("keep", DataType::Bool, {B, int64_t{1}, Sq, T});
      c.m.initializer(make_float_tensor("zero", {}, {0.0f}));
      c.m.initializer(make_float_tensor("minus_inf", {}, {-INFINITY}));
      c.m.node("Where", {"keep", "zero", "minus_inf"}, {"bias"}, "bias");
      c.m.node("Add", {logits, "bias"}, {"sm"}, "add_mask");
      logits = "sm";
      c.what += ", boolean mask";
      break;
    }
    default: break;
  }
  attr_int(c.m.node("Softmax", {logits}, {"p"}, "softmax"), "axis", -1);
  std::string p = "p";
  if (pick(rng, 0, 1)) {
    c.m.node("IsNaN", {"p"}, {"nan"}, "isnan");
    c.m.initializer(make_float_tensor("zero_p", {}, {0.0f}));
    c.m.node("Where", {"nan", "zero_p", "p"}, {"pg"}, "guard");
    p = "pg";
    c.what += ", NaN guard";
  }
  if (bshd) {
    c.m.node("MatMul", {p, "v"}, {"yh"}, "pv");
    attr_ints(c.m.node("Transpose", {"yh"}, {"y"}, "y_heads"), "perm", {0, 2, 1, 3});
    c.m.output("y", DataType::Float, {B, Sq, H, Dv});
  } else {
    c.m.node("MatMul", {p, "v"}, {"y"}, "pv");
    c.m.output("y", DataType::Float, {B, H, Sq, Dv});
  }
  c.nan_in_q = pick(rng, 0, 5) == 0;
  return c;
}

}  // namespace

TEST(CpuFusedAttention, MatchesTheReferenceOnTheUnfusedGraph) {
  if (attention_kernel().empty()) GTEST_SKIP() << "no AVX-512 or AVX2: the pass test covers the rest";
  Rng rng(20261130);
  int guarded_zero_rows = 0;
  for (int trial = 0; trial < 160; ++trial) {
    Drawn c = draw(rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + c.what);
    auto loaded = c.m.load();
    ASSERT_TRUE(loaded.ok()) << dump(loaded);
    std::shared_ptr<const Model> model = std::move(loaded.model);
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(trial) + 1;
    NamedValues in = make_inputs(*model, spec);
    for (auto& [name, v] : in) {
      Tensor& t = v.tensor();
      if (name == "keep")  // about one row in four sees no key
        for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<uint8_t>()[i] = (i / 3) % 4 != 0;
      if (name.rfind("q", 0) == 0 && c.nan_in_q) t.mutable_data<float>()[t.element_count() / 2] = NAN;
    }
    const NamedValues want = make_reference_engine()->prepare(model)->run(in);
    KernelOf k;
    RunOptions ro;
    ro.observer = &k;
    ro.capture_original = false;  // the nodes as the engine runs them (fused)
  ro.capture_original = false;  // the nodes as the engine runs them (fused)
    const NamedValues got = make_cpu_engine()->prepare(model)->run(in, ro);
    EXPECT_EQ(k.fused, 1);
    EXPECT_EQ(k.kernel, attention_kernel());
    const Tensor& a = want[0].second.tensor();
    const Tensor& b = got[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      if (std::isnan(x) || std::isnan(y)) {
        ASSERT_TRUE(std::isnan(x) && std::isnan(y)) << "[" << i << "]: " << x << " vs " << y;
        continue;
      }
      guarded_zero_rows += x == 0.0f && y == 0.0f;
      // Float sums of up to 80 products of values below 1 in magnitude (the
      // reference sums in double): a few float steps of the largest term.
      ASSERT_NEAR(x, y, 2e-5 + 2e-5 * std::fabs(x)) << "[" << i << "]";
    }
  }
  EXPECT_GT(guarded_zero_rows, 0);  // the draw reached rows the guard sets to 0
}

// No keys: Y is the empty sum (0), as the unfused MatMul gives.
TEST(CpuFusedAttention, NoKeysGivesZeros) {
  if (attention_kernel().empty()) GTEST_SKIP() << "no AVX-512 or AVX2";
  ModelBuilder m;
  m.input("q", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{4}});
  m.input("k", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{0}, int64_t{4}});
  m.input("v", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{0}, int64_t{5}});
  m.initializer(make_float_tensor("c", {}, {0.5f}));
  attr_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"s"});
  m.node("Mul", {"s", "c"}, {"ss"});
  attr_int(m.node("Softmax", {"ss"}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", "v"}, {"y"});
  m.output("y", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}});
  auto model = load_model(m);
  NamedValues in = make_inputs(*model, InputSpec{});
  KernelOf k;
  RunOptions ro;
  ro.observer = &k;
  ro.capture_original = false;  // the nodes as the engine runs them (fused)
  const NamedValues got = make_cpu_engine()->prepare(model)->run(in, ro);
  EXPECT_EQ(k.kernel, attention_kernel());
  const Tensor& y = got[0].second.tensor();
  ASSERT_EQ(y.element_count(), 30u);
  for (uint64_t i = 0; i < y.element_count(); ++i) EXPECT_EQ(y.data<float>()[i], 0.0f) << i;
}

// K from a Reshape to a shape given at run time: shape inference knows its
// rank, not its dims. The CPU engine fuses on trust (unchecked_shapes) and
// checks at run time: K and V of batch 1 against Q of batch 2 broadcast in
// the unfused MatMuls, which the fused node then computes step by step;
// shapes that fit run on the kernel. A device's plan keeps the MatMuls.
TEST(CpuFusedAttention, UnknownDimsAreCheckedAtRunTime) {
  if (attention_kernel().empty()) GTEST_SKIP() << "no AVX-512 or AVX2";
  ModelBuilder m;
  m.input("q", DataType::Float, {int64_t{2}, int64_t{2}, int64_t{5}, int64_t{8}});
  m.input("k_flat", DataType::Float, {DimSpec(std::string("n"))});
  m.input("k_shape", DataType::Int64, {int64_t{4}});
  m.input("v_flat", DataType::Float, {DimSpec(std::string("nv"))});
  m.input("v_shape", DataType::Int64, {int64_t{4}});
  m.initializer(make_float_tensor("c", {}, {0.35f}));
  m.node("Reshape", {"k_flat", "k_shape"}, {"k"});
  m.node("Reshape", {"v_flat", "v_shape"}, {"v"});
  attr_ints(m.node("Transpose", {"k"}, {"kt"}), "perm", {0, 1, 3, 2});
  m.node("MatMul", {"q", "kt"}, {"s"});
  m.node("Mul", {"s", "c"}, {"ss"});
  attr_int(m.node("Softmax", {"ss"}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", "v"}, {"y"});
  m.output_untyped("y");
  auto model = load_model(m);
  for (const int64_t kb : {int64_t{1}, int64_t{2}}) {
    SCOPED_TRACE("K of batch " + std::to_string(kb));
    InputSpec spec;
    spec.seed = 7;
    spec.dims["n"] = kb * 2 * 6 * 8;
    spec.dims["nv"] = kb * 2 * 6 * 3;
    NamedValues in = make_inputs(*model, spec);
    const int64_t kdims[4] = {kb, 2, 6, 8}, vdims[4] = {kb, 2, 6, 3};
    for (int i = 0; i < 4; ++i) {
      in[2].second.tensor().mutable_data<int64_t>()[i] = kdims[i];
      in[4].second.tensor().mutable_data<int64_t>()[i] = vdims[i];
    }
    const NamedValues want = make_reference_engine()->prepare(model)->run(in);
    KernelOf k;
    RunOptions ro;
    ro.observer = &k;
    ro.capture_original = false;
    const NamedValues got = make_cpu_engine()->prepare(model)->run(in, ro);
    EXPECT_EQ(k.fused, 1);
    EXPECT_EQ(k.kernel, kb == 2 ? attention_kernel() : "fused-reference");
    const Tensor& a = want[0].second.tensor();
    const Tensor& b = got[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t i = 0; i < a.element_count(); ++i)
      ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 2e-5) << "[" << i << "]";
  }
  CpuOptions device;
  device.device_fusions = true;
  KernelOf k;
  RunOptions ro;
  ro.observer = &k;
  ro.capture_original = false;
  InputSpec spec;
  spec.dims["n"] = 2 * 2 * 6 * 8;
  spec.dims["nv"] = 2 * 2 * 6 * 3;
  NamedValues in = make_inputs(*model, spec);
  const int64_t kdims[4] = {2, 2, 6, 8}, vdims[4] = {2, 2, 6, 3};
  for (int i = 0; i < 4; ++i) {
    in[2].second.tensor().mutable_data<int64_t>()[i] = kdims[i];
    in[4].second.tensor().mutable_data<int64_t>()[i] = vdims[i];
  }
  make_cpu_engine(device)->prepare(model)->run(in, ro);
  EXPECT_EQ(k.fused, 0);
}
