// The CPU kernels that compute float16 nodes themselves (float32 in the
// registers, each result rounded once to nearest even): the AVX-512 unary
// kernels and the plain depthwise convolution. They must give the bits the
// float32 kernel between two Casts gives (what the
// compute-low-precision-in-float32 pass would make of the node), on inputs
// holding NaN, infinities, signed zeros, subnormal halves and odd sizes (the
// 16-lane tails), and the pass must leave those nodes in float16.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/float_formats.h"
#include "ops_harness.h"
#include "pass_test_util.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

struct KernelOf : Observer {
  std::string op, kernel;
  void on_node(const NodeEvent& e) override {
    if (e.node->op_type == op) kernel = std::string(e.kernel);
  }
};

// y of `half` (the float16 node, the engine's passes on) against y of `cast`
// (Cast, the float32 node, Cast, no passes): the same bits, NaN's too. The
// float16 node runs on `kernel` wherever its float32 form does (elsewhere
// the kernel declines and the cpu-float32 one widens it).
void expect_same_bits(const std::shared_ptr<Model>& half, const std::shared_ptr<Model>& cast, const NamedValues& inputs,
                      const std::string& op, const std::string& kernel, const std::string& what) {
  KernelOf seen, seen_float;
  seen.op = seen_float.op = op;
  RunOptions ro;
  ro.observer = &seen;
  ro.capture_original = false;
  const NamedValues got = make_cpu_engine(CpuOptions{})->prepare(half)->run(inputs, ro);
  CpuOptions plain;
  plain.opt_level = 0;
  ro.observer = &seen_float;
  const NamedValues want = make_cpu_engine(plain)->prepare(cast)->run(inputs, ro);
  EXPECT_EQ(seen.kernel, seen_float.kernel == kernel ? kernel : "cpu-float32") << what << ": the float16 node's kernel";
  const Tensor& a = got.at(0).second.tensor();
  const Tensor& b = want.at(0).second.tensor();
  ASSERT_EQ(a.dtype(), DataType::Float16) << what;
  ASSERT_EQ(b.dtype(), DataType::Float16) << what;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  for (uint64_t i = 0; i < a.element_count(); ++i) {
    uint16_t x, y;
    std::memcpy(&x, a.raw() + 2 * i, 2);
    std::memcpy(&y, b.raw() + 2 * i, 2);
    ASSERT_EQ(x, y) << what << " [" << i << "]: " << half_to_float(x) << " against the Casts' " << half_to_float(y);
  }
}

// Subnormal halves (below 2^-14) and the largest finite ones, besides the
// harness's NaN, infinities and zeros.
Tensor half_input(Rng& rng, const Shape& s, double lo, double hi) {
  Tensor t = random_tensor(rng, DataType::Float16, s, lo, hi, true);
  auto* h = reinterpret_cast<uint16_t*>(t.mutable_raw());
  const uint64_t n = t.element_count();
  for (uint64_t i = 0; i < n; i += 7) h[i] = static_cast<uint16_t>(pick(rng, 1, 0x3ff) | (pick(rng, 0, 1) << 15));  // subnormal
  for (uint64_t i = 3; i < n; i += 29) h[i] = pick(rng, 0, 1) ? 0x7bff : 0xfbff;  // +-65504
  return t;
}

bool avx512() { return cpu::unary_avx512_takes_half("Relu"); }

TEST(CpuFloat16Kernels, UnaryGiveTheCastsBits) {
  if (!avx512()) GTEST_SKIP() << "no AVX-512 here: float16 unary nodes compute between Casts";
  Rng rng(5);
  const char* ops[] = {"Relu", "Abs", "Exp", "Log", "Sigmoid", "Tanh", "Erf", "Softplus", "Mish", "Sin", "Cos"};
  for (const char* op : ops) {
    ASSERT_TRUE(cpu::unary_avx512_takes_half(op)) << op;
    for (int k = 0; k < 4; ++k) {
      const Shape s = {pick(rng, 1, 3), pick(rng, 1, 40), pick(rng, 1, 37)};  // tails of 1 to 15 lanes
      const double range = k % 2 ? 12.0 : 3000.0;  // Exp, Sinh-like overflow at the wide range
      NamedValues inputs = {{"x", Value(half_input(rng, s, -range, range))}};
      ModelBuilder h(18);
      h.input("x", DataType::Float16, dims_of(s));
      h.node(op, {"x"}, {"y"}, "op");
      h.output("y", DataType::Float16, dims_of(s));
      ModelBuilder c(18);
      c.input("x", DataType::Float16, dims_of(s));
      attr_int(c.node("Cast", {"x"}, {"xf"}, "widen"), "to", static_cast<int64_t>(DataType::Float));
      c.node(op, {"xf"}, {"yf"}, "op");
      attr_int(c.node("Cast", {"yf"}, {"y"}, "round"), "to", static_cast<int64_t>(DataType::Float16));
      c.output("y", DataType::Float16, dims_of(s));
      expect_same_bits(load_model(h), load_model(c), inputs, op, "cpu-avx512", std::string(op) + " " + shape_to_string(s));
    }
  }
}

