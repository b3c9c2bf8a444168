// The fuse-masked-sdpa pass (cpu/passes/fuse_masked_sdpa.cpp) and the
// matcher it shares with fuse-sdpa (cpu/passes/sdpa_match.h): torch.onnx's
// scaled_dot_product_attention (Q and K^T scaled, K^T through Reshape/
// Transpose/Reshape read off Shape(K), a boolean mask made additive, the
// NaN guard) becomes one FusedAttention; what must not fuse does not; the
// CPU engine runs the pass where the CPU has AVX-512, or AVX2 and FMA (its
// kernels'; cpu_fused_attention_test checks them); and the fused node's
// plain kernel gives exactly the unfused reference results.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// The CPU engine's plan fuses only where a FusedAttention kernel runs
// (AVX-512, or AVX2 and FMA); elsewhere the same matcher is checked through
// a device's plan (these models' dims are all known, where the two plans
// differ), and the CPU engine's plan must leave the model alone.
bool fused_attention_kernel() {
  return ONNXSCOPE_CPU_AVX512("avx512f") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
}

std::shared_ptr<Model> rewritten(const Model& original, cpu::PassFn pass, bool expect_change) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  cpu::PassContext ctx{&log};
  if (pass == cpu::fuse_masked_sdpa && !fused_attention_kernel()) {
    Model cpu_plan(original);
    EXPECT_FALSE(pass(cpu_plan, ctx)) << "the CPU engine's plan fused without the kernel that runs the fused node";
    ctx.device_fusions = true;
  }
  EXPECT_EQ(pass(*m, ctx), expect_change);
  return m;
}

// What may differ from the exporter's form, one thing at a time.
struct Form {
  int64_t opset = 18;
  bool reshaped_kt = true;       // K^T by Reshape/Transpose/Reshape (else a Transpose)
  bool mask = true;              // Where(keep, 0, -inf) added to the scores
  bool guard = true;             // Where(IsNaN(P), 0, P)
  bool softmax_axis = true;      // the axis attribute given
  int64_t mask_batch = 1;        // the mask's batch dim (the model's is 1)
  bool swapped_last_dims = true;  // the second Reshape swaps S and D (else it does not transpose)
  float guard_value = 0.f;       // what the guard writes for NaN
  bool logits_read_twice = false;
};

// torch.onnx's export of F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
// at opset 18 (bert_base.onnx's attention, nodes in its order), batch 1,
// 2 heads, 4 queries, 5 keys, head size 8; K^T and the scale as it writes them.
ModelBuilder torch_sdpa(const Form& f) {
  ModelBuilder b(f.opset, 10);
  b.input("q", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}});
  b.input("k", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{8}});
  b.input("v", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{3}});
  b.input("keep", DataType::Bool, {f.mask_batch, int64_t{1}, int64_t{4}, int64_t{5}});
  b.initializer(make_float_tensor("c", {}, {0.59460354f}));  // sqrt(sqrt(1 / 8))
  b.initializer(make_float_tensor("zero", {}, {0.f}));
  b.initializer(make_float_tensor("guard_value", {}, {f.guard_value}));
  b.initializer(make_float_tensor("minus_inf", {}, {-INFINITY}));
  if (f.reshaped_kt) {
    b.initializer(make_int64_tensor("m1", {1}, {-1}));
    b.initializer(make_int64_tensor("m2", {1}, {-2}));
    b.initializer(make_int64_tensor("big", {1}, {INT64_MAX}));
    b.initializer(make_int64_tensor("z", {1}, {0}));
    b.node("Shape", {"k"}, {"ks"}, "shape");
    b.node("Slice", {"ks", "m1", "big"}, {"d"}, "slice_d");
    b.node("Slice", {"ks", "m2", "m1"}, {"s"}, "slice_s");
    b.node("Slice", {"ks", "z", "m2"}, {"bh"}, "slice_bh");
    attr_int(b.node("Concat", {"m1", "s", "d"}, {"shape1"}, "concat1"), "axis", 0);
    b.node("Reshape", {"k", "shape1"}, {"k3"}, "reshape1");
    attr_ints(b.node("Transpose", {"k3"}, {"k3t"}, "transpose"), "perm", {0, 2, 1});
    attr_int(b.node("Concat", {"bh", f.swapped_last_dims ? "d" : "s", f.swapped_last_dims ? "s" : "d"}, {"shape2"},
                    "concat2"),
             "axis", 0);
    b.node("Reshape", {"k3t", "shape2"}, {"kt"}, "reshape2");
  } else {
    attr_ints(b.node("Transpose", {"k"}, {"kt"}, "transpose"), "perm", {0, 1, 3, 2});
  }
  b.node("Mul", {"q", "c"}, {"qs"}, "scale_q");
  b.node("Mul", {"kt", "c"}, {"kts"}, "scale_k");
  std::string logits = "scores";
  b.node("MatMul", {"qs", "kts"}, {logits}, "qk");
  if (f.mask) {
    b.node("Where", {"keep", "zero", "minus_inf"}, {"bias"}, "bias");
    b.node("Add", {logits, "bias"}, {"masked"}, "add_mask");
    logits = "masked";
  }
  auto& sm = b.node("Softmax", {logits}, {"p"}, "softmax");
  if (f.softmax_axis) attr_int(sm, "axis", -1);
  std::string p = "p";
  if (f.guard) {
    b.node("IsNaN", {"p"}, {"nan"}, "isnan");
    b.node("Where", {"nan", "guard_value", "p"}, {"pg"}, "guard");
    p = "pg";
  }
  b.node("MatMul", {p, "v"}, {"y"}, "pv");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{3}});
  if (f.logits_read_twice) b.output(logits, DataType::Float, {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{5}});
  return b;
}

