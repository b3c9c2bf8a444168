// The CPU engine's own neural-network kernels (pooling, depthwise
// convolution on the plain layout, 1-D convolution) against the
// reference on seeded random problems, through the kernel test harness
// (support/ops_harness.h): the CPU kernel must run each node, and its outputs
// must match the reference's.
#include <gtest/gtest.h>

#include <tuple>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "blocked_conv_case.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

// A pooling node's window attributes: explicit pads when auto_pad is NOTSET.
void set_window(onnx::NodeProto& n, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                const std::string& auto_pad, const std::vector<int64_t>& pads, int64_t ceil_mode) {
  attr_ints(n, "kernel_shape", kernel);
  attr_ints(n, "strides", strides);
  if (auto_pad == "NOTSET") attr_ints(n, "pads", pads);
  else attr_string(n, "auto_pad", auto_pad);
  attr_int(n, "ceil_mode", ceil_mode);
}

// Every window geometry a 2-D AveragePool takes on the plain layout: kernels
// up to 5, strides up to 3, pads (explicit, SAME_UPPER / SAME_LOWER, VALID),
// ceil_mode, count_include_pad, windows that reach past X into padding or
// lie wholly in it, NaN and infinities in X.
TEST(CpuOpsNn, AveragePoolEveryWindow) {
  Rng rng(51);
  const char* auto_pads[] = {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int i = 0; i < 120; ++i) {
    const int64_t opset = i % 3 == 0 ? 11 : 19;
    Case c(opset);
    const Shape s = {pick(rng, 1, 2), pick(rng, 1, 5), pick(rng, 1, 17), pick(rng, 1, 17)};
    const std::vector<int64_t> kernel = {pick(rng, 1, std::min<int64_t>(5, s[2])), pick(rng, 1, std::min<int64_t>(5, s[3]))};
    const std::vector<int64_t> strides = {pick(rng, 1, 3), pick(rng, 1, 3)};
    const std::string auto_pad = auto_pads[pick(rng, 0, 5)];
    std::vector<int64_t> pads = {pick(rng, 0, kernel[0] - 1), pick(rng, 0, kernel[1] - 1),
                                 pick(rng, 0, kernel[0] - 1), pick(rng, 0, kernel[1] - 1)};
    const int64_t ceil_mode = pick(rng, 0, 1), include_pad = pick(rng, 0, 1);
    c.what = "AveragePool " + shape_to_string(s) + " k " + shape_to_string(kernel) + " s " + shape_to_string(strides) +
             " " + auto_pad + " pads " + shape_to_string(pads) + " ceil " + std::to_string(ceil_mode) + " include_pad " +
             std::to_string(include_pad);
    Tensor x = random_tensor(rng, DataType::Float, s, -3, 3);
    // NaN and infinities (not the harness's +-1e30: sums that cancel them
    // depend on the order of the taps, in the reference's double too).
    if (i % 5 == 4)
      for (uint64_t e = 0; e < x.element_count(); e += static_cast<uint64_t>(pick(rng, 1, 40)))
        x.mutable_data<float>()[e] = std::vector<float>{NAN, INFINITY, -INFINITY}[static_cast<size_t>(pick(rng, 0, 2))];
    c.input("x", std::move(x));
    auto& n = c.mb.node("AveragePool", {"x"}, {"y"}, "n");
    set_window(n, kernel, strides, auto_pad, pads, ceil_mode);
    attr_int(n, "count_include_pad", include_pad);
    check(c);
  }
}

// A plane per thread, the unit-stride rows long enough to vectorise, and a
// dilated window (left to the other kernels: this one declines it).
TEST(CpuOpsNn, AveragePoolLargeAndDilated) {
  Rng rng(52);
  {
    Case c(19);
    c.what = "AveragePool [1,64,56,56] 3x3 s1 p1";
    c.input("x", random_tensor(rng, DataType::Float, {1, 64, 56, 56}, -3, 3));
    auto& n = c.mb.node("AveragePool", {"x"}, {"y"}, "n");
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "pads", {1, 1, 1, 1});
    check(c);
  }
  {
    Case c(19);
    c.what = "AveragePool dilated";
    c.input("x", random_tensor(rng, DataType::Float, {1, 3, 12, 12}, -3, 3));
    auto& n = c.mb.node("AveragePool", {"x"}, {"y"}, "n");
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "dilations", {2, 2});
    check(c);
  }
}

// MaxPool of uint8 and int8 (QOperator models pool their 8-bit tensors;
// opset 12 on) over random window geometries, bit for bit.
TEST(CpuOpsNn, MaxPool8BitEveryWindow) {
  Rng rng(55);
  const char* auto_pads[] = {"NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int i = 0; i < 80; ++i) {
    Case c(12);
    const DataType t = i % 2 ? DataType::Int8 : DataType::Uint8;
    const Shape s = {pick(rng, 1, 2), pick(rng, 1, 5), pick(rng, 1, 17), pick(rng, 1, 40)};
    const std::vector<int64_t> kernel = {pick(rng, 1, std::min<int64_t>(5, s[2])), pick(rng, 1, std::min<int64_t>(5, s[3]))};
    const std::vector<int64_t> strides = {pick(rng, 1, 3), pick(rng, 1, 3)};
    const std::string auto_pad = auto_pads[pick(rng, 0, 4)];
    const std::vector<int64_t> pads = {pick(rng, 0, kernel[0] - 1), pick(rng, 0, kernel[1] - 1),
                                       pick(rng, 0, kernel[0] - 1), pick(rng, 0, kernel[1] - 1)};
    const int64_t ceil_mode = pick(rng, 0, 1);
    c.what = std::string("MaxPool ") + (t == DataType::Int8 ? "int8 " : "uint8 ") + shape_to_string(s) + " k " +
             shape_to_string(kernel) + " s " + shape_to_string(strides) + " " + auto_pad + " pads " + shape_to_string(pads) +
             " ceil " + std::to_string(ceil_mode);
    c.input("x", random_tensor(rng, t, s, t == DataType::Int8 ? -128 : 0, t == DataType::Int8 ? 127 : 255));
    auto& n = c.mb.node("MaxPool", {"x"}, {"y"}, "n");
    set_window(n, kernel, strides, auto_pad, pads, ceil_mode);
    check(c, 0, 0);
  }
}

