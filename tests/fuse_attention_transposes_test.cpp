// The fuse-attention-transposes pass (cpu/passes/fuse_attention_transposes.cpp):
// the Transposes [0, 2, 1, 3] around a FusedAttention (its Q, K, V from
// [B, S, H, D], its output back to it) taken into the node. Checked: the
// node it makes, what must not fire (a Transpose read elsewhere, another
// perm, only some inputs transposed), the plain kernel's bits against the
// model as it was, and cuda-sim on the rewritten layout against it.
#include <gtest/gtest.h>

#include <random>

#include "compare_outputs.h"
#include "cpu/fused_ops.h"
#include "cuda/kernel_device.h"
#include "cuda/runtime.h"
#include "offload/offload_engine.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/cuda.h"
#include "onnxscope/engines.h"
#include "onnxscope/inputs.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

struct Options {
  int64_t S = 6;  // 6 x 6 scores: each head's matrices on 16 bytes, read in place; 5: copied
  std::vector<int64_t> v_perm = {0, 2, 1, 3};
  bool q_read_twice = false;
  bool mask = true;
};

// q, k, v [B=2, S, H=3, D=4] -> Transpose each -> FusedAttention (scale,
// a float mask [B, 1, 1, T]) -> Transpose -> y [2, S, 3, 4].
ModelBuilder block(const Options& o) {
  ModelBuilder b(17);
  b.opset("onnxscope.cpu", 1);
  const std::vector<DimSpec> bshd = {int64_t{2}, o.S, int64_t{3}, int64_t{4}};
  for (const char* n : {"q", "k", "v"}) b.input(n, DataType::Float, bshd);
  b.input("mask", DataType::Float, {int64_t{2}, int64_t{1}, int64_t{1}, o.S});
  attr_ints(b.node("Transpose", {"q"}, {"qt"}, "tq"), "perm", {0, 2, 1, 3});
  attr_ints(b.node("Transpose", {"k"}, {"kt"}, "tk"), "perm", {0, 2, 1, 3});
  attr_ints(b.node("Transpose", {"v"}, {"vt"}, "tv"), "perm", o.v_perm);
  std::vector<std::string> in = {"qt", "kt", "vt"};
  if (o.mask) in.push_back("mask");
  auto& f = b.node("FusedAttention", in, {"a"}, "attention", "onnxscope.cpu");
  attr_float(f, "scale", 0.5f);
  attr_float(f, "scale_q", 0.75f);
  attr_ints(b.node("Transpose", {"a"}, {"y"}, "ty"), "perm", {0, 2, 1, 3});
  b.output("y", DataType::Float, o.v_perm == std::vector<int64_t>{0, 2, 1, 3} ? bshd : std::vector<DimSpec>{});
  if (o.q_read_twice) {
    b.node("Neg", {"qt"}, {"n"}, "second_reader");
    b.output_untyped("n");
  }
  return b;
}

std::shared_ptr<Model> fused(const Model& original, bool expect_change) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  cpu::PassContext ctx{&log};
  EXPECT_EQ(cpu::fuse_attention_transposes(*m, ctx), expect_change);
  return m;
}

NamedValues inputs_for(const Model& m) {
  InputSpec spec;
  spec.seed = 6;
  return make_inputs(m, spec);
}

NamedValues plain_cpu(const std::shared_ptr<Model>& m, const NamedValues& in) {
  CpuOptions o;
  o.opt_level = 0;
  return make_cpu_engine(o)->prepare(m)->run(in);
}

}  // namespace

TEST(FuseAttentionTransposes, TheFourTransposesGoIntoTheNode) {
  for (bool mask : {true, false}) {
    SCOPED_TRACE(mask);
    Options o;
    o.mask = mask;
    auto original = load_model(block(o));
    auto m = fused(*original, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"FusedAttention"}));
    const Node& f = m->graph.nodes[0];
    EXPECT_EQ(f.inputs[0], "q");
    EXPECT_EQ(f.inputs[1], "k");
    EXPECT_EQ(f.inputs[2], "v");
    EXPECT_EQ(f.outputs, (std::vector<std::string>{"y"}));
    EXPECT_EQ(f.attribute("bshd_in")->i, 7);  // Q, K and V
    EXPECT_EQ(f.attribute("bshd_out")->i, 1);
    EXPECT_FLOAT_EQ(f.attribute("scale")->f, 0.5f);
    EXPECT_EQ(cpu::fused_from(f), (std::vector<std::string>{"tq", "tk", "tv", "attention", "ty"}));
    const NamedValues in = inputs_for(*original);
    const NamedValues want = plain_cpu(original, in);
    expect_float_outputs(want, plain_cpu(m, in), 0);  // the plain kernel: the same bits
    expect_float_outputs(want, make_engine("cuda-sim")->prepare(m)->run(in), 1e-5);
  }
}