// The reference on the original against the CPU engine (no rewrites of its
// own) on the rewritten model, with some query rows seeing no key.
void expect_exact(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& fused) {
  InputSpec spec;
  spec.seed = 5;
  NamedValues in = make_inputs(*original, spec);
  Tensor& keep = in[3].second.tensor();
  for (int64_t j = 0; j < 5; ++j) {
    keep.mutable_data<uint8_t>()[j] = 0;          // query 0: every key masked
    keep.mutable_data<uint8_t>()[5 + j] = j == 2;  // query 1: one key
  }
  const NamedValues want = make_reference_engine()->prepare(original)->run(in);
  CpuOptions o;
  o.opt_level = 0;
  o.disabled_kernels = {"cpu-avx512", "cpu-avx2"};  // the plain kernel: the unfused steps on reference kernels
  const NamedValues got = make_cpu_engine(o)->prepare(fused)->run(in);
  const Tensor& a = want[0].second.tensor();
  const Tensor& b = got[0].second.tensor();
  ASSERT_EQ(a.shape(), b.shape());
  int nans = 0;
  for (uint64_t i = 0; i < a.element_count(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    nans += std::isnan(x);
    ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "[" << i << "]: " << x << " vs " << y;
  }
  // query 0 of each head: NaN without the guard, zeros with it
  const bool guarded = !fused->graph.nodes.empty() && fused->graph.nodes.back().attribute("nan_to_zero") &&
                       fused->graph.nodes.back().attribute("nan_to_zero")->i == 1;
  EXPECT_EQ(nans, guarded ? 0 : 2 * 3);
}

}  // namespace

