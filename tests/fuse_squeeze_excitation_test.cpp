// The fuse-squeeze-excitation pass (cpu/passes/fuse_squeeze_excitation.cpp)
// and the NchwcSqueezeExcite kernels (kernels/nn/squeeze_excite_nchwc.cpp,
// its reference form in kernels/fused_reference.cpp). Checked: the block as
// MobileNetV3, EfficientNet and RegNetY write it (GlobalAveragePool or
// ReduceMean, Relu / SiLU / HardSwish, Sigmoid / HardSigmoid, biases or none,
// either Mul order) becomes one node after nchwc-layout, and the engine's
// outputs agree with the reference's on random shapes (channels that pad the
// last block, batches of 1 to 9, NaN and infinities in the image); the forms
// that must stay apart do; the fast kernel and the reference form each run.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu/kernels/kernels.h"
#include "cpu/nchwc.h"
#include "cpu/optimizer.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"
#include "reference/interpreter.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

struct SeForm {
  int64_t channels = 24, reduced = 6, side = 7;
  std::string squeeze_act = "Relu";  // Relu, SiLU (x * Sigmoid(x)), HardSwish
  std::string gate = "Sigmoid";      // Sigmoid, HardSigmoid
  bool reduce_mean = false;          // ReduceMean over H, W instead of GlobalAveragePool
  bool biases = true;
  bool gate_first = false;           // Mul(s, x)
  bool pooled_is_output = false;     // the pooled value read elsewhere: no fusion
  bool gate_kernel3 = false;         // the second convolution 3x3 with padding: no fusion
  bool other_image = false;          // Mul scales another value than the pooled one: no fusion
  bool image_is_output = false;      // the image read after the block too: fused, but not scaled in place
};

std::vector<float> uniform(std::mt19937& gen, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(gen);
  return v;
}

ModelBuilder se_model(const SeForm& f, uint32_t seed = 1) {
  std::mt19937 gen(seed);
  const int64_t C = f.channels, R = f.reduced;
  ModelBuilder b(18);
  b.input("image", DataType::Float, {std::string("batch"), int64_t{8}, f.side, f.side});
  // A 3x3 convolution makes the blocked value the block reads (as a depthwise or expansion conv does).
  b.initializer(make_float_tensor("w0", {C, 8, 3, 3}, uniform(gen, C * 72, -0.3f, 0.3f)));
  attr_ints(b.node("Conv", {"image", "w0"}, {"x"}, "conv0"), "pads", {1, 1, 1, 1});
  std::string image = "x";
  if (f.other_image) {
    b.initializer(make_float_tensor("w0b", {C, 8, 1, 1}, uniform(gen, C * 8, -0.3f, 0.3f)));
    b.node("Conv", {"image", "w0b"}, {"x2"}, "conv0b");
    image = "x2";
  }
  if (f.reduce_mean) {
    b.initializer(make_int64_tensor("hw", {2}, {2, 3}));
    b.node("ReduceMean", {"x", "hw"}, {"p"}, "mean");
  } else {
    b.node("GlobalAveragePool", {"x"}, {"p"}, "pool");
  }
  b.initializer(make_float_tensor("w1", {R, C, 1, 1}, uniform(gen, R * C, -0.5f, 0.5f)));
  b.initializer(make_float_tensor("b1", {R}, uniform(gen, R, -0.2f, 0.2f)));
  const int64_t k = f.gate_kernel3 ? 3 : 1;
  b.initializer(make_float_tensor("w2", {C, R, k, k}, uniform(gen, C * R * k * k, -0.5f, 0.5f)));
  b.initializer(make_float_tensor("b2", {C}, uniform(gen, C, -0.2f, 0.2f)));
  auto with_bias = [&](const char* x, const char* w, const char* bias) {
    return f.biases ? std::vector<std::string>{x, w, bias} : std::vector<std::string>{x, w};
  };
  b.node("Conv", with_bias("p", "w1", "b1"), {"h0"}, "squeeze");
  if (f.squeeze_act == "SiLU") {
    b.node("Sigmoid", {"h0"}, {"h0s"}, "silu_sigmoid");
    b.node("Mul", {"h0", "h0s"}, {"h"}, "silu_mul");
  } else {
    b.node(f.squeeze_act, {"h0"}, {"h"}, "squeeze_act");
  }
  auto& c2 = b.node("Conv", with_bias("h", "w2", "b2"), {"s0"}, "excite");
  if (f.gate_kernel3) attr_ints(c2, "pads", {1, 1, 1, 1});
  auto& gate = b.node(f.gate, {"s0"}, {"s"}, "gate");
  if (f.gate == "HardSigmoid") {
    attr_float(gate, "alpha", 1.f / 6.f);
    attr_float(gate, "beta", 0.5f);
  }
  b.node("Mul", f.gate_first ? std::vector<std::string>{"s", image} : std::vector<std::string>{image, "s"}, {"y0"}, "scale");
  // The projection convolution after it keeps the result blocked.
  b.initializer(make_float_tensor("w3", {16, C, 1, 1}, uniform(gen, 16 * C, -0.3f, 0.3f)));
  b.node("Conv", {"y0", "w3"}, {"y"}, "project");
  b.output_untyped("y");
  if (f.pooled_is_output) b.output_untyped("p");
  if (f.image_is_output) b.output_untyped("x");
  return b;
}