TEST(FuseAttentionTransposes, NotWhereAnInputsTransposeIsReadElsewhereOrDiffers) {
  Options o;
  o.q_read_twice = true;  // Q's Transpose stays; K's, V's and the output's go
  auto original = load_model(block(o));
  auto m = fused(*original, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"Transpose", "FusedAttention", "Neg"}));
  const Node& f = m->graph.nodes[1];
  EXPECT_EQ(f.attribute("bshd_in")->i, 6);  // K and V
  EXPECT_EQ(f.attribute("bshd_out")->i, 1);
  const NamedValues in = inputs_for(*original);
  expect_float_outputs(plain_cpu(original, in), plain_cpu(m, in), 0);
  for (const char* precision : {"fp32", "fp16"}) {  // in place with Q in [B, H, S, D] (fp32), copied (fp16: no half copies)
    CudaOptions co;
    co.precision = precision;
    expect_float_outputs(plain_cpu(original, in), make_cuda_sim_engine(co)->prepare(m)->run(in),
                         std::string(precision) == "fp32" ? 1e-5 : 2e-2);
  }

  o = {};
  o.v_perm = {0, 2, 3, 1};  // V moved otherwise: [B, H, D, S] would not be V's [B, H, T, Dv]
  auto other = fused(*load_model(block(o)), true);
  EXPECT_EQ(op_types(*other), (std::vector<std::string>{"Transpose", "FusedAttention"}));
  EXPECT_EQ(other->graph.nodes.back().attribute("bshd_in")->i, 3);  // Q and K
}

// cuda-sim runs the rewritten node on the device from BERT-like inputs, in
// each precision (fp32 and TF32 read the heads in place through pointer
// arrays where each matrix starts on 16 bytes, else copy them, as fp16 does
// for its half GEMMs), in recorded, captured and replayed runs, with new
// inputs each time.
TEST(FuseAttentionTransposes, CudaSimRunsItOnTheDevice) {
  for (int64_t S : {6, 5})
  for (const char* precision : {"fp32", "tf32", "fp16"}) {
    SCOPED_TRACE(std::string(precision) + ", S " + std::to_string(S));
    Options opt;
    opt.S = S;
    auto original = load_model(block(opt));
    CudaOptions o;
    o.precision = precision;
    auto prepared = make_cuda_sim_engine(o)->prepare(original);
    const std::string p = prepared->placement();
    EXPECT_NE(p.find("1 of 1 nodes on the device"), std::string::npos) << p;
    const double tol = std::string(precision) == "fp32" ? 1e-5 : 2e-2;
    for (uint64_t run = 0; run < 4; ++run) {
      InputSpec spec;
      spec.seed = 30 + run;
      const NamedValues in = make_inputs(*original, spec);
      expect_float_outputs(plain_cpu(original, in), prepared->run(in), tol);
    }
    EXPECT_EQ(prepared->last_run_stats().how, "captured run replayed");
  }
}

// fp16 from projections: x -> MatMul + bias (FusedMatMul) x3 -> Reshape [B,
// S, H, D] -> Transpose -> FusedAttention -> Transpose. The projections write half
// copies and the attention reads the heads from them in place; the outputs
// are the bits of the run that copies the heads and converts them.
TEST(FuseAttentionTransposes, Fp16ReadsTheProjectionsHalfCopies) {
  ModelBuilder b(17);
  b.opset("onnxscope.cpu", 1);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{8}, int64_t{16}});  // B 2, S 8, E 16 = H 2 x D 8
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  auto weights = [&](const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(gen);
    b.initializer(make_float_tensor(name, dims, v));
  };
  b.initializer(make_int64_tensor("heads", {4}, {2, 8, 2, 8}));
  for (const char* p : {"q", "k", "v"}) {
    const std::string n(p);
    weights("w" + n, {16, 16});
    weights("b" + n, {16});
    b.node("MatMul", {"x", "w" + n}, {n + "p"}, n + "_proj");  // -> FusedMatMul with the bias
    b.node("Add", {n + "p", "b" + n}, {n + "0"}, n + "_bias");
    b.node("Reshape", {n + "0", "heads"}, {n + "1"}, n + "_heads");
    attr_ints(b.node("Transpose", {n + "1"}, {n + "2"}, n + "_t"), "perm", {0, 2, 1, 3});
  }
  attr_float(b.node("FusedAttention", {"q2", "k2", "v2"}, {"a"}, "attention", "onnxscope.cpu"), "scale", 0.35f);
  attr_ints(b.node("Transpose", {"a"}, {"y"}, "ty"), "perm", {0, 2, 1, 3});
  b.output("y", DataType::Float, {int64_t{2}, int64_t{8}, int64_t{2}, int64_t{8}});
  auto model = load_model(b);
  const NamedValues in = inputs_for(*model);
  std::vector<NamedValues> outs;
  for (bool copies : {true, false}) {
    auto rt = cuda::make_host_runtime(1);
    rt->set_half_copies(copies);
    auto prepared = offload::make_offload_engine("cuda-sim", cuda::make_kernel_device(rt, cuda::MathMode::Fp16, "host fp16"))
                        ->prepare(model);
    EXPECT_NE(prepared->placement().find("7 of 7 nodes on the device"), std::string::npos) << prepared->placement();
    for (int run = 0; run < 3; ++run) outs.push_back(prepared->run(in));
    EXPECT_EQ(rt->half_inputs_read(), copies ? 6u : 0u) << "Q, K and V in the first two runs (the third replays the second)";
  }
  for (size_t k = 1; k < outs.size(); ++k) expect_float_outputs(outs[0], outs[k], 0);
  expect_float_outputs(plain_cpu(model, in), outs[0], 2e-2);
}