// Every window geometry a 2-D MaxPool takes on the plain layout, as for
// AveragePool above, with NaN, infinities and signed zeros in X: NaN taps
// are skipped, a window of NaN only or wholly in the padding gives NaN.
// Some with the Indices output (left to the other kernels: this one
// declines it) and dilations (likewise).
TEST(CpuOpsNn, MaxPoolEveryWindow) {
  Rng rng(54);
  const char* auto_pads[] = {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int i = 0; i < 140; ++i) {
    const int64_t opset = i % 3 == 0 ? 11 : 12;
    Case c(opset);
    const Shape s = {pick(rng, 1, 2), pick(rng, 1, 5), pick(rng, 1, 17), pick(rng, 1, 40)};
    const std::vector<int64_t> kernel = {pick(rng, 1, std::min<int64_t>(5, s[2])), pick(rng, 1, std::min<int64_t>(5, s[3]))};
    const std::vector<int64_t> strides = {pick(rng, 1, 3), pick(rng, 1, 3)};
    const std::string auto_pad = auto_pads[pick(rng, 0, 5)];
    std::vector<int64_t> pads = {pick(rng, 0, kernel[0] - 1), pick(rng, 0, kernel[1] - 1),
                                 pick(rng, 0, kernel[0] - 1), pick(rng, 0, kernel[1] - 1)};
    const int64_t ceil_mode = pick(rng, 0, 1);
    const bool indices = i % 20 == 19, dilated = i % 20 == 18;
    c.what = "MaxPool " + shape_to_string(s) + " k " + shape_to_string(kernel) + " s " + shape_to_string(strides) + " " +
             auto_pad + " pads " + shape_to_string(pads) + " ceil " + std::to_string(ceil_mode) +
             (indices ? " with Indices" : "") + (dilated ? " dilated" : "");
    Tensor x = random_tensor(rng, DataType::Float, s, -3, 3);
    // NaN, infinities (whole windows of them too) and signed zeros.
    if (i % 4 == 3) {
      const std::vector<float> odd = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
      for (uint64_t e = 0; e < x.element_count(); e += static_cast<uint64_t>(pick(rng, 1, 6)))
        x.mutable_data<float>()[e] = odd[static_cast<size_t>(pick(rng, 0, 4))];
    }
    if (i % 8 == 7)
      for (uint64_t e = 0; e < x.element_count() / 2; ++e) x.mutable_data<float>()[e] = i % 16 == 7 ? NAN : -INFINITY;
    c.input("x", std::move(x));
    auto& n = c.mb.node("MaxPool", {"x"}, indices ? std::vector<std::string>{"y", "idx"} : std::vector<std::string>{"y"}, "n");
    set_window(n, kernel, strides, auto_pad, pads, ceil_mode);
    if (dilated) attr_ints(n, "dilations", {2, 1});
    if (indices) {
      c.outputs = {"y", "idx"};
      c.expect_fast = false;  // no cpu kernel gives Indices
    }
    check(c);
  }
  {
    Case c(12);
    c.what = "MaxPool [1,64,112,112] 3x3 s2 p1 (ResNet's stem)";
    c.input("x", random_tensor(rng, DataType::Float, {1, 64, 112, 112}, -3, 3));
    auto& n = c.mb.node("MaxPool", {"x"}, {"y"}, "n");
    attr_ints(n, "kernel_shape", {3, 3});
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {1, 1, 1, 1});
    check(c);
  }
}

// Depthwise 2-D Conv on the plain layout: kernels up to 5, strides up to 3,
// dilations up to 2, pads (explicit or auto_pad), with and without bias,
// batches of two; the kernel_shape attribute given or not.
TEST(CpuOpsNn, DepthwiseConvEveryWindow) {
  Rng rng(53);
  const char* auto_pads[] = {"NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int i = 0; i < 120; ++i) {
    Case c(13);
    const int64_t C = pick(rng, 2, 20);
    const Shape s = {pick(rng, 1, 2), C, pick(rng, 3, 20), pick(rng, 3, 40)};
    const std::vector<int64_t> dil = {pick(rng, 1, 2), pick(rng, 1, 2)};
    const std::vector<int64_t> k = {pick(rng, 1, std::min<int64_t>(5, (s[2] - 1) / dil[0] + 1)),
                                    pick(rng, 1, std::min<int64_t>(5, (s[3] - 1) / dil[1] + 1))};
    // Half at unit stride, half at strides up to 3 (each stride a phase split).
    const std::vector<int64_t> strides = i % 2 ? std::vector<int64_t>{pick(rng, 1, 3), pick(rng, 1, 3)} : std::vector<int64_t>{1, 1};
    const std::string auto_pad = auto_pads[pick(rng, 0, 4)];
    const std::vector<int64_t> pads = {pick(rng, 0, k[0]), pick(rng, 0, k[1]), pick(rng, 0, k[0]), pick(rng, 0, k[1])};
    const bool bias = i % 3 != 0;
    c.what = "Conv depthwise " + shape_to_string(s) + " k " + shape_to_string(k) + " s " + shape_to_string(strides) +
             " d " + shape_to_string(dil) + " " + auto_pad + " pads " + shape_to_string(pads) + (bias ? " bias" : "");
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3));
    c.input("w", random_tensor(rng, DataType::Float, {C, 1, k[0], k[1]}, -1, 1));
    std::vector<std::string> ins = {"x", "w"};
    if (bias) {
      c.input("b", random_tensor(rng, DataType::Float, {C}, -1, 1));
      ins.push_back("b");
    }
    auto& n = c.mb.node("Conv", ins, {"y"}, "n");
    attr_int(n, "group", C);
    if (i % 2) attr_ints(n, "kernel_shape", k);
    attr_ints(n, "strides", strides);
    attr_ints(n, "dilations", dil);
    if (auto_pad == "NOTSET") attr_ints(n, "pads", pads);
    else attr_string(n, "auto_pad", auto_pad);
    check(c);
  }
  // efficientnet's and mobilenet_v3's 5 x 5 stride 2, rows wide enough for
  // the AVX-512 phase split's 32-float steps, both pad parities.
  for (const int64_t pad : {int64_t{2}, int64_t{1}}) {
    Case c(13);
    c.what = "Conv depthwise [1,24,28,70] 5x5 s2 pads " + std::to_string(pad);
    c.input("x", random_tensor(rng, DataType::Float, {1, 24, 28, 70}, -3, 3));
    c.input("w", random_tensor(rng, DataType::Float, {24, 1, 5, 5}, -1, 1));
    c.input("b", random_tensor(rng, DataType::Float, {24}, -1, 1));
    auto& n = c.mb.node("Conv", {"x", "w", "b"}, {"y"}, "n");
    attr_int(n, "group", 24);
    attr_ints(n, "strides", {2, 2});
    attr_ints(n, "pads", {pad, pad, pad, pad});
    check(c);
  }
  // Output rows of 32 and more (summed straight into Y), past 128 (two
  // blocks of vectors) too, at stride 1 and 2 and with dilation.
  for (const auto& [w, stride, dil] : {std::tuple<int64_t, int64_t, int64_t>{150, 1, 1}, {32, 1, 1}, {141, 2, 2}, {66, 2, 1}}) {
    Case c(13);
    c.what = "Conv depthwise [1,5,7," + std::to_string(w) + "] 3x3 s" + std::to_string(stride) + " d" + std::to_string(dil);
    c.input("x", random_tensor(rng, DataType::Float, {1, 5, 7, w}, -3, 3));
    c.input("w", random_tensor(rng, DataType::Float, {5, 1, 3, 3}, -1, 1));
    c.input("b", random_tensor(rng, DataType::Float, {5}, -1, 1));
    auto& n = c.mb.node("Conv", {"x", "w", "b"}, {"y"}, "n");
    attr_int(n, "group", 5);
    attr_ints(n, "strides", {stride, stride});
    attr_ints(n, "dilations", {dil, dil});
    attr_ints(n, "pads", {1, 1, 1, 1});
    check(c);
  }
  // Wide kernels (convnext's 7 x 7).
  for (const std::vector<int64_t>& k : {std::vector<int64_t>{7, 7}, std::vector<int64_t>{3, 11}}) {
    Case c(13);
    c.what = "Conv depthwise k " + shape_to_string(k);
    c.input("x", random_tensor(rng, DataType::Float, {1, 5, 15, 23}, -3, 3));
    c.input("w", random_tensor(rng, DataType::Float, {5, 1, k[0], k[1]}, -1, 1));
    auto& n = c.mb.node("Conv", {"x", "w"}, {"y"}, "n");
    attr_int(n, "group", 5);
    attr_ints(n, "pads", {k[0] / 2, k[1] / 2, k[0] / 2, k[1] / 2});
    check(c);
  }
}

