// Kernel state kept between runs (KernelContext::kernel_state): the CPU
// engine's blocked convolution keeps its primitive, reordered weights and
// memory objects per node. One prepared model is run again and again while
// what the kept state was made for changes underneath it: the batch, the
// spatial size, the values of weights that are a graph input (not an
// initializer, so never cached), with and without a residual. Every run must
// equal a fresh reference run, and the blocked kernel must be the one that ran.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "core/cpu_features.h"
#include "cpu/kernels/onednn_parts.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

struct KernelLog : Observer {
  std::vector<std::string> conv_kernels;
  int blocked = 0;
  void on_node(const NodeEvent& e) override {
    if (e.node->op_type == "NchwcConv" || e.node->op_type == "Conv") conv_kernels.emplace_back(e.kernel);
    blocked += e.node->op_type == "NchwcConv";
  }
};

// Every element of got within 1e-4 (absolute and relative) of want's.
void expect_close(const Tensor& g, const Tensor& w, const std::string& what) {
  ASSERT_EQ(g.shape(), w.shape()) << what;
  int bad = 0;
  for (uint64_t i = 0; i < g.element_count(); ++i) {
    const double gv = g.data<float>()[i], wv = w.data<float>()[i];
    if (!(std::abs(gv - wv) <= 1e-4 + 1e-4 * std::abs(wv)) && ++bad <= 3)
      ADD_FAILURE() << what << " element " << i << ": cpu " << gv << ", reference " << wv;
  }
  EXPECT_EQ(bad, 0) << what;
}

std::vector<float> floats(size_t n, float scale, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + salt));
  return v;
}

// Input `name` of `in` set to floats(...) of `shape` (weights given as a graph input).
void set_weights(NamedValues& in, const std::string& name, const Shape& shape, float scale, int salt) {
  for (auto& [n, v] : in)
    if (n == name) {
      Tensor t = Tensor::zeros(DataType::Float, shape);
      const auto vals = floats(t.element_count(), scale, salt);
      std::copy(vals.begin(), vals.end(), t.mutable_data<float>());
      v = Value(std::move(t));
    }
}

// x[batch,16,h,w] -> Conv(w1, pad 1) -> Relu -> Conv(w3) -> + x (the residual,
// folded into the blocked convolution) -> Relu -> Conv(w1) -> Conv(w2, a graph
// input: its weights change from run to run) -> y
std::shared_ptr<const Model> model() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {"batch", int64_t{16}, "h", "w"});
  b.input("w2", DataType::Float, {int64_t{16}, int64_t{16}, int64_t{1}, int64_t{1}});
  b.initializer(make_float_tensor("w1", {16, 16, 3, 3}, floats(16 * 16 * 9, 0.2f, 1)));
  b.initializer(make_float_tensor("w3", {16, 16, 1, 1}, floats(16 * 16, 0.4f, 5)));
  auto& c1 = b.node("Conv", {"x", "w1"}, {"c1"}, "c1");
  attr_ints(c1, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "r1");
  b.node("Conv", {"r1", "w3"}, {"c2"}, "c2");
  b.node("Add", {"c2", "x"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"r2"}, "r2");
  auto& c3 = b.node("Conv", {"r2", "w1"}, {"c3"}, "c3");
  attr_ints(c3, "pads", {1, 1, 1, 1});
  b.node("Conv", {"c3", "w2"}, {"y"}, "c4");
  b.output("y", DataType::Float, {"batch", int64_t{16}, "h", "w"});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

NamedValues inputs(const Model& m, int64_t batch, int64_t h, int64_t w, int w2_salt) {
  InputSpec spec;
  spec.seed = static_cast<uint64_t>(batch * 100 + h * 10 + w);
  spec.dims = {{"batch", batch}, {"h", h}, {"w", w}};
  NamedValues in = make_inputs(m, spec);
  set_weights(in, "w2", {16, 16, 1, 1}, 0.5f, w2_salt);
  return in;
}

}  // namespace