TEST(FuseMaskedSdpa, TorchOnnxAttentionBecomesOneNode) {
  for (const bool reshaped : {true, false})
    for (const bool guard : {true, false}) {
      SCOPED_TRACE(std::string(reshaped ? "K^T reshaped" : "K^T transposed") + (guard ? ", guarded" : ""));
      Form f;
      f.reshaped_kt = reshaped;
      f.guard = guard;
      auto original = load_model(torch_sdpa(f));
      auto m = rewritten(*original, cpu::fuse_masked_sdpa, true);
      // The Shape/Slice/Concat nodes stay for eliminate-dead-nodes; the Where making the mask stays.
      std::vector<std::string> left;
      for (const std::string& op : op_types(*m))
        if (op != "Shape" && op != "Slice" && op != "Concat") left.push_back(op);
      ASSERT_EQ(left, (std::vector<std::string>{"Where", "FusedAttention"}));
      const Node& a = m->graph.nodes.back();
      EXPECT_EQ(a.domain, cpu::kCpuDomain);
      EXPECT_EQ(a.inputs, (std::vector<std::string>{"q", "k", "v", "bias"}));
      EXPECT_EQ(a.outputs, (std::vector<std::string>{"y"}));
      EXPECT_FLOAT_EQ(a.attribute("scale_q")->f, 0.59460354f);
      EXPECT_FLOAT_EQ(a.attribute("scale_k")->f, 0.59460354f);
      EXPECT_FLOAT_EQ(a.attribute("scale")->f, 1.f);
      EXPECT_EQ(a.attribute("nan_to_zero")->i, guard ? 1 : 0);
      // Mul, Mul, MatMul, Add, Softmax, MatMul; the K^T nodes; IsNaN and Where
      EXPECT_EQ(cpu::fused_from(a).size(), static_cast<size_t>((reshaped ? 3 : 1) + 6 + (guard ? 2 : 0)));
      expect_exact(original, m);
    }
}

TEST(FuseMaskedSdpa, WithoutAMaskToo) {
  Form f;
  f.mask = false;
  auto m = rewritten(*load_model(torch_sdpa(f)), cpu::fuse_masked_sdpa, true);
  EXPECT_EQ(m->graph.nodes.back().op_type, cpu::kFusedAttention);
  EXPECT_EQ(m->graph.nodes.back().inputs.size(), 3u);
}

TEST(FuseMaskedSdpa, WhatMustNotFuseDoesNot) {
  auto unchanged = [](const Form& f, const char* why) {
    SCOPED_TRACE(why);
    rewritten(*load_model(torch_sdpa(f)), cpu::fuse_masked_sdpa, false);
  };
  Form f;
  f.mask_batch = 2;
  unchanged(f, "a mask that enlarges the scores (batch 2 against 1)");
  f = Form{};
  f.opset = 11;
  f.softmax_axis = false;
  unchanged(f, "Softmax-11 without an axis: axis 1, not the keys");
  f = Form{};
  f.swapped_last_dims = false;
  unchanged(f, "a Reshape dance that does not transpose");
  f = Form{};
  f.guard_value = 1.f;
  unchanged(f, "a guard that writes 1 for NaN");
  f = Form{};
  f.logits_read_twice = true;
  unchanged(f, "the masked scores are a graph output too");
}

// fuse-sdpa (both engines, ai.onnx Attention at opset >= 23) leaves these
// forms alone: Attention has no NaN guard, and zeros, not NaN, where every key is masked.
TEST(FuseMaskedSdpa, FuseSdpaLeavesTheseForms) {
  Form f;
  f.opset = 23;
  rewritten(*load_model(torch_sdpa(f)), cpu::fuse_sdpa, false);
  f.guard = false;
  rewritten(*load_model(torch_sdpa(f)), cpu::fuse_sdpa, false);
}

// A device engine's optimizer runs the pass, and eliminate-dead-nodes drops
// the shape arithmetic; the CPU engine's runs it where its kernels can
// (AVX-512, or AVX2 and FMA) and elsewhere keeps the MatMuls (oneDNN) rather
// than the plain kernel.
TEST(FuseMaskedSdpa, DevicesAndCpusWithItsKernelAskForIt) {
  auto original = load_model(torch_sdpa(Form{}));
  Diagnostics log;
  auto cpu_model = std::make_shared<Model>(*original);
  cpu::optimize(*cpu_model, CpuOptions{}, false, log);
  if (fused_attention_kernel())
    EXPECT_EQ(op_types(*cpu_model), (std::vector<std::string>{"Where", "FusedAttention"}));
  else
    for (const std::string& op : op_types(*cpu_model)) EXPECT_NE(op, cpu::kFusedAttention);
  auto device_model = std::make_shared<Model>(*original);
  CpuOptions o;
  o.device_fusions = true;
  cpu::optimize(*device_model, o, false, log);
  EXPECT_EQ(op_types(*device_model), (std::vector<std::string>{"Where", "FusedAttention"}));
}