// 1-D Conv (register tiles over the padded input, or one sgemm per tap
// without AVX-512): kernels up to 7, dilations up to 3, pads and auto_pad,
// bias or not, batches of two; a strided one is this kernel's where its
// sums are short, else oneDNN's (checked alike).
TEST(CpuOpsNn, Conv1dEveryWindow) {
  Rng rng(54);
  const char* auto_pads[] = {"NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int i = 0; i < 60; ++i) {
    Case c(13);
    const int64_t C = pick(rng, 1, 40), M = pick(rng, 1, 40), W = pick(rng, 8, 300), k = pick(rng, 1, 7);
    const int64_t d = pick(rng, 1, std::min<int64_t>(3, (W - 1) / std::max<int64_t>(1, k - 1)));
    const int64_t stride = i % 6 == 5 ? 2 : 1;
    const Shape s = {pick(rng, 1, 2), C, W};
    const std::string auto_pad = auto_pads[pick(rng, 0, 4)];
    const bool bias = i % 3 != 0;
    c.what = "Conv 1-D " + shape_to_string(s) + " M " + std::to_string(M) + " k " + std::to_string(k) + " d " +
             std::to_string(d) + " s " + std::to_string(stride) + " " + auto_pad + (bias ? " bias" : "");
    c.input("x", random_tensor(rng, DataType::Float, s, -3, 3));
    c.input("w", random_tensor(rng, DataType::Float, {M, C, k}, -1, 1));
    std::vector<std::string> ins = {"x", "w"};
    if (bias) {
      c.input("b", random_tensor(rng, DataType::Float, {M}, -1, 1));
      ins.push_back("b");
    }
    auto& n = c.mb.node("Conv", ins, {"y"}, "n");
    attr_ints(n, "dilations", {d});
    attr_ints(n, "strides", {stride});
    if (auto_pad == "NOTSET") attr_ints(n, "pads", {pick(rng, 0, k), pick(rng, 0, k)});
    else attr_string(n, "auto_pad", auto_pad);
    check(c);
  }
}

// Strided 1-D convolutions over short sums (C*K at most 64: wav2vec2's first
// layer, 1 channel in, 512 out, k 10, stride 5) and 1-D convolutions with a
// fused activation run on the CPU engine's own kernel (cpu-avx512: the
// padded input in stride phases, the activation in registers): strides up
// to 6, dilations, pads, bias, batches of two, every activation FusedConv
// fuses; the unfused model on the reference is the answer.
TEST(CpuOpsNn, Conv1dStridedAndFusedActivations) {
  if (!ONNXSCOPE_CPU_AVX512("avx512f")) GTEST_SKIP() << "no AVX-512: oneDNN's convolution runs these";
  struct Activation {
    const char* op;
    std::vector<float> params;  // attribute values, in the order of `names`
    std::vector<const char*> names;
  };
  const Activation acts[] = {{"", {}, {}},
                             {"Relu", {}, {}},
                             {"LeakyRelu", {0.1f}, {"alpha"}},
                             {"Clip", {-0.5f, 1.5f}, {}},
                             {"HardSigmoid", {0.3f, 0.4f}, {"alpha", "beta"}},
                             {"HardSwish", {}, {}},
                             {"Sigmoid", {}, {}},
                             {"Tanh", {}, {}},
                             {"Gelu", {}, {}},
                             {"GeluTanh", {}, {}}};
  Rng rng(57);
  for (int i = 0; i < 80; ++i) {
    const Activation& act = acts[i % 10];
    const bool strided = i % 4 != 3;
    const int64_t stride = strided ? pick(rng, 2, 6) : 1;
    const int64_t k = pick(rng, 1, 10), C = strided ? pick(rng, 1, std::max<int64_t>(1, 64 / k)) : pick(rng, 1, 40);
    const int64_t M = pick(rng, 1, 70), W = pick(rng, 12, 400), d = pick(rng, 1, 2);
    const bool bias = i % 3 != 0;
    const int64_t pl = pick(rng, 0, k), pr = pick(rng, 0, k);
    ModelBuilder mb(20);
    mb.input("x", DataType::Float, {int64_t{1 + i % 2}, C, W});
    Rng wr(static_cast<unsigned>(i));
    add_initializer(mb, "w", random_tensor(wr, DataType::Float, {M, C, k}, -1, 1));
    std::vector<std::string> ins = {"x", "w"};
    if (bias) {
      add_initializer(mb, "b", random_tensor(wr, DataType::Float, {M}, -1, 1));
      ins.push_back("b");
    }
    const std::string conv_out = *act.op ? "c" : "y";
    auto& n = mb.node("Conv", ins, {conv_out}, "conv");
    attr_ints(n, "strides", {stride});
    attr_ints(n, "dilations", {d});
    attr_ints(n, "pads", {pl, pr});
    const std::string op = act.op;
    if (op == "Clip") {
      mb.initializer(make_float_tensor("lo", {}, {act.params[0]}));
      mb.initializer(make_float_tensor("hi", {}, {act.params[1]}));
      mb.node("Clip", {"c", "lo", "hi"}, {"y"}, "act");
    } else if (op == "Gelu" || op == "GeluTanh") {
      auto& g = mb.node("Gelu", {"c"}, {"y"}, "act");
      if (op == "GeluTanh") attr_string(g, "approximate", "tanh");
    } else if (!op.empty()) {
      auto& a = mb.node(op, {"c"}, {"y"}, "act");
      for (size_t q = 0; q < act.names.size(); ++q) attr_float(a, act.names[q], act.params[q]);
    }
    mb.output_untyped("y");
    const std::string what = "Conv 1-D C " + std::to_string(C) + " M " + std::to_string(M) + " W " + std::to_string(W) +
                             " k " + std::to_string(k) + " s " + std::to_string(stride) + " d " + std::to_string(d) +
                             " pads " + std::to_string(pl) + "," + std::to_string(pr) + (bias ? " bias " : " ") + op;
    SCOPED_TRACE(what);
    if ((k - 1) * d + 1 > W + pl + pr) continue;  // no output: not a convolution to time
    auto loaded = mb.load();
    ASSERT_TRUE(loaded.ok()) << dump(loaded);
    const FusedRun r = run_fused(std::move(loaded.model), static_cast<uint64_t>(i));
    ASSERT_EQ(r.ran.size(), 1u) << "the activation was not fused";
    EXPECT_EQ(r.ran[0], (op.empty() ? "Conv cpu-gemm" : "FusedConv cpu-avx512"));
    ASSERT_EQ(r.got.size(), 1u);
    const NamedValues& want = r.want;
    const NamedValues& got = r.got;
    const Tensor& a = want[0].second.tensor();
    const Tensor& b = got[0].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    const float* pa = a.data<float>();
    const float* pb = b.data<float>();
    for (uint64_t e = 0; e < a.element_count(); ++e)
      ASSERT_NEAR(pb[e], pa[e], 2e-5 + 2e-5 * std::fabs(pa[e]) + 1e-5 * static_cast<double>(C * k)) << "element " << e;
  }
}