struct Kernels : Observer {
  std::vector<std::pair<std::string, std::string>> ran;  // (op, kernel)
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.node->op_type, std::string(e.kernel)); }
  std::string of(const std::string& op) const {
    for (const auto& [o, k] : ran)
      if (o == op) return k;
    return "";
  }
};

// Runs `f` on the CPU engine (every pass) and on the reference with the same
// image; returns the kernel that ran NchwcSqueezeExcite ("" when none did).
std::string run_and_compare(const SeForm& f, int64_t batch, uint32_t seed, bool specials = false,
                            const std::set<std::string>& disabled = {}) {
  auto model = load_model(se_model(f, seed));
  std::mt19937 gen(seed + 100);
  Tensor image = Tensor::zeros(DataType::Float, {batch, 8, f.side, f.side});
  const auto v = uniform(gen, static_cast<int64_t>(image.element_count()), -2.f, 2.f);
  std::copy(v.begin(), v.end(), image.mutable_data<float>());
  if (specials) {  // the first image only: its NaN reaches every gate, the other images must not see it
    const uint64_t per_image = image.element_count() / static_cast<uint64_t>(batch);
    image.mutable_data<float>()[3] = NAN;
    image.mutable_data<float>()[per_image / 2] = INFINITY;
    image.mutable_data<float>()[per_image - 5] = -INFINITY;
  }
  const NamedValues in{{"image", Value(image)}};
  CpuOptions co;
  co.threads = 2;
  co.disabled_kernels = disabled;
  Kernels seen;
  RunOptions ro;
  ro.observer = &seen;
  ro.capture_original = false;
  const NamedValues got = make_cpu_engine(co)->prepare(model)->run(in, ro);
  const NamedValues want = make_reference_engine()->prepare(model)->run(in);
  EXPECT_EQ(got.size(), want.size());
  for (size_t o = 0; o < std::min(got.size(), want.size()); ++o) {
    const Tensor& g = got[o].second.tensor();
    const Tensor& w = want[o].second.tensor();
    EXPECT_EQ(g.shape(), w.shape());
    if (g.shape() != w.shape()) continue;
    int bad = 0;
    for (uint64_t e = 0; e < g.element_count(); ++e) {
      const float a = w.data<float>()[e], c = g.data<float>()[e];
      const bool same = std::isnan(a) ? std::isnan(c) : std::isinf(a) ? a == c : std::abs(a - c) <= 1e-5 + 1e-4 * std::abs(a);
      if (!same && ++bad <= 3) ADD_FAILURE() << got[o].first << " element " << e << ": reference " << a << " cpu " << c;
    }
  }
  return seen.of(cpu::kNchwcSqueezeExcite);
}

TEST(FuseSqueezeExcitation, TheBlocksExportersWriteBecomeOneNode) {
  if (!cpu::nchwc_block()) GTEST_SKIP() << "no blocked layout on this CPU";
  struct Variant {
    const char* squeeze;
    const char* gate;
  };
  uint32_t seed = 1;
  for (Variant v : {Variant{"Relu", "Sigmoid"}, Variant{"SiLU", "Sigmoid"}, Variant{"Relu", "HardSigmoid"},
                    Variant{"HardSwish", "HardSigmoid"}})
    for (int64_t C : {16, 24, 40})
      for (int64_t batch : {1, 3, 6, 9}) {  // 6 and 9: four images a panel load, and a group of eight and one
        SeForm f;
        f.squeeze_act = v.squeeze;
        f.gate = v.gate;
        f.channels = C;
        f.reduced = C / 4;
        f.reduce_mean = seed % 2 == 0;
        f.gate_first = seed % 3 == 0;
        f.biases = seed % 5 != 0;
        f.side = seed % 2 ? 7 : 14;
        f.image_is_output = seed % 4 == 1;
        SCOPED_TRACE(std::string(v.squeeze) + "/" + v.gate + " C " + std::to_string(C) + " batch " + std::to_string(batch) +
                     (f.reduce_mean ? " ReduceMean" : "") + (f.gate_first ? " Mul(s, x)" : "") +
                     (f.biases ? "" : " no biases") + (f.image_is_output ? " image read after" : ""));
        EXPECT_EQ(run_and_compare(f, batch, seed), "cpu-simd");
        ++seed;
      }
}