TEST(CpuKernelState, KeptConvolutionPlansFollowShapesAndWeightValues) {
  auto m = model();
  ASSERT_TRUE(m);
  // On CPUs without AVX-512 the Winograd kernel (nn/winograd_conv_nchwc.cpp,
  // cpu-winograd) would take the 3x3 layer: left out, so that oneDNN's kept
  // plans are what this checks.
  auto cpu = make_cpu_engine(CpuOptions{.threads = 2, .disabled_kernels = {"cpu-winograd"}})->prepare(m);
  auto ref = make_reference_engine()->prepare(m);
  struct Step {
    int64_t batch, h, w;
    int w2_salt;
  };
  // Same shapes twice (the kept plan), then each thing that must make it redo
  // its plan, and back.
  const Step steps[] = {{1, 8, 8, 1}, {1, 8, 8, 1}, {1, 8, 8, 2}, {2, 8, 8, 2},
                        {2, 5, 7, 2}, {1, 8, 8, 3}, {1, 8, 8, 1}, {3, 1, 1, 4}};
  for (const Step& s : steps) {
    SCOPED_TRACE("batch " + std::to_string(s.batch) + ", " + std::to_string(s.h) + "x" + std::to_string(s.w) +
                 ", w2 values " + std::to_string(s.w2_salt));
    const NamedValues in = inputs(*m, s.batch, s.h, s.w, s.w2_salt);
    KernelLog log;
    RunOptions opts;
    opts.observer = &log;
    opts.capture_original = false;
    const NamedValues got = cpu->run(in, opts);
    const NamedValues want = ref->run(in);
    ASSERT_EQ(log.conv_kernels, (std::vector<std::string>(4, "onednn")));
    EXPECT_EQ(log.blocked, 3);
    expect_close(got.at(0).second.tensor(), want.at(0).second.tensor(), "y");
  }
}

// QLinearConv keeps its problem and primitive for the node's last input
// shape (conv_integer.cpp): run again and again while the batch and the
// spatial size change and come back, each run equal to the reference's bit
// for bit, on oneDNN's int8 kernel where the CPU has VNNI. The same for its
// channels-last form (NhwcQLinearConv, the nhwc-int8-layout pass's).
TEST(CpuKernelState, KeptQLinearConvPlansFollowShapes) {
  for (const bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "NhwcQLinearConv" : "QLinearConv");
    ModelBuilder b(17);
    b.input("x", DataType::Uint8, {"batch", int64_t{8}, "h", "w"});
    std::string w(8 * 8 * 9, '\0');
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<char>(static_cast<int>(i * 37 % 61) - 30);
    b.initializer(make_tensor_raw("w", DataType::Int8, {8, 8, 3, 3}, w));
    b.initializer(make_float_tensor("xs", {}, {0.02f}));
    b.initializer(make_tensor_raw("xz", DataType::Uint8, {}, std::string(1, static_cast<char>(128))));
    b.initializer(make_float_tensor("ws", {}, {0.01f}));
    b.initializer(make_tensor_raw("wz", DataType::Int8, {}, std::string(1, '\0')));
    b.initializer(make_float_tensor("ys", {}, {0.05f}));
    b.initializer(make_tensor_raw("yz", DataType::Uint8, {}, std::string(1, static_cast<char>(120))));
    auto& c = b.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "qc");
    attr_ints(c, "pads", {1, 1, 1, 1});
    b.output_untyped("y");
    auto r = b.load();
    ASSERT_TRUE(r.ok()) << dump(r);
    std::shared_ptr<const Model> m(std::move(r.model));
    CpuOptions o{.threads = 2};
    if (!channels_last) o.disabled_passes.insert("nhwc-int8-layout");
    auto cpu = make_cpu_engine(o)->prepare(m);
    auto ref = make_reference_engine()->prepare(m);
    struct Kernels : Observer {
      std::vector<std::string> seen;
      void on_node(const NodeEvent& e) override {
        if (e.node->op_type.find("QLinearConv") != std::string::npos) seen.emplace_back(e.kernel);
      }
    };
    const int64_t steps[][3] = {{1, 6, 6}, {1, 6, 6}, {2, 6, 6}, {2, 4, 9}, {1, 6, 6}, {3, 1, 1}, {1, 6, 6}};
    for (const auto& s : steps) {
      SCOPED_TRACE("batch " + std::to_string(s[0]) + ", " + std::to_string(s[1]) + "x" + std::to_string(s[2]));
      InputSpec spec;
      spec.seed = static_cast<uint64_t>(s[0] * 100 + s[1] * 10 + s[2]);
      spec.dims = {{"batch", s[0]}, {"h", s[1]}, {"w", s[2]}};
      const NamedValues in = make_inputs(*m, spec);
      Kernels k;
      RunOptions opts;
      opts.observer = &k;
      opts.capture_original = false;
      const Tensor got = cpu->run(in, opts).at(0).second.tensor();
      const Tensor want = ref->run(in).at(0).second.tensor();
      ASSERT_EQ(k.seen.size(), 1u);
      if (k.seen[0] != "onednn-int8") GTEST_SKIP() << "no VNNI: QLinearConv ran on " << k.seen[0];
      ASSERT_EQ(got.shape(), want.shape());
      EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.byte_size()), 0);
    }
  }
}