// com.microsoft SkipLayerNormalization / SkipSimplifiedLayerNormalization
// (kernels/nn/skip_layer_norm.cpp): hidden sizes up to 70, skip of the
// input's shape or its trailing dims, beta and bias present or not, the sum
// output wanted or not; the training statistics go to the reference.
TEST(CpuOpsNn, SkipLayerNormalizationEveryForm) {
  Rng rng(81);
  for (int i = 0; i < 48; ++i) {
    const bool simplified = i % 3 == 2;
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    const int64_t b = pick(rng, 1, 3), s = pick(rng, 1, 9), h = pick(rng, 1, 70);
    const Shape x = i % 4 ? Shape{b, s, h} : Shape{b * s, h};
    const Shape skip = i % 3 == 0 ? x : i % 3 == 1 && x.size() == 3 ? Shape{1, s, h} : Shape{x[x.size() - 2], h};
    const bool beta = !simplified && i % 2, bias = i % 5 < 3, want_sum = i % 2 == 0, stats = i % 16 == 15;
    c.input("x", random_tensor(rng, DataType::Float, x, -3, 3));
    c.input("skip", random_tensor(rng, DataType::Float, skip, -3, 3));
    c.input("gamma", random_tensor(rng, DataType::Float, {h}, -1, 1));
    std::vector<std::string> ins = {"x", "skip", "gamma"};
    if (!simplified) {
      if (beta) c.input("beta", random_tensor(rng, DataType::Float, {h}, -1, 1));
      ins.push_back(beta ? "beta" : "");
    }
    if (bias) {
      c.input("bias", random_tensor(rng, DataType::Float, {h}, -1, 1));
      ins.push_back("bias");
    }
    while (ins.back().empty()) ins.pop_back();
    std::vector<std::string> outs = {"y"};
    if (stats) outs = {"y", "mean", "inv"};
    else if (want_sum) outs = {"y", "", "", "sum"};
    const std::string op = simplified ? "SkipSimplifiedLayerNormalization" : "SkipLayerNormalization";
    c.what = op + " " + shape_to_string(x) + " skip " + shape_to_string(skip) + (beta ? " beta" : "") +
             (bias ? " bias" : "") + (want_sum ? " sum" : "") + (stats ? " stats" : "");
    attr_float(c.mb.node(op, ins, outs, "n", "com.microsoft"), "epsilon", 1e-5f);
    c.outputs.clear();
    for (const auto& o : outs)
      if (!o.empty()) c.outputs.push_back(o);
    c.expect_fast = !stats;
    check(c);
  }
}

// NchwcPool's global poolings on the blocked layout (ToNchwc -> NchwcPool ->
// FromNchwc) against the reference's GlobalAveragePool / GlobalMaxPool:
// blocks of 8 and 16, channel counts with a padded last block, planes from
// 1x1 to 112x112 (several chunks per thread), NaN and infinities mixed in.
TEST(CpuOpsNn, BlockedGlobalPoolingMatchesTheReference) {
  struct Ran : Observer {
    std::string kernel;
    void on_node(const NodeEvent& e) override {
      if (e.node->op_type == "NchwcPool") kernel = e.kernel;
    }
  };
  Rng rng(77);
  auto cpu_engine = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 2});
  auto ref_engine = make_reference_engine();
  for (int i = 0; i < 48; ++i) {
    const bool max = i % 2 == 1;
    const int64_t block = i % 4 < 2 ? 16 : 8;
    const int64_t side = std::vector<int64_t>{1, 3, 7, 14, 56, 112}[static_cast<size_t>(pick(rng, 0, 5))];
    const Shape s{pick(rng, 1, 2), pick(rng, 1, 40), side, side + pick(rng, 0, 2)};
    const std::string op = max ? "GlobalMaxPool" : "GlobalAveragePool";
    SCOPED_TRACE(op + " block " + std::to_string(block) + " x" + shape_to_string(s));
    Tensor x = random_tensor(rng, DataType::Float, s, -3, 3);
    if (i % 6 == 5)
      for (uint64_t e = 0; e < x.element_count(); e += static_cast<uint64_t>(pick(rng, 1, 400)))
        x.mutable_data<float>()[e] = std::vector<float>{NAN, INFINITY, -INFINITY}[static_cast<size_t>(pick(rng, 0, 2))];
    ModelBuilder cm(17), rm(17);
    cm.opset("onnxscope.cpu", 1);
    for (ModelBuilder* b : {&cm, &rm}) b->input("x", DataType::Float, dims_of(s));
    attr_int(cm.node("ToNchwc", {"x"}, {"xb"}, "to", "onnxscope.cpu"), "block", block);
    auto& p = cm.node("NchwcPool", {"xb"}, {"yb"}, "pool", "onnxscope.cpu");
    attr_string(p, "op", op);
    attr_int(p, "channels", s[1]);
    attr_int(p, "block", block);
    attr_int(cm.node("FromNchwc", {"yb"}, {"y"}, "from", "onnxscope.cpu"), "channels", s[1]);
    rm.node(op, {"x"}, {"y"}, "pool");
    for (ModelBuilder* b : {&cm, &rm}) b->output_untyped("y");
    auto cl = cm.load(), rl = rm.load();
    ASSERT_TRUE(cl.ok() && rl.ok()) << dump(cl) << dump(rl);
    const NamedValues in{{"x", Value(x)}};
    Ran ran;
    RunOptions ro;
    ro.observer = &ran;
    ro.capture_original = false;
    const NamedValues got = cpu_engine->prepare(std::shared_ptr<const Model>(std::move(cl.model)))->run(in, ro);
    const NamedValues want = ref_engine->prepare(std::shared_ptr<const Model>(std::move(rl.model)))->run(in);
    EXPECT_EQ(ran.kernel, "cpu-simd");
    const Tensor& g = got.at(0).second.tensor();
    const Tensor& w = want.at(0).second.tensor();
    ASSERT_EQ(g.shape(), w.shape());
    for (uint64_t e = 0; e < g.element_count(); ++e) {
      const float a = w.data<float>()[e], b = g.data<float>()[e];
      if (std::isnan(a) || std::isnan(b)) ASSERT_TRUE(std::isnan(a) && std::isnan(b)) << "at " << e << ": ref " << a << " cpu " << b;
      else if (std::isinf(a) || std::isinf(b)) ASSERT_EQ(a, b) << "at " << e;
      else ASSERT_LE(std::abs(a - b), 1e-6 + 1e-6 * std::abs(a)) << "at " << e << ": ref " << a << " cpu " << b;
    }
  }
}

