// The Winograd F(2x2, 3x3) blocked convolution (cpu/kernels/nn/
// winograd_conv_nchwc.cpp) against the reference's Conv on seeded random
// problems: channel counts off the 8-channel blocks and past one 256-deep
// block of the products, planes odd and even, from 1x1 to several chunks of
// tiles, pads 0 to 2 on each side and auto_pad, batches, a bias or not, the
// residual, every activation NchwcConv fuses, weights constant (transformed
// once) or an input, NaN and infinities in X (a tile with an infinity is
// computed directly). One and two threads give the same bits. Problems it
// leaves (strides, dilations, groups, few channels, under 4 rows or
// columns out) go to another kernel.
// A ResNet basic block through the engine's passes runs it, the residual
// taking the output in place. On AVX-512 CPUs (where oneDNN keeps these
// problems) the kernel is forced on for the test, and the passes block by 8.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "blocked_conv_case.h"
#include "cpu/kernels/kernels.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

bool avx2() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// The engine's passes block activations by 16 channels on AVX-512 CPUs,
// and this kernel takes blocks of 8: the whole binary runs at 8 (set before
// main, so before the engine first reads it; a block the caller set stays).
const bool kBlockOf8 = setenv("ONNXSCOPE_NCHWC_BLOCK", "8", 0) == 0;

// The kernel on for the test's span, on every CPU with AVX2.
struct Forced {
  Forced() { cpu::force_winograd_conv_on_avx512(true); }
  ~Forced() { cpu::force_winograd_conv_on_avx512(false); }
};

// Winograd's transforms add a few roundings to each output's float sum (V
// sums up to four inputs, U up to nine halves of weights, Y up to nine
// products' sums): within 1e-4 of 1 + |want| for sums of up to ~700 terms
// of magnitude up to 3.
constexpr double kTol = 1e-4;

}  // namespace

TEST(CpuWinogradConv, MatchesTheReference) {
  if (!avx2()) GTEST_SKIP() << "the Winograd kernel needs AVX2 and FMA";
  Forced forced;
  const auto& acts = blocked_conv_activations();
  Rng rng(611);
  auto one = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 1});
  auto two = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 2});
  const char* auto_pads[] = {"NOTSET", "NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  int checked = 0, taken_count = 0;
  for (int i = 0; i < 70; ++i) {
    BlockedConvCase bc;
    const bool deep = i % 10 == 3, wide = i % 10 == 7;  // past one 256-deep block; several chunks of tiles
    const int64_t C = deep ? pick(rng, 257, 300) : pick(rng, 16, 72);
    const int64_t plane = wide ? 64 : 19;
    bc.x = {pick(rng, 1, deep ? 1 : 3), C, pick(rng, i % 6 == 5 ? 1 : 4, plane), pick(rng, i % 6 == 5 ? 1 : 4, plane)};
    bc.out_channels = deep ? pick(rng, 16, 40) : pick(rng, 16, 72);
    bc.kernel = {3, 3};
    bc.strides = {1, 1};
    bc.dilations = {1, 1};
    bc.pads = {pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2)};
    bc.auto_pad = auto_pads[pick(rng, 0, 6)];
    const auto& a = acts[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(acts.size()) - 1))];
    bc.act = a.first;
    bc.act_params = a.second;
    bc.bias = i % 4 != 0;
    bc.residual = i % 5 == 1;
    bc.w_constant = i % 3 != 0;
    bc.odd_values = i % 9 == 4;
    const std::vector<int64_t> out = blocked_conv_out(bc);
    if (out.empty()) continue;  // no output pixel
    // Under 4 output rows or columns it leaves the problem to oneDNN.
    const bool taken = out[0] >= 4 && out[1] >= 4;
    SCOPED_TRACE(bc.text());
    const BlockedConvRun r = run_blocked_conv(bc, rng, {one.get(), two.get()});
    for (size_t e = 0; e < r.got.size(); ++e) {
      if (taken) EXPECT_EQ(r.kernels[e], "cpu-winograd");
      else EXPECT_NE(r.kernels[e], "cpu-winograd");
      const std::string bad = blocked_conv_mismatch(r.want, r.got[e], kTol);
      ASSERT_TRUE(bad.empty()) << bad;
    }
    ASSERT_EQ(std::memcmp(r.got[0].raw(), r.got[1].raw(), r.got[0].byte_size()), 0) << "1 and 2 threads differ";
    ++checked;
    taken_count += taken;
  }
  EXPECT_GE(checked, 60);  // (the rest had no output pixel)
  EXPECT_GE(taken_count, 40);
}