// The oneDNN products and normalizations keep their plan per node too
// (onednn_matmul.cpp, onednn_norm.cpp: PlannedInputs): FusedMatMul on packed
// weights with a bias and Relu, on small plain weights through sgemm with a
// Tanh pass after it, LayerNormalization, a product of two activations,
// Softmax, and a Gemm whose B is a graph input (values that change from run
// to run, so never cached). One prepared model runs while the batch, the
// sequence and the Gemm's rows change and come back; every run must equal a
// fresh reference run, on the oneDNN kernels.
TEST(CpuKernelState, KeptProductAndNormPlansFollowShapesAndValues) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {"batch", "seq", int64_t{64}});
  b.input("g", DataType::Float, {"n", int64_t{16}});
  b.input("wg", DataType::Float, {int64_t{16}, int64_t{8}});
  b.initializer(make_float_tensor("w1", {64, 64}, floats(64 * 64, 0.15f, 1)));
  b.initializer(make_float_tensor("b1", {64}, floats(64, 0.3f, 2)));
  b.initializer(make_float_tensor("w2", {64, 16}, floats(64 * 16, 0.2f, 3)));
  b.initializer(make_float_tensor("b2", {16}, floats(16, 0.3f, 4)));
  b.initializer(make_float_tensor("ls", {16}, floats(16, 0.5f, 5)));
  b.initializer(make_float_tensor("lb", {16}, floats(16, 0.5f, 6)));
  b.initializer(make_float_tensor("cg", {8}, floats(8, 0.5f, 7)));
  b.node("MatMul", {"x", "w1"}, {"m1"}, "m1");
  b.node("Add", {"m1", "b1"}, {"a1"}, "a1");
  b.node("Relu", {"a1"}, {"r1"}, "r1");
  b.node("MatMul", {"r1", "w2"}, {"m2"}, "m2");
  b.node("Add", {"m2", "b2"}, {"a2"}, "a2");
  b.node("Tanh", {"a2"}, {"t2"}, "t2");
  b.node("LayerNormalization", {"t2", "ls", "lb"}, {"ln"}, "ln");
  auto& tr = b.node("Transpose", {"ln"}, {"lt"}, "lt");
  attr_ints(tr, "perm", {0, 2, 1});
  b.node("MatMul", {"ln", "lt"}, {"sc"}, "scores");
  b.node("Softmax", {"sc"}, {"y"}, "softmax");
  b.node("Gemm", {"g", "wg", "cg"}, {"y2"}, "gemm");
  b.output_untyped("y");
  b.output_untyped("y2");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  // The small-product kernel (math/small_matmul.cpp, cpu-avx512) would take
  // these few-row products, on CPUs without AVX-512 the AVX2 product
  // (math/float_gemm_avx2.cpp, cpu-avx2) those by a constant B and the plain
  // Softmax rows (math/softmax_rows.cpp, cpu-simd) the Softmax: left out, so
  // that oneDNN's kept plans run them.
  auto cpu = make_cpu_engine(CpuOptions{.threads = 2, .disabled_kernels = {"cpu-avx512", "cpu-avx2", "cpu-simd"}})->prepare(m);
  auto ref = make_reference_engine()->prepare(m);
  struct Kernels : Observer {
    std::map<std::string, std::string> by_op;
    void on_node(const NodeEvent& e) override { by_op[e.node->op_type] += std::string(e.kernel) + " "; }
  };
  const int64_t steps[][4] = {{1, 4, 3, 1}, {1, 4, 3, 1}, {1, 4, 3, 2}, {2, 4, 3, 2},
                              {2, 7, 5, 2}, {1, 4, 3, 3}, {1, 4, 3, 1}, {3, 1, 1, 4}};
  for (const auto& s : steps) {
    SCOPED_TRACE("batch " + std::to_string(s[0]) + ", seq " + std::to_string(s[1]) + ", gemm rows " +
                 std::to_string(s[2]) + ", wg values " + std::to_string(s[3]));
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(s[0] * 100 + s[1] * 10 + s[2]);
    spec.dims = {{"batch", s[0]}, {"seq", s[1]}, {"n", s[2]}};
    NamedValues in = make_inputs(*m, spec);
    set_weights(in, "wg", {16, 8}, 0.5f, static_cast<int>(s[3]));
    Kernels k;
    RunOptions opts;
    opts.observer = &k;
    opts.capture_original = false;
    const NamedValues got = cpu->run(in, opts);
    const NamedValues want = ref->run(in);
    EXPECT_EQ(k.by_op["FusedMatMul"], "onednn onednn ");
    EXPECT_EQ(k.by_op["MatMul"], "onednn ");
    EXPECT_EQ(k.by_op["LayerNormalization"], "onednn ");
    EXPECT_EQ(k.by_op["Softmax"], "onednn ");
    EXPECT_EQ(k.by_op["Gemm"], "onednn ");
    for (size_t o = 0; o < 2; ++o)
      expect_close(got.at(o).second.tensor(), want.at(o).second.tensor(), "output " + std::to_string(o));
  }
}