// NchwcPool's windowed poolings (kernels/nn/pool_nchwc.cpp) against the
// reference's MaxPool / AveragePool: blocks of 8 and 16, channel counts with a
// padded last block, kernels up to 4, strides up to 3, pads, auto_pad,
// ceil_mode, count_include_pad, ResNet's stem pool, NaN (whole windows of it
// too), infinities and signed zeros.
TEST(CpuOpsNn, BlockedWindowPoolingMatchesTheReference) {
  struct Ran : Observer {
    std::string kernel;
    void on_node(const NodeEvent& e) override {
      if (e.node->op_type == "NchwcPool") kernel = e.kernel;
    }
  };
  Rng rng(78);
  auto cpu_engine = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 2});
  auto ref_engine = make_reference_engine();
  const char* auto_pads[] = {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int i = 0; i < 97; ++i) {
    const bool max = i % 2 == 1;
    const int64_t block = i % 4 < 2 ? 16 : 8;
    // Blocks of 16 exist only on AVX-512 processors, of 8 on AVX2 ones (the
    // layout pass makes no others); our kernel declines a block its CPU has
    // no vectors for, and oneDNN's blocked pooling, which then runs, writes
    // -FLT_MAX for a window of -inf (seen on an AVX2 EPYC).
    if (!(block == 16 ? ONNXSCOPE_CPU_AVX512("avx512f") : __builtin_cpu_supports("avx2"))) continue;
    const bool stem = i == 96;
    const Shape s = stem ? Shape{1, 64, 112, 112} : Shape{pick(rng, 1, 2), pick(rng, 1, 40), pick(rng, 1, 13), pick(rng, 1, 13)};
    const std::vector<int64_t> k = stem ? std::vector<int64_t>{3, 3}
                                        : std::vector<int64_t>{pick(rng, 1, std::min<int64_t>(4, s[2])),
                                                               pick(rng, 1, std::min<int64_t>(4, s[3]))};
    const std::vector<int64_t> st = stem ? std::vector<int64_t>{2, 2} : std::vector<int64_t>{pick(rng, 1, 3), pick(rng, 1, 3)};
    // Pads below the kernel: no window wholly in the padding (those are declined).
    const std::vector<int64_t> pads = stem ? std::vector<int64_t>{1, 1, 1, 1}
                                           : std::vector<int64_t>{pick(rng, 0, k[0] - 1), pick(rng, 0, k[1] - 1),
                                                                  pick(rng, 0, k[0] - 1), pick(rng, 0, k[1] - 1)};
    const std::string auto_pad = stem ? "NOTSET" : auto_pads[pick(rng, 0, 5)];
    const int64_t ceil_mode = stem ? 0 : pick(rng, 0, 1), include_pad = max ? 0 : pick(rng, 0, 1);
    const std::string op = max ? "MaxPool" : "AveragePool";
    SCOPED_TRACE(op + " block " + std::to_string(block) + " x" + shape_to_string(s) + " k" + shape_to_string(k) + " s" +
                 shape_to_string(st) + " " + auto_pad + " pads" + shape_to_string(pads) + " ceil " +
                 std::to_string(ceil_mode) + " include_pad " + std::to_string(include_pad));
    Tensor x = random_tensor(rng, DataType::Float, s, -3, 3);
    if (i % 6 == 5) {
      const std::vector<float> odd = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
      for (uint64_t e = 0; e < x.element_count(); e += static_cast<uint64_t>(pick(rng, 1, 7)))
        x.mutable_data<float>()[e] = odd[static_cast<size_t>(pick(rng, 0, max ? 4 : 2))];
    }
    if (i % 12 == 11)
      for (uint64_t e = 0; e < x.element_count() / 3; ++e) x.mutable_data<float>()[e] = NAN;
    ModelBuilder cm(12), rm(12);
    cm.opset("onnxscope.cpu", 1);
    for (ModelBuilder* b : {&cm, &rm}) b->input("x", DataType::Float, dims_of(s));
    attr_int(cm.node("ToNchwc", {"x"}, {"xb"}, "to", "onnxscope.cpu"), "block", block);
    auto& p = cm.node("NchwcPool", {"xb"}, {"yb"}, "pool", "onnxscope.cpu");
    attr_string(p, "op", op);
    attr_int(p, "channels", s[1]);
    attr_int(p, "block", block);
    attr_int(cm.node("FromNchwc", {"yb"}, {"y"}, "from", "onnxscope.cpu"), "channels", s[1]);
    auto& r = rm.node(op, {"x"}, {"y"}, "pool");
    for (auto* n : {&p, &r}) {
      attr_ints(*n, "kernel_shape", k);
      attr_ints(*n, "strides", st);
      if (auto_pad == "NOTSET") attr_ints(*n, "pads", pads);
      else attr_string(*n, "auto_pad", auto_pad);
      attr_int(*n, "ceil_mode", ceil_mode);
      if (!max) attr_int(*n, "count_include_pad", include_pad);
    }
    for (ModelBuilder* b : {&cm, &rm}) b->output_untyped("y");
    auto cl = cm.load(), rl = rm.load();
    ASSERT_TRUE(cl.ok() && rl.ok()) << dump(cl) << dump(rl);
    const NamedValues in{{"x", Value(x)}};
    Ran ran;
    RunOptions ro;
    ro.observer = &ran;
    ro.capture_original = false;
    const NamedValues want = ref_engine->prepare(std::shared_ptr<const Model>(std::move(rl.model)))->run(in);
    const Tensor& w = want.at(0).second.tensor();
    // A window wholly in the padding (ceil_mode's last one can be) is declined: NaN in the reference.
    bool empty_window = false;
    for (uint64_t e = 0; e < w.element_count() && max; ++e) empty_window |= std::isnan(w.data<float>()[e]) && i % 6 != 5 && i % 12 != 11;
    const NamedValues got = cpu_engine->prepare(std::shared_ptr<const Model>(std::move(cl.model)))->run(in, ro);
    if (!empty_window) {
      EXPECT_EQ(ran.kernel, "cpu-simd");
    }
    const Tensor& g = got.at(0).second.tensor();
    ASSERT_EQ(g.shape(), w.shape());
    for (uint64_t e = 0; e < g.element_count(); ++e) {
      const float a = w.data<float>()[e], b = g.data<float>()[e];
      if (std::isnan(a) || std::isnan(b)) ASSERT_TRUE(std::isnan(a) && std::isnan(b)) << "at " << e << ": ref " << a << " cpu " << b;
      else if (std::isinf(a) || std::isinf(b)) ASSERT_EQ(a, b) << "at " << e;
      else ASSERT_LE(std::abs(a - b), 2e-6 + 2e-6 * std::abs(a)) << "at " << e << ": ref " << a << " cpu " << b;
    }
  }
}

