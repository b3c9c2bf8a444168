// Every operator of the CUDA engine's table against the reference engine, in
// the style of ggml's test-backend-ops: seeded random one-node problems
// (cuda_op_cases.h: odd sizes, broadcasting, negative axes, zero-sized dims,
// the opset variants) run on both and must agree, and an observer checks that the node ran on
// the device, so an operator that silently falls back fails.
//
// The cuda-sim engine (the table and kernels over the host runtime) runs it
// in every build; on a machine with a GPU the cuda engine runs it too, in
// fp32 and tf32. A table entry without a case generator here fails
// EveryOperatorHasCases, so a new operator cannot go untested.
//
// Tolerance: |got - ref| <= atol + rtol * |ref| with atol 1e-5, rtol 1e-4
// (the reference accumulates in double; the kernels in float, in another
// order). TF32 keeps 10 mantissa bits: rtol and atol 5e-3 there for GEMM and
// convolution outputs; fp16 rounds their inputs and outputs to 11
// significant bits and has a narrower range: 1e-2 there.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "cuda/ops/op_table.h"
#include "cuda_op_cases.h"
#include "model_builder.h"
#include "onnxscope/inputs.h"
#include "random_chain.h"
#include "onnxscope/cuda.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::cuda_cases;

namespace {

constexpr int kCasesPerOp = 24;

struct Kernels : Observer {
  std::vector<std::string> ran;
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.kernel); }
};