// oneDNN's Winograd convolution keeps the whole batch's transformed tiles in
// its scratchpad, and execute_kept keeps the largest scratchpad a thread has
// needed: inception_v3's 147x147 layers at batch 8 asked 102 and 150 MiB.
// Past 64 MiB the layer runs on the direct kernel instead (onednn_nchwc.cpp).
TEST(CpuKernelState, WinogradScratchpadStaysBounded) {
  if (!ONNXSCOPE_CPU_AVX512("avx512f")) GTEST_SKIP() << "oneDNN's Winograd kernels are taken on AVX-512 CPUs only";
  ModelBuilder b(17);
  b.input("x", DataType::Float, {"batch", int64_t{32}, int64_t{147}, int64_t{147}});
  b.initializer(make_float_tensor("w", {64, 32, 3, 3}, floats(64 * 32 * 9, 0.1f, 7)));
  attr_ints(b.node("Conv", {"x", "w"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu");
  b.output("y", DataType::Float, {"batch", int64_t{64}, int64_t{147}, int64_t{147}});
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  const std::shared_ptr<const Model> m(std::move(r.model));
  auto cpu = make_cpu_engine(CpuOptions{.threads = 2})->prepare(m);
  InputSpec spec;
  spec.dims = {{"batch", 8}};
  const NamedValues in = make_inputs(*m, spec);
  KernelLog log;
  RunOptions opts;
  opts.observer = &log;
  opts.capture_original = false;
  cpu::onednn::scratchpad_high_water(true);
  cpu->run(in, opts);
  ASSERT_EQ(log.conv_kernels, std::vector<std::string>{"onednn"});
  EXPECT_EQ(log.blocked, 1);
  const size_t high = cpu::onednn::scratchpad_high_water();
  EXPECT_LE(high, size_t{64} << 20) << "a scratchpad of " << (high >> 20) << " MiB";
}