// ToNchwc / FromNchwc at block 16 on AVX-512 (the gathers of
// tensor/nchwc_reorder.cpp): every element lands where the blocked layout
// puts it, padding lanes are zeros, and the way back restores the input bit
// for bit. Channel counts with and without a padded last block, planes from
// 1x1 to 58x60 (tails of the 16-pixel vectors and 64-pixel tiles), batches
// of 1 to 3; NaN and infinities travel as they are.
TEST(CpuOpsNn, BlockedReordersPutEveryElementInPlace) {
  if (!ONNXSCOPE_CPU_AVX512("avx512f")) GTEST_SKIP() << "the gather kernels need AVX-512; oneDNN's reorder runs here";
  struct Ran : Observer {
    std::map<std::string, std::string> kernels;
    void on_node(const NodeEvent& e) override { kernels[e.node->op_type] = e.kernel; }
  };
  Rng rng(78);
  auto cpu_engine = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 2});
  for (int i = 0; i < 60; ++i) {
    const int64_t C = i < 6 ? std::vector<int64_t>{1, 15, 16, 17, 58, 116}[static_cast<size_t>(i)] : pick(rng, 1, 70);
    const Shape s{pick(rng, 1, 3), C, pick(rng, 1, 58), pick(rng, 1, 60)};
    SCOPED_TRACE("x" + shape_to_string(s));
    Tensor x = random_tensor(rng, DataType::Float, s, -3, 3, /*specials=*/i % 4 == 3);
    ModelBuilder m(17);
    m.opset("onnxscope.cpu", 1);
    m.input("x", DataType::Float, dims_of(s));
    attr_int(m.node("ToNchwc", {"x"}, {"xb"}, "to", "onnxscope.cpu"), "block", 16);
    attr_int(m.node("FromNchwc", {"xb"}, {"y"}, "from", "onnxscope.cpu"), "channels", C);
    m.output_untyped("xb");
    m.output_untyped("y");
    auto loaded = m.load();
    ASSERT_TRUE(loaded.ok()) << dump(loaded);
    Ran ran;
    RunOptions ro;
    ro.observer = &ran;
    ro.capture_original = false;
    const NamedValues out = cpu_engine->prepare(std::shared_ptr<const Model>(std::move(loaded.model)))->run({{"x", Value(x)}}, ro);
    EXPECT_EQ(ran.kernels["ToNchwc"], "cpu-avx512");
    EXPECT_EQ(ran.kernels["FromNchwc"], "cpu-avx512");
    const Tensor& xb = out.at(0).second.tensor();
    const Tensor& y = out.at(1).second.tensor();
    const int64_t CB = (C + 15) / 16, S = s[2] * s[3];
    ASSERT_EQ(xb.shape(), (Shape{s[0], CB, s[2], s[3], 16}));
    const float* in = x.data<float>();
    const float* blocked = xb.data<float>();
    int bad = 0;
    for (int64_t n = 0; n < s[0]; ++n)
      for (int64_t c = 0; c < CB * 16; ++c)
        for (int64_t p = 0; p < S; ++p) {
          const float want = c < C ? in[(n * C + c) * S + p] : 0.0f;
          const float got = blocked[((n * CB + c / 16) * S + p) * 16 + c % 16];
          if (std::memcmp(&want, &got, sizeof(float)) != 0 && ++bad <= 3)
            ADD_FAILURE() << "n " << n << " c " << c << " pixel " << p << ": " << got << ", want " << want;
        }
    EXPECT_EQ(bad, 0);
    ASSERT_EQ(y.shape(), s);
    EXPECT_EQ(std::memcmp(y.raw(), x.raw(), x.byte_size()), 0) << "the way back changed the values";
  }
}