TEST(CpuFloat16Kernels, DepthwiseConvGivesTheCastsBits) {
  if (!avx512()) GTEST_SKIP() << "no AVX-512 here: a float16 depthwise convolution computes between Casts";
  Rng rng(9);
  for (int k = 0; k < 24; ++k) {
    const int64_t C = pick(rng, 2, 20), kh = pick(rng, 1, 5), kw = pick(rng, 1, 5);
    const int64_t sh = pick(rng, 1, 3), sw = pick(rng, 1, 3), dh = pick(rng, 1, 2), dw = pick(rng, 1, 2);
    const int64_t H = pick(rng, (kh - 1) * dh + 1, 40), W = pick(rng, (kw - 1) * dw + 1, 70);
    const std::vector<int64_t> pads = {pick(rng, 0, kh - 1), pick(rng, 0, kw - 1), pick(rng, 0, kh - 1), pick(rng, 0, kw - 1)};
    const bool bias = pick(rng, 0, 1) == 1;
    const Shape xs = {pick(rng, 1, 2), C, H, W};
    const Tensor w = random_tensor(rng, DataType::Float16, {C, 1, kh, kw}, -1, 1);
    const Tensor b = random_tensor(rng, DataType::Float16, {C}, -1, 1);
    auto raw = [](const Tensor& t) { return std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()); };
    auto widened = [](const Tensor& t) {
      std::vector<float> f(t.element_count());
      for (size_t i = 0; i < f.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, t.raw() + 2 * i, 2);
        f[i] = half_to_float(h);
      }
      return f;
    };
    auto conv = [&](ModelBuilder& m, const std::string& x, const std::string& y) {
      std::vector<std::string> ins = {x, "w"};
      if (bias) ins.push_back("b");
      auto& n = m.node("Conv", ins, {y}, "conv");
      attr_int(n, "group", C);
      attr_ints(n, "strides", {sh, sw});
      attr_ints(n, "dilations", {dh, dw});
      attr_ints(n, "pads", pads);
    };
    NamedValues inputs = {{"x", Value(half_input(rng, xs, -4, 4))}};
    ModelBuilder h(11);
    h.input("x", DataType::Float16, dims_of(xs));
    h.initializer(make_tensor_raw("w", DataType::Float16, {C, 1, kh, kw}, raw(w)));
    if (bias) h.initializer(make_tensor_raw("b", DataType::Float16, {C}, raw(b)));
    conv(h, "x", "y");
    const int64_t OH = (H + pads[0] + pads[2] - ((kh - 1) * dh + 1)) / sh + 1;
    const int64_t OW = (W + pads[1] + pads[3] - ((kw - 1) * dw + 1)) / sw + 1;
    const std::vector<DimSpec> ys = {xs[0], C, OH, OW};
    h.output("y", DataType::Float16, ys);
    ModelBuilder c(11);
    c.input("x", DataType::Float16, dims_of(xs));
    c.initializer(make_float_tensor("w", {C, 1, kh, kw}, widened(w)));
    if (bias) c.initializer(make_float_tensor("b", {C}, widened(b)));
    attr_int(c.node("Cast", {"x"}, {"xf"}, "widen"), "to", static_cast<int64_t>(DataType::Float));
    conv(c, "xf", "yf");
    attr_int(c.node("Cast", {"yf"}, {"y"}, "round"), "to", static_cast<int64_t>(DataType::Float16));
    c.output("y", DataType::Float16, ys);
    const std::string what = "x " + shape_to_string(xs) + " kernel " + std::to_string(kh) + "x" + std::to_string(kw) + " strides " +
                             std::to_string(sh) + "," + std::to_string(sw) + " dilations " + std::to_string(dh) + "," +
                             std::to_string(dw) + (bias ? " bias" : "");
    expect_same_bits(load_model(h), load_model(c), inputs, "Conv", "cpu-simd", what);
  }
}

// The pass leaves a float16 node its kernel computes as it is, and still
// widens one it does not (a grouped, not depthwise, convolution; bfloat16).
TEST(CpuFloat16Kernels, ThePassLeavesThemInFloat16) {
  if (!avx512()) GTEST_SKIP() << "no AVX-512 here: the pass widens every float16 node";
  auto model = [](DataType t, int64_t group) {
    ModelBuilder b(18);
    b.input("x", t, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
    std::string raw(static_cast<size_t>(4 * (4 / group) * 9 * 2), '\0');
    b.initializer(make_tensor_raw("w", t, {4, 4 / group, 3, 3}, raw));
    attr_int(b.node("Conv", {"x", "w"}, {"c"}, "conv"), "group", group);
    b.node("Tanh", {"c"}, {"y"}, "tanh");
    b.output("y", t, {int64_t{1}, int64_t{4}, int64_t{6}, int64_t{6}});
    return load_model(b);
  };
  using passes::apply;
  auto depthwise = apply(*model(DataType::Float16, 4), cpu::compute_low_precision_in_float32, false);
  EXPECT_EQ(op_types(*depthwise), (std::vector<std::string>{"Conv", "Tanh"}));
  auto grouped = apply(*model(DataType::Float16, 2), cpu::compute_low_precision_in_float32, true);
  EXPECT_EQ(op_types(*grouped), (std::vector<std::string>{"Cast", "Conv", "Cast", "Tanh"}));
  auto bf16 = apply(*model(DataType::BFloat16, 4), cpu::compute_low_precision_in_float32, true);
  EXPECT_EQ(op_types(*bf16), (std::vector<std::string>{"Cast", "Conv", "Cast", "Cast", "Tanh", "Cast"}));
}

}  // namespace