// Compares two values element by element (as doubles; exact for the integer and bool types used here).
void expect_close(const Tensor& got, const Tensor& want, double atol, double rtol, const std::string& where) {
  ASSERT_EQ(got.dtype(), want.dtype()) << where;
  ASSERT_EQ(got.shape(), want.shape()) << where;
  const Tensor& g = got;
  const Tensor& w = want;
  int shown = 0;
  for (uint64_t i = 0; i < g.element_count() && shown < 5; ++i) {
    const double a = g.element_as_double(i), b = w.element_as_double(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // equal infinities too
    // An infinity matches only itself (rtol * inf would let any value pass).
    if (std::isinf(a) || std::isinf(b) || !(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      ADD_FAILURE() << where << " [" << i << "]: got " << a << ", expected " << b;
      ++shown;
    }
  }
}

// Runs every op's cases on the engine `make` gives, in `precision`. On a GPU
// (`gpu`), whose float math may differ from the host's by an ulp, a float16
// or bfloat16 result may round to the neighbouring value: one unit of its
// last place is allowed there, for a GEMM's (`loose`: its sums run in
// another order than the reference's) and where a case says its float32
// statistics may round apart from the reference's double ones
// (`rounds_apart`); otherwise the host runtime must give the same bits
// (Softmax's and the reductions' float16 results, whose float32 sums the
// reference takes in double, round alike in every case drawn).
void check_engine(const std::function<std::unique_ptr<Engine>(const CudaOptions&)>& make, const std::string& precision,
                  bool gpu = false) {
  CudaOptions options;
  options.precision = precision;
  auto reference = make_reference_engine();
  // One engine for every case, as a user's session keeps one: on a GPU, a
  // new engine per case (a context's stream, cuBLAS and cuDNN handles) costs
  // more than the cases, and state one case leaves must not break the next.
  const auto engine = make(options);
  for (const auto& [op, gen] : generators()) {
    Rng rng(static_cast<uint32_t>(std::hash<std::string>{}(op) & 0xffffffu));
    const auto started = std::chrono::steady_clock::now();
    if (gpu)  // where a GPU run stops or slows, its log says
      std::fprintf(stderr, "[%s] %s ...", precision.c_str(), op.c_str());
    for (int i = 0; i < kCasesPerOp * case_weight(op); ++i) {
      Case c = gen(rng, op);
      const std::string where = op + " case " + std::to_string(i) + ":" + c.what;
      auto loaded = c.m.load();
      ASSERT_TRUE(loaded.ok()) << where << "\n" << dump(loaded);
      std::shared_ptr<const Model> m(std::move(loaded.model));
      NamedValues want;
      try {
        want = reference->prepare(m)->run(c.inputs);
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": the reference refused the case: " << e.what();
        continue;
      }
      Kernels k;
      RunOptions ro;
      ro.observer = &k;
      NamedValues got;
      try {
        got = engine->prepare(m)->run(c.inputs, ro);
      } catch (const Error& e) {
        ADD_FAILURE() << where << ": " << e.what();
        continue;
      }
      ASSERT_EQ(k.ran.size(), 1u) << where;
      EXPECT_NE(k.ran[0].rfind("cpu/", 0), 0u) << where << ": ran on the host (" << k.ran[0] << ")";
      ASSERT_EQ(got.size(), want.size()) << where;
      double tol = !c.loose ? 0 : precision == "tf32" ? 5e-3 : precision == "fp16" ? 1e-2 : 0;
      if (c.loose_terms > 9) tol *= static_cast<double>(c.loose_terms) / 9;
      for (size_t o = 0; o < got.size(); ++o) {
        const DataType t = want[o].second.tensor().dtype();
        const double ulp = !gpu && !c.loose && !c.rounds_apart ? 0 : t == DataType::Float16 ? 1.0 / 1024 : t == DataType::BFloat16 ? 1.0 / 128 : 0;
        expect_close(got[o].second.tensor(), want[o].second.tensor(), 1e-5 + tol, 1e-4 + tol + ulp, where + " output " + want[o].first);
      }
    }
    if (gpu)
      std::fprintf(stderr, " %.0f ms\n",
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  }
}

std::string no_gpu_reason() {
  const CudaStatus s = cuda_status();
  return s.devices.empty() ? (s.reason.empty() ? std::string("no CUDA device") : s.reason) : std::string();
}

}  // namespace

// --- the CPU engine's fused operators, made by its passes from unfused patterns ---

struct FusionCase {
  std::string fused;  // "onnxscope.cpu::FusedConv"
  std::function<Case(Rng&)> make;
  int trials = 1;  // random cases drawn
};

// A random chain of elementwise ops (support/random_chain.h) and inputs for it.
Case elementwise_chain(Rng& rng) {
  Case c(22);
  c.m = random_elementwise_chain(rng);
  auto loaded = c.m.load();
  EXPECT_TRUE(loaded.ok()) << dump(loaded);
  if (!loaded.ok()) return c;
  InputSpec spec;
  spec.seed = rng();
  c.inputs = make_inputs(*loaded.model, spec);
  return c;
}

std::string init(Case& c, const std::string& name, const Shape& s, Rng& rng, float lo = -1, float hi = 1) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(count(s));
  for (auto& x : v) x = d(rng);
  c.m.initializer(make_float_tensor(name, std::vector<int64_t>(s.begin(), s.end()), v));
  return name;
}

// torch.onnx's scaled_dot_product_attention: Q and K^T each scaled by
// sqrt(scale), K^T as a plain Transpose or its Reshape/Transpose/Reshape
// form, an optional mask (float, or Where(bool, 0, -inf) with rows where
// every key is masked), an optional logits Div, and the NaN guard
// Where(IsNaN(P), 0, P) or not; a NaN query now and then.
Case torch_sdpa(Rng& rng) {
  Case c(choose(rng, std::vector<int64_t>{13, 17, 23}));
  c.loose = true;
  // A third from [B, S, H, D] through Transposes [0, 2, 1, 3] and back, as
  // exporters' projections give them (fuse-attention-transposes: heads read
  // in place where every matrix starts on 16 bytes, D and Dv then mostly
  // multiples of 4; copied where not).
  const bool bshd = pick(rng, 0, 2) == 0;
  const int64_t B = pick(rng, 1, 2), H = pick(rng, 1, 3), Sq = pick(rng, 1, 5);
  const int64_t T = bshd ? choose(rng, std::vector<int64_t>{4, 8, 5}) : pick(rng, 1, 6);
  const int64_t D = bshd ? choose(rng, std::vector<int64_t>{4, 8, 6}) : pick(rng, 2, 8);
  const int64_t Dv = bshd ? choose(rng, std::vector<int64_t>{4, 8, 3}) : pick(rng, 1, 5);
  if (bshd) {
    c.what += " (from [B, S, H, D])";
    c.floats("q_in", {B, Sq, H, D}, rng);
    c.floats("k_in", {B, T, H, D}, rng);
    c.floats("v_in", {B, T, H, Dv}, rng);
    for (const char* n : {"q", "k", "v"})
      attr_ints(c.m.node("Transpose", {std::string(n) + "_in"}, {n}, std::string(n) + "_heads"), "perm", {0, 2, 1, 3});
  } else {
    c.floats("q", {B, H, Sq, D}, rng);
    c.floats("k", {B, H, T, D}, rng);
    c.floats("v", {B, H, T, Dv}, rng);
  }
  if (pick(rng, 0, 4) == 0) {
    Tensor& q = c.inputs[0].second.tensor();
    q.mutable_data<float>()[pick(rng, 0, static_cast<int64_t>(q.element_count()) - 1)] = NAN;
    c.what += " (a NaN in q)";
  }
  // D >= 2: with a scale of 1 and no mask or guard, opset 23 makes Attention
  const std::string half = c.float_scalar("half_scale", static_cast<float>(std::pow(static_cast<double>(D), -0.25)));
  // From [B, S, H, D], a plain K^T Transpose [0, 1, 3, 2] merges with K's
  // [0, 2, 1, 3] into one [0, 2, 3, 1] (transpose cancellation), which
  // fuse-masked-sdpa takes as K^T of K in [B, T, H, D].
  if (coin(rng)) {
    attr_ints(c.m.node("Transpose", {"k"}, {"kt"}, "kt"), "perm", {0, 1, 3, 2});
  } else {
    c.what += " (K^T reshaped)";
    c.m.node("Shape", {"k"}, {"ks"}, "shape");
    c.m.node("Slice", {"ks", c.ints("m1", {-1}), c.ints("big", {INT64_MAX})}, {"d"}, "slice_d");
    c.m.node("Slice", {"ks", c.ints("m2", {-2}), "m1"}, {"t"}, "slice_t");
    c.m.node("Slice", {"ks", c.ints("zero", {0}), "m2"}, {"bh"}, "slice_bh");
    attr_int(c.m.node("Concat", {"m1", "t", "d"}, {"s1"}, "concat1"), "axis", 0);
    c.m.node("Reshape", {"k", "s1"}, {"k3"}, "reshape1");
    attr_ints(c.m.node("Transpose", {"k3"}, {"k3t"}, "kt"), "perm", {0, 2, 1});
    attr_int(c.m.node("Concat", {"bh", "d", "t"}, {"s2"}, "concat2"), "axis", 0);
    c.m.node("Reshape", {"k3t", "s2"}, {"kt"}, "reshape2");
  }
  c.m.node("Mul", {"q", half}, {"qs"}, "scale_q");
  c.m.node("Mul", {"kt", half}, {"kts"}, "scale_k");
  c.m.node("MatMul", {"qs", "kts"}, {"s"}, "qk");
  std::string logits = "s";
  if (pick(rng, 0, 3) == 0) {
    c.m.node("Div", {logits, c.float_scalar("temperature", 1.5f)}, {"sd"}, "div");
    logits = "sd";
  }
  switch (pick(rng, 0, 2)) {
    case 1: {  // a float mask of any rank that broadcasts into the scores
      const Shape full = {B, H, Sq, T};
      Shape ms(full.begin() + pick(rng, 0, 2), full.end());
      for (auto& d : ms)
        if (coin(rng)) d = 1;
      c.m.node("Add", {logits, c.floats("mask", ms, rng)}, {"sm"}, "add_mask");
      logits = "sm";
      break;
    }
    case 2: {  // the exporter's: Where(bool, 0, -inf), rows of false included
      c.add_tensor("keep", DataType::Bool, {B, 1, Sq, T}, rng, -1, 1);
      Tensor& keep = c.inputs.back().second.tensor();
      for (int64_t row = 0; row < B * Sq; ++row)  // a third of the rows see no key
        if (pick(rng, 0, 2) == 0)
          for (int64_t j = 0; j < T; ++j) keep.mutable_data<uint8_t>()[row * T + j] = 0;
      c.m.node("Where", {"keep", c.float_scalar("zero_f", 0.f), c.float_scalar("minus_inf", -INFINITY)}, {"bias"}, "bias");
      c.m.node("Add", {logits, "bias"}, {"sm"}, "add_mask");
      logits = "sm";
      break;
    }
    default: break;
  }
  attr_int(c.m.node("Softmax", {logits}, {"p"}, "softmax"), "axis", -1);
  std::string p = "p";
  if (coin(rng)) {
    c.what += " (NaN guard)";
    c.m.node("IsNaN", {"p"}, {"nan"}, "isnan");
    c.m.node("Where", {"nan", c.float_scalar("zero_p", 0.f), "p"}, {"pg"}, "guard");
    p = "pg";
  }
  if (bshd) {
    c.m.node("MatMul", {p, "v"}, {"y_heads"}, "pv");
    attr_ints(c.m.node("Transpose", {"y_heads"}, {"y0"}, "y_back"), "perm", {0, 2, 1, 3});
  } else {
    c.m.node("MatMul", {p, "v"}, {"y0"}, "pv");
  }
  c.m.output_untyped("y0");
  return c;
}

const std::vector<FusionCase>& fusion_cases() {
  static const std::vector<FusionCase> cases = {
      {"onnxscope.cpu::FusedConv",
       [](Rng& rng) {  // Conv + BatchNormalization + Clip(0, 6): MobileNetV2's block (BN folded first)
         Case c(11);
         c.floats("x", {2, 3, 9, 9}, rng);
         init(c, "w", {4, 3, 3, 3}, rng);
         init(c, "bias", {4}, rng);
         init(c, "scale", {4}, rng);
         init(c, "shift", {4}, rng);
         init(c, "mean", {4}, rng);
         init(c, "var", {4}, rng, 0.5f, 2.f);
         c.m.node("Conv", {"x", "w", "bias"}, {"conv"}, "conv");
         attr_ints(c.m.graph().mutable_node()->Mutable(0)[0], "pads", {1, 1, 1, 1});
         c.m.node("BatchNormalization", {"conv", "scale", "shift", "mean", "var"}, {"bn"}, "bn");
         c.m.node("Clip", {"bn", c.float_scalar("lo", 0.f), c.float_scalar("hi", 0.5f)}, {"y0"}, "clip");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedGemm",
       [](Rng& rng) {
         Case c(13);
         c.floats("a", {5, 7}, rng);
         init(c, "b", {6, 7}, rng);
         init(c, "cb", {6}, rng);
         auto& g = c.m.node("Gemm", {"a", "b", "cb"}, {"g"}, "gemm");
         attr_int(g, "transB", 1);
         attr_float(c.m.node("LeakyRelu", {"g"}, {"y0"}, "act"), "alpha", 0.2f);
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedMatMul",
       [](Rng& rng) {  // MatMul of a 3-D activation by a weight, + bias, + Relu
         Case c(17);
         c.floats("a", {2, 5, 8}, rng);
         init(c, "w", {8, 6}, rng);
         init(c, "bias", {6}, rng);
         c.m.node("MatMul", {"a", "w"}, {"mm"}, "mm");
         c.m.node("Add", {"mm", "bias"}, {"add"}, "add");
         c.m.node("Relu", {"add"}, {"y0"}, "relu");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::Gelu",
       [](Rng& rng) {  // x * 0.5 * (1 + erf(x / sqrt(2))), as exporters write it below opset 20
         Case c(17);
         c.floats("x", {3, 10}, rng, -3, 3);
         c.m.node("Div", {"x", c.float_scalar("s2", 1.41421356f)}, {"d"}, "div");
         c.m.node("Erf", {"d"}, {"e"}, "erf");
         c.m.node("Add", {"e", c.float_scalar("one", 1.f)}, {"p"}, "add");
         c.m.node("Mul", {"x", "p"}, {"xp"}, "mul");
         c.m.node("Mul", {"xp", c.float_scalar("half", 0.5f)}, {"y0"}, "mul_half");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::LayerNormalization",
       [](Rng& rng) {  // the TorchScript exporter's layer normalization below opset 17 (BERT, GPT-2 at opset 14)
         Case c(14);
         c.floats("x", {2, 5, 16}, rng, -3, 3);
         init(c, "gamma", {16}, rng);
         init(c, "beta", {16}, rng);
         auto mean = [&](const std::string& in, const std::string& out) {
           attr_ints(c.m.node("ReduceMean", {in}, {out}, out), "axes", {-1});
         };
         mean("x", "m");
         c.m.node("Sub", {"x", "m"}, {"d"}, "sub");
         c.m.node("Pow", {"d", c.float_scalar("two", 2.f)}, {"p"}, "pow");
         mean("p", "v");
         c.m.node("Add", {"v", c.float_scalar("eps", 1e-5f)}, {"ve"}, "add_eps");
         c.m.node("Sqrt", {"ve"}, {"s"}, "sqrt");
         c.m.node("Div", {"d", "s"}, {"n"}, "div");
         c.m.node("Mul", {"n", "gamma"}, {"g"}, "mul");
         c.m.node("Add", {"g", "beta"}, {"y0"}, "add");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedConv",
       [](Rng& rng) {  // a residual block's end: Relu(Conv(x) + r), fuse-conv-residual
         Case c(17);
         c.floats("x", {2, 3, 6, 6}, rng);
         c.floats("r", {2, 4, 6, 6}, rng);
         init(c, "w", {4, 3, 3, 3}, rng);
         init(c, "bias", {4}, rng);
         c.m.node("Conv", {"x", "w", "bias"}, {"conv"}, "conv");
         attr_ints(c.m.graph().mutable_node()->Mutable(0)[0], "pads", {1, 1, 1, 1});
         c.m.node("Add", {"r", "conv"}, {"sum"}, "add");
         c.m.node("Relu", {"sum"}, {"y0"}, "relu");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedAddLayerNorm",
       [](Rng& rng) {  // a transformer's residual sum, normalized
         Case c(17);
         c.floats("a", {2, 5, 16}, rng);
         c.floats("b", {2, 5, 16}, rng);
         init(c, "gamma", {16}, rng);
         init(c, "beta", {16}, rng);
         c.m.node("Add", {"a", "b"}, {"sum"}, "add");
         attr_float(c.m.node("LayerNormalization", {"sum", "gamma", "beta"}, {"y0"}, "ln"), "epsilon", 1e-3f);
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedElementwise", elementwise_chain, 40},
      {"LayerNormalization",
       [](Rng& rng) {  // the decomposition exporters write below opset 17, in a model of opset 17
         Case c(17);
         c.floats("x", {2, 4, 16}, rng);
         init(c, "gamma", {16}, rng);
         init(c, "beta", {16}, rng);
         attr_ints(c.m.node("ReduceMean", {"x"}, {"m"}, "mean"), "axes", {-1});
         c.m.node("Sub", {"x", "m"}, {"d"}, "sub");
         c.m.node("Pow", {"d", c.float_scalar("two", 2.f)}, {"sq"}, "pow");
         attr_ints(c.m.node("ReduceMean", {"sq"}, {"v"}, "var"), "axes", {-1});
         c.m.node("Add", {"v", c.float_scalar("eps", 1e-5f)}, {"ve"}, "add_eps");
         c.m.node("Sqrt", {"ve"}, {"sd"}, "sqrt");
         c.m.node("Div", {"d", "sd"}, {"n"}, "div");
         c.m.node("Mul", {"n", "gamma"}, {"g"}, "mul");
         c.m.node("Add", {"g", "beta"}, {"y0"}, "add");
         c.m.output_untyped("y0");
         return c;
       }},
      {"onnxscope.cpu::FusedAttention", torch_sdpa, 48},
      {"Attention",
       [](Rng& rng) {  // MatMul(Q, K^T) / sqrt(d) -> Softmax -> MatMul(V), as exporters write it, opset 23
         Case c(23);
         c.floats("q", {2, 3, 5, 8}, rng);
         c.floats("k", {2, 3, 7, 8}, rng);
         c.floats("v", {2, 3, 7, 4}, rng);
         attr_ints(c.m.node("Transpose", {"k"}, {"kt"}, "kt"), "perm", {0, 1, 3, 2});
         c.m.node("MatMul", {"q", "kt"}, {"qk"}, "qk");
         c.m.node("Div", {"qk", c.float_scalar("sqrt_d", 2.828427f)}, {"s"}, "scale");
         attr_int(c.m.node("Softmax", {"s"}, {"p"}, "softmax"), "axis", -1);
         c.m.node("MatMul", {"p", "v"}, {"y0"}, "pv");
         c.m.output_untyped("y0");
         return c;
       }},
  };
  return cases;
}

struct AsRun : Observer {
  std::vector<std::pair<std::string, std::string>> ran;  // op ("domain::op" outside ai.onnx), kernel
  void on_node(const NodeEvent& e) override {
    const std::string& d = e.node->domain;
    ran.emplace_back((d.empty() || d == "ai.onnx" ? "" : d + "::") + e.node->op_type, std::string(e.kernel));
  }
};

void check_fusions(const std::function<std::unique_ptr<Engine>()>& make) {
  auto reference = make_reference_engine();
  const auto engine = make();  // one for every case, as check_engine
  for (const FusionCase& fc : fusion_cases())
    for (int trial = 0; trial < fc.trials; ++trial) {
      SCOPED_TRACE(fc.fused + " case " + std::to_string(trial));
      Rng rng(static_cast<uint32_t>(7 + trial));
      Case c = fc.make(rng);
      auto loaded = c.m.load();
      ASSERT_TRUE(loaded.ok()) << fc.fused << "\n" << dump(loaded);
      std::shared_ptr<const Model> m(std::move(loaded.model));
      const NamedValues want = reference->prepare(m)->run(c.inputs);
      auto prepared = engine->prepare(m);
      AsRun as_run;
      RunOptions ro;
      ro.observer = &as_run;
      ro.capture_original = false;  // the nodes as the engine runs them: fused
      const NamedValues got = prepared->run(c.inputs, ro);
      bool fused = false;
      for (const auto& [op, kernel] : as_run.ran) {
        EXPECT_NE(kernel.rfind("cpu/", 0), 0u) << fc.fused << ": " << op << " ran on the host";
        fused = fused || op == fc.fused;
      }
      EXPECT_TRUE(fused) << fc.fused << " was not made; nodes as run: " << as_run.ran.size() << ", the first "
                         << (as_run.ran.empty() ? "-" : as_run.ran[0].first) << ";" << c.what;
      ASSERT_EQ(got.size(), want.size());
      expect_close(got[0].second.tensor(), want[0].second.tensor(), 1e-5, 1e-4, fc.fused);
      // A run without an observer (the same plan) agrees too.
      const NamedValues plain = prepared->run(c.inputs);
      expect_close(plain[0].second.tensor(), want[0].second.tensor(), 1e-5, 1e-4, fc.fused + " (no observer)");
    }
}

TEST(CudaKernels, EveryOperatorHasCases) {
  std::set<std::string> fusions;
  for (const auto& f : fusion_cases()) fusions.insert(f.fused);
  for (const std::string& op : cuda::supported_ops())
    EXPECT_TRUE(generators().count(op) || fusions.count(op)) << op << " has no case generator";
  for (const auto& [op, gen] : generators()) EXPECT_TRUE(cuda::find_op(op)) << op << " is not in the CUDA table";
}

TEST(CudaKernels, SimRunsTheCpuEnginesFusions) {
  check_fusions([] { return make_cuda_sim_engine(); });
}

TEST(CudaKernels, SimMatchesTheReference) {
  for (const char* precision : {"fp32", "tf32", "fp16"}) {
    SCOPED_TRACE(precision);
    check_engine([](const CudaOptions& o) { return make_cuda_sim_engine(o); }, precision);
  }
}

// The row kernels (softmax, normalization, reductions, pooling) with each row
// split across a warp of 32 lanes, as on the GPU: host threads in lockstep.
// One lane cannot show a lane that skips its share or a missing reduction.
TEST(CudaKernels, SimWithAWarpPerRowMatchesTheReference) {
  check_engine(
      [](const CudaOptions& o) {
        CudaOptions w = o;
        w.sim_lanes = 32;
        return make_cuda_sim_engine(w);
      },
      "fp32");
}

// fp16 really rounds: a product exact in float32 but not in float16 differs.
TEST(CudaKernels, SimFp16RoundsGemmInputs) {
  ModelBuilder b(17);
  b.input("a", DataType::Float, {int64_t{1}, int64_t{1}});
  b.initializer(make_float_tensor("b", {1, 1}, {1.f}));
  b.node("MatMul", {"a", "b"}, {"y"}, "mm");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{1}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  Tensor a = Tensor::zeros(DataType::Float, {1, 1});
  a.mutable_data<float>()[0] = 1.f + 1.f / 4096;  // float16 keeps 10 fraction bits
  const NamedValues in = {{"a", Value(a)}};
  CudaOptions o;
  EXPECT_EQ(make_cuda_sim_engine(o)->prepare(m)->run(in)[0].second.tensor().data<float>()[0], 1.f + 1.f / 4096);
  o.precision = "fp16";
  EXPECT_EQ(make_cuda_sim_engine(o)->prepare(m)->run(in)[0].second.tensor().data<float>()[0], 1.f);
  o.precision = "fp64";
  EXPECT_THROW(make_cuda_sim_engine(o), Error);
}

TEST(CudaKernels, GpuMatchesTheReference) {
  if (const std::string reason = no_gpu_reason(); !reason.empty()) GTEST_SKIP() << "no GPU to run on: " << reason;
  for (const char* precision : {"fp32", "tf32", "fp16"}) {
    SCOPED_TRACE(precision);
    check_engine([](const CudaOptions& o) { return make_cuda_engine(o); }, precision, true);
  }
  check_fusions([] { return make_cuda_engine(); });
}