// com.microsoft GroupQueryAttention (kernels/nn/group_query_attention.cpp)
// against the reference: first prompts (ragged or not), one-token steps and
// continued prompts on a cache, packed QKV, rotary (interleaved or not,
// partial), local windows, softcap, smooth softmax, head sinks,
// attention_bias, causal 0; the qk output goes to the reference.
TEST(CpuOpsNn, GroupQueryAttentionAgainstTheReference) {
  Rng rng(97);
  auto int32s = [](const Shape& s, const std::vector<int64_t>& v) {
    Tensor t = Tensor::zeros(DataType::Int32, s);
    for (size_t i = 0; i < v.size(); ++i) t.mutable_data<int32_t>()[i] = static_cast<int32_t>(v[i]);
    return t;
  };
  for (int i = 0; i < 40; ++i) {
    const int64_t Nkv = pick(rng, 1, 2), N = Nkv * pick(rng, 1, 3), H = 8 * pick(rng, 1, 3);
    const int step = i % 3;  // 0: first prompt; 1: one token on a cache; 2: a continued prompt
    const int64_t B = step == 2 ? 1 : pick(rng, 1, 3);
    const int64_t S = step == 1 ? 1 : pick(rng, 1, 7);
    std::vector<int64_t> lens(static_cast<size_t>(B)), past(static_cast<size_t>(B), 0);
    int64_t P = 0, total = S;
    if (step == 0) {
      for (auto& l : lens) l = i % 2 ? pick(rng, 1, S) : S;
      lens[0] = S;
    } else {
      for (size_t b = 0; b < past.size(); ++b) past[b] = pick(rng, 0, 6), lens[b] = past[b] + S;
      total = *std::max_element(lens.begin(), lens.end());
      P = i % 2 ? *std::max_element(past.begin(), past.end()) : total + pick(rng, 0, 2);
    }
    const bool packed = i % 4 == 3, causal = i % 11 != 10;
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    std::vector<std::string> ins;
    if (packed) {
      c.input("q", random_tensor(rng, DataType::Float, {B, S, (N + 2 * Nkv) * H}, -1.5, 1.5));
      ins = {"q", "", ""};
    } else {
      c.input("q", random_tensor(rng, DataType::Float, {B, S, N * H}, -1.5, 1.5));
      c.input("k", random_tensor(rng, DataType::Float, {B, S, Nkv * H}, -1.5, 1.5));
      c.input("v", random_tensor(rng, DataType::Float, {B, S, Nkv * H}, -1.5, 1.5));
      ins = {"q", "k", "v"};
    }
    if (step) {
      c.input("pk", random_tensor(rng, DataType::Float, {B, Nkv, P, H}, -1.5, 1.5));
      c.input("pv", random_tensor(rng, DataType::Float, {B, Nkv, P, H}, -1.5, 1.5));
      ins.insert(ins.end(), {"pk", "pv"});
    } else {
      ins.insert(ins.end(), {"", ""});
    }
    std::vector<int64_t> seqlens = lens;
    for (auto& l : seqlens) --l;
    c.input("seqlens_k", int32s({B}, seqlens));
    c.input("total", int32s({}, {total}));
    ins.insert(ins.end(), {"seqlens_k", "total"});
    const bool rotary = i % 2 == 0 && causal;
    if (rotary) {
      const int64_t half = i % 4 == 0 ? H / 2 : H / 4;
      c.input("cos", random_tensor(rng, DataType::Float, {16, half}, -1, 1));
      c.input("sin", random_tensor(rng, DataType::Float, {16, half}, -1, 1));
      ins.insert(ins.end(), {"cos", "sin"});
    }
    const int64_t present = std::max(P, total);
    const bool bias = i % 8 == 5, sink = i % 9 == 4;
    if (bias || sink) {
      if (!rotary) ins.insert(ins.end(), {"", ""});
      ins.push_back("");  // position_ids
      if (bias) c.input("ab", random_tensor(rng, DataType::Float, {pick(rng, 0, 1) ? B : 1, N, S, present}, -1, 1));
      ins.push_back(bias ? "ab" : "");
      if (sink) c.input("sink", random_tensor(rng, DataType::Float, {N}, -1, 1));
      if (sink) ins.push_back("sink");
    }
    auto& n = c.mb.node("GroupQueryAttention", ins, {"y", "present_key", "present_value"}, "n", "com.microsoft");
    attr_int(n, "num_heads", N);
    attr_int(n, "kv_num_heads", Nkv);
    if (rotary) attr_int(n, "do_rotary", 1);
    if (rotary && i % 3 == 1) attr_int(n, "rotary_interleaved", 1);
    if (!causal) attr_int(n, "causal", 0);
    if (causal && i % 5 == 1) attr_int(n, "local_window_size", pick(rng, 1, 4));
    if (i % 5 == 2) attr_float(n, "softcap", 2.5f);
    if (i % 7 == 3) attr_int(n, "smooth_softmax", 1);
    c.outputs = {"y", "present_key", "present_value"};
    c.what = "GroupQueryAttention step " + std::to_string(step) + " B" + std::to_string(B) + " S" + std::to_string(S) +
             " N" + std::to_string(N) + "/" + std::to_string(Nkv) + " H" + std::to_string(H) + " P" + std::to_string(P) +
             (packed ? " packed" : "") + (rotary ? " rotary" : "") + (bias ? " bias" : "") + (sink ? " sink" : "");
    check(c, 2e-5, 2e-5);
  }
}