TEST(FuseSqueezeExcitation, TheRewrittenGraphNamesWhatItReplaced) {
  SeForm f;
  auto model = load_model(se_model(f));
  Model m = *model;
  if (!cpu::nchwc_block()) GTEST_SKIP() << "no blocked layout on this CPU";
  Diagnostics log;
  cpu::optimize(m, CpuOptions{}, false, log);
  const Node* se = nullptr;
  for (const Node& n : m.graph.nodes)
    if (n.op_type == cpu::kNchwcSqueezeExcite) se = &n;
  ASSERT_NE(se, nullptr) << "no NchwcSqueezeExcite in " << testing::PrintToString(op_types(m));
  EXPECT_EQ(se->inputs[1], "w1");
  EXPECT_EQ(se->inputs[3], "w2");
  EXPECT_EQ(se->attribute("channels")->i, 24);
  EXPECT_EQ(se->attribute("activation")->s, "Relu");
  EXPECT_EQ(se->attribute("gate")->s, "Sigmoid");
  const auto from = cpu::fused_from(*se);
  for (const char* name : {"pool", "squeeze", "squeeze_act", "excite", "gate", "scale"})
    EXPECT_NE(std::find(from.begin(), from.end(), name), from.end()) << name;
}

TEST(FuseSqueezeExcitation, NotForOtherGraphs) {
  for (int k = 0; k < 3; ++k) {
    SeForm f;
    f.pooled_is_output = k == 0;
    f.gate_kernel3 = k == 1;
    f.other_image = k == 2;
    SCOPED_TRACE(k);
    EXPECT_EQ(run_and_compare(f, 2, 40 + static_cast<uint32_t>(k)), "");
  }
}

// NaN and infinities in the image reach the pooled means and the gates as the
// unfused graph lets them; the reference form of the fused node (the fast
// kernel left out) agrees as well.
TEST(FuseSqueezeExcitation, NonFiniteImagesAndTheReferenceForm) {
  if (!cpu::nchwc_block()) GTEST_SKIP() << "no blocked layout on this CPU";
  SeForm f;
  f.squeeze_act = "SiLU";
  EXPECT_EQ(run_and_compare(f, 3, 50, true), "cpu-simd");
  EXPECT_EQ(run_and_compare(f, 5, 53, true), "cpu-simd");  // the NaN image among four taken together
  EXPECT_EQ(run_and_compare(f, 2, 51, false, {"cpu-simd"}), "fused-reference");
  f.gate = "HardSigmoid";
  f.channels = 20;
  f.reduced = 5;
  EXPECT_EQ(run_and_compare(f, 1, 52, false, {"cpu-simd"}), "fused-reference");
}

// The fused node's reference form alone (kernels/fused_reference.cpp, every
// other node of the rewritten graph by its reference form too) gives the
// unfused reference graph's numbers exactly.
TEST(FuseSqueezeExcitation, TheReferenceFormIsTheUnfusedGraphExactly) {
  if (!cpu::nchwc_block()) GTEST_SKIP() << "no blocked layout on this CPU";
  KernelRegistry registry;
  cpu::register_fused_reference_kernels(registry);
  registry.add_all(reference_kernels());
  for (const char* gate : {"Sigmoid", "HardSigmoid"}) {
    SeForm f;
    f.gate = gate;
    f.squeeze_act = gate == std::string("Sigmoid") ? "SiLU" : "HardSwish";
    SCOPED_TRACE(gate);
    auto original = load_model(se_model(f, 9));
    auto m = std::make_shared<Model>(*original);
    Diagnostics log;
    cpu::optimize(*m, CpuOptions{}, false, log);
    const std::vector<std::string> ops = op_types(*m);
    ASSERT_NE(std::find(ops.begin(), ops.end(), cpu::kNchwcSqueezeExcite), ops.end());
    InputSpec spec;
    spec.seed = 4;
    spec.dims["batch"] = 2;
    const NamedValues inputs = make_inputs(*original, spec);
    const NamedValues want = make_reference_engine()->prepare(original)->run(inputs);
    ref::Interpreter interp(m, registry, uint64_t{1} << 30);
    const NamedValues got = interp.run(inputs, {});
    ASSERT_EQ(want.size(), got.size());
    const Tensor& a = want[0].second.tensor();
    const Tensor& b = got[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t i = 0; i < a.element_count(); ++i) ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
  }
}

}  // namespace