TEST(CpuWinogradConv, LeavesWhatItDoesNotCompute) {
  if (!avx2()) GTEST_SKIP() << "the Winograd kernel needs AVX2 and FMA";
  Forced forced;
  Rng rng(612);
  auto cpu = make_cpu_engine(CpuOptions{.opt_level = 0, .threads = 1});
  struct Left {
    const char* why;
    int64_t C, M, group, stride, dilation, k;
  };
  const Left cases[] = {{"stride 2", 32, 32, 1, 2, 1, 3}, {"dilation 2", 32, 32, 1, 1, 2, 3}, {"2 groups", 32, 32, 2, 1, 1, 3},
                        {"8 channels in", 8, 32, 1, 1, 1, 3}, {"8 channels out", 32, 8, 1, 1, 1, 3}, {"5x5", 32, 32, 1, 1, 1, 5},
                        {"3x3 out", 32, 32, 1, 1, 1, 3}};
  for (const Left& l : cases) {
    BlockedConvCase bc;
    bc.x = {1, l.C, std::string(l.why) == "3x3 out" ? 3 : 12, 12};
    bc.out_channels = l.M;
    bc.group = l.group;
    bc.kernel = {l.k, l.k};
    bc.strides = {l.stride, l.stride};
    bc.dilations = {l.dilation, l.dilation};
    bc.pads = {1, 1, 1, 1};
    bc.bias = true;
    SCOPED_TRACE(std::string(l.why) + ": " + bc.text());
    const BlockedConvRun r = run_blocked_conv(bc, rng, {cpu.get()});
    EXPECT_NE(r.kernels[0], "cpu-winograd");
    EXPECT_FALSE(r.kernels[0].empty());
    const std::string bad = blocked_conv_mismatch(r.want, r.got[0], kTol);
    EXPECT_TRUE(bad.empty()) << bad;
  }
}

// h = Relu(conv(x)), then a basic block on h: conv-Relu-conv + h -> Relu,
// h dying there: the passes make all three NchwcConv (the last with the
// residual and Relu fused), and the Winograd kernel runs them, the last into
// the residual's storage.
TEST(CpuWinogradConv, ResNetBlockThroughThePasses) {
  if (!avx2()) GTEST_SKIP() << "the Winograd kernel needs AVX2 and FMA";
  Forced forced;
  Rng rng(613);
  ModelBuilder mb(17);
  const int64_t C = 40;
  mb.input("x", DataType::Float, {int64_t{2}, C, int64_t{15}, int64_t{14}});
  for (const char* w : {"w0", "w1", "w2"}) add_initializer(mb, w, random_tensor(rng, DataType::Float, {C, C, 3, 3}, -0.2, 0.2));
  for (const char* b : {"b0", "b1", "b2"}) add_initializer(mb, b, random_tensor(rng, DataType::Float, {C}, -1, 1));
  attr_ints(mb.node("Conv", {"x", "w0", "b0"}, {"c0"}, "conv0"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c0"}, {"h"}, "relu0");
  attr_ints(mb.node("Conv", {"h", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  mb.node("Relu", {"c1"}, {"r1"}, "relu1");
  attr_ints(mb.node("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  mb.node("Add", {"c2", "h"}, {"s"}, "add");
  mb.node("Relu", {"s"}, {"y"}, "relu2");
  mb.output_untyped("y");
  auto loaded = mb.load();
  ASSERT_TRUE(loaded.ok()) << dump(loaded);
  const std::shared_ptr<const Model> model(std::move(loaded.model));
  const NamedValues in{{"x", Value(random_tensor(rng, DataType::Float, {2, C, 15, 14}, -2, 2))}};
  const Tensor want = make_reference_engine()->prepare(model)->run(in).at(0).second.tensor();
  struct Ran : Observer {
    bool reads_values() const override { return false; }  // (one that reads them keeps the residual's storage)
    std::vector<std::string> convs;
    void on_node(const NodeEvent& e) override {
      if (e.node->op_type == "NchwcConv") convs.push_back(std::string(e.kernel) + " " + std::to_string(e.node->inputs.size()));
    }
  };
  for (int threads : {1, 2}) {
    Ran ran;
    RunOptions ro;
    ro.observer = &ran;
    ro.capture_original = false;
    auto cpu = make_cpu_engine(CpuOptions{.threads = threads});
    const Tensor got = cpu->prepare(model)->run(in, ro).at(0).second.tensor();
    EXPECT_EQ(ran.convs, (std::vector<std::string>{"cpu-winograd 3", "cpu-winograd 3", "cpu-winograd 4"}));
    const std::string bad = blocked_conv_mismatch(want, got, kTol);
    EXPECT_TRUE(bad.empty()) << bad;
  }
}