// com.microsoft Attention and MultiHeadAttention
// (kernels/nn/contrib_attention.cpp) against the reference: every mask
// format, unidirectional, past, attention_bias, qkv_hidden_sizes; MHA's
// separate, cross, head-major, packed KV and packed QKV forms with bias.
TEST(CpuOpsNn, ContribAttentionAndMultiHeadAttentionAgainstTheReference) {
  Rng rng(98);
  auto int32s = [&](const Shape& s, int64_t lo, int64_t hi) {
    Tensor t = Tensor::zeros(DataType::Int32, s);
    for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<int32_t>()[i] = static_cast<int32_t>(pick(rng, lo, hi));
    return t;
  };
  for (int i = 0; i < 48; ++i) {
    const bool mha = i % 2 == 1;
    const int64_t B = pick(rng, 1, 3), S = pick(rng, 1, 6), N = pick(rng, 1, 3), H = 2 * pick(rng, 1, 4);
    Case c(17);
    c.mb.opset("com.microsoft", 1);
    std::vector<std::string> ins;
    int64_t T = S, P = 0, Hv = H;
    const int form = mha ? (i / 2) % 5 : 0;  // MHA: separate, cross, head-major, packed KV, packed QKV
    if (!mha) {
      Hv = i % 5 == 0 ? H + 2 : H;
      const int64_t Din = pick(rng, 2, 12), width = 2 * N * H + N * Hv;
      c.input("x", random_tensor(rng, DataType::Float, {B, S, Din}, -1.5, 1.5));
      c.input("w", random_tensor(rng, DataType::Float, {Din, width}, -1, 1));
      c.input("b", random_tensor(rng, DataType::Float, {width}, -1, 1));
      ins = {"x", "w", "b"};
      P = Hv == H && i % 4 == 2 ? pick(rng, 1, 3) : 0;
    } else {
      const int64_t L = form == 1 || form == 2 || form == 3 ? pick(rng, 1, 6) : S;
      Hv = form == 1 && i % 3 == 0 ? H + 2 : H;
      const bool bias = form <= 1 && i % 3 != 2;
      if (form == 4) {
        c.input("q", random_tensor(rng, DataType::Float, {B, S, N, 3, H}, -1.5, 1.5));
        ins = {"q"};
      } else {
        c.input("q", random_tensor(rng, DataType::Float, {B, S, N * H}, -1.5, 1.5));
        if (form == 2) {
          c.input("k", random_tensor(rng, DataType::Float, {B, N, L, H}, -1.5, 1.5));
          c.input("v", random_tensor(rng, DataType::Float, {B, N, L, Hv}, -1.5, 1.5));
          ins = {"q", "k", "v"};
        } else if (form == 3) {
          c.input("k", random_tensor(rng, DataType::Float, {B, L, N, 2, H}, -1.5, 1.5));
          ins = {"q", "k"};
        } else {
          c.input("k", random_tensor(rng, DataType::Float, {B, L, N * H}, -1.5, 1.5));
          c.input("v", random_tensor(rng, DataType::Float, {B, L, N * Hv}, -1.5, 1.5));
          ins = {"q", "k", "v"};
        }
      }
      while (ins.size() < 3) ins.push_back("");
      if (bias) c.input("bias", random_tensor(rng, DataType::Float, {2 * N * H + N * Hv}, -1, 1));
      ins.push_back(bias ? "bias" : "");
      T = L;
      P = form == 0 && i % 4 == 1 ? pick(rng, 1, 3) : 0;
    }
    T += P;
    const int kind = i % 6;  // mask: none, (B), (2B), (B, T), (B, S, T), dummy (B, 1)
    const std::string mask = kind == 0 ? "" : "mask";
    if (kind == 1) c.input("mask", int32s({B}, 1, T));
    if (kind == 2) {
      Tensor m = int32s({2 * B}, 0, 0);
      for (int64_t b = 0; b < B; ++b) {
        const int64_t end = pick(rng, 1, T);
        m.mutable_data<int32_t>()[b] = static_cast<int32_t>(end);
        m.mutable_data<int32_t>()[B + b] = static_cast<int32_t>(pick(rng, 0, end - 1));
      }
      c.input("mask", m);
    }
    if (kind == 3 || kind == 4) {
      Tensor m = int32s(kind == 3 ? Shape{B, T} : Shape{B, S, T}, 0, 1);
      for (uint64_t e = 0; e < m.element_count(); e += static_cast<uint64_t>(T)) m.mutable_data<int32_t>()[e] = 1;
      c.input("mask", m);
    }
    if (kind == 5) c.input("mask", int32s({B, 1}, 1, 1));
    const bool ab = i % 5 == 3 && (mha || P == 0);
    if (ab) c.input("ab", random_tensor(rng, DataType::Float, {pick(rng, 0, 1) ? B : 1, pick(rng, 0, 1) ? N : 1, S, T}, -1, 1));
    std::vector<std::string> outs = {"y"};
    if (mha) {
      ins.push_back(mask);
      ins.push_back(ab ? "ab" : "");
      if (P) {
        c.input("pk", random_tensor(rng, DataType::Float, {B, N, P, H}, -1.5, 1.5));
        c.input("pv", random_tensor(rng, DataType::Float, {B, N, P, Hv}, -1.5, 1.5));
        ins.insert(ins.end(), {"pk", "pv"});
        outs = {"y", "present_key", "present_value"};
      }
    } else {
      ins.push_back(mask);
      if (P) c.input("past", random_tensor(rng, DataType::Float, {2, B, N, P, H}, -1.5, 1.5));
      ins.push_back(P ? "past" : "");
      ins.push_back(ab ? "ab" : "");
      if (P) outs = {"y", "present"};
    }
    while (ins.back().empty()) ins.pop_back();
    const char* op = mha ? "MultiHeadAttention" : "Attention";
    auto& n = c.mb.node(op, ins, outs, "n", "com.microsoft");
    attr_int(n, "num_heads", N);
    if (!mha && Hv != H) attr_ints(n, "qkv_hidden_sizes", {N * H, N * H, N * Hv});
    if ((mha ? form == 0 : true) && i % 7 < 2) attr_int(n, "unidirectional", 1);
    if (i % 9 == 4) attr_float(n, "scale", 0.4f);
    c.outputs = outs;
    c.what = std::string(op) + " form " + std::to_string(form) + " mask " + std::to_string(kind) + " B" + std::to_string(B) +
             " S" + std::to_string(S) + " T" + std::to_string(T) + " N" + std::to_string(N) + " H" + std::to_string(H) +
             " Hv" + std::to_string(Hv) + " P" + std::to_string(P) + (ab ? " attention_bias" : "");
    check(c, 2e-5, 2e-5);
  }
}


// NchwcConv of groups of 2, 4 or 8 channels on the 16-channel blocked layout
// (kernels/nn/grouped_conv_nchwc.cpp) against the reference's Conv: channel
// counts with a padded last block, kernels up to 5, strides up to 3,
// dilations, pads and auto_pad, a bias or not, the residual input, every
// activation NchwcConv fuses (fused_ops.h), weights as an initializer
// (packed once) or an input, NaN and infinities in X. Its sums' order is
// fixed by the problem: one and two threads give the same bits.
TEST(CpuOpsNn, BlockedGroupedConvMatchesTheReference) {
  if (!ONNXSCOPE_CPU_AVX512("avx512f")) GTEST_SKIP() << "the grouped blocked kernel needs AVX-512";
  const auto& acts = blocked_conv_activations();
  Rng rng(91);
  auto one = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 1});
  auto two = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 2});
  const char* auto_pads[] = {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  int checked = 0;
  for (int i = 0; i < 120; ++i) {
    const int64_t c = std::vector<int64_t>{2, 4, 8}[static_cast<size_t>(i % 3)];
    const int64_t G = pick(rng, 2, 48 / c + 3), C = G * c;
    BlockedConvCase bc;
    bc.x = {pick(rng, 1, 2), C, pick(rng, 1, 13), pick(rng, 1, 21)};
    bc.out_channels = C;
    bc.group = G;
    bc.block = 16;
    bc.dilations = {pick(rng, 1, 2), pick(rng, 1, 2)};
    bc.kernel = {pick(rng, 1, std::min<int64_t>(5, (bc.x[2] - 1) / bc.dilations[0] + 1)),
                 pick(rng, 1, std::min<int64_t>(5, (bc.x[3] - 1) / bc.dilations[1] + 1))};
    bc.strides = {pick(rng, 1, 3), pick(rng, 1, 3)};
    bc.pads = {pick(rng, 0, bc.kernel[0]), pick(rng, 0, bc.kernel[1]), pick(rng, 0, bc.kernel[0]), pick(rng, 0, bc.kernel[1])};
    bc.auto_pad = auto_pads[pick(rng, 0, 5)];
    const auto& a = acts[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(acts.size()) - 1))];
    bc.act = a.first;
    bc.act_params = a.second;
    bc.bias = i % 4 != 0;
    bc.residual = i % 5 == 1;
    bc.w_constant = i % 2 == 0;
    bc.odd_values = i % 9 == 4;
    if (blocked_conv_out(bc).empty()) continue;  // no output pixel
    SCOPED_TRACE(bc.text());
    const BlockedConvRun r = run_blocked_conv(bc, rng, {one.get(), two.get()});
    for (size_t e = 0; e < r.got.size(); ++e) {
      EXPECT_EQ(r.kernels[e], "cpu-avx512");
      const std::string bad = blocked_conv_mismatch(r.want, r.got[e], 2e-5);
      ASSERT_TRUE(bad.empty()) << bad;
    }
    ASSERT_EQ(std::memcmp(r.got[0].raw(), r.got[1].raw(), r.got[0].byte_size()), 0) << "1 and 2 threads differ";
    ++checked;
  }
  EXPECT_GE(checked, 105);  // (the rest had no output pixel)
}

}  // namespace
