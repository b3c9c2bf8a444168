// Weights resident once (CpuOptions::release_repacked_weights): the oneDNN
// kernels reorder initializer weights into their own layout and the model's
// plain copy gives its bytes back; read again, the bytes are restored from the
// reordered copy, exactly, and stay. Checked on the buffer alone and on an
// engine whose convolution, MatMul and transposed Gemm pack their weights,
// with one initializer that a second node reads plain on every run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "core/cpu_features.h"
#include "cpu/kernels/quantization/vnni_gemm.h"
#include "compare_outputs.h"
#include "model_builder.h"
#include "onnxscope/buffer.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;
namespace vnni = onnxscope::cpu::vnni;

namespace {

std::vector<float> floats(size_t n, float scale, int salt) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(std::sin(0.37 * static_cast<double>(i) + salt));
  return v;
}

std::vector<std::byte> pattern(size_t n) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<std::byte>(i * 7 + 3);
  return b;
}

}  // namespace

TEST(ReleasedBytes, ComeBackExactlyOnTheNextReadAndThenStay) {
  for (bool string_storage : {false, true}) {
    SCOPED_TRACE(string_storage ? "string buffer" : "owned buffer");
    const auto want = pattern(1000);
    std::shared_ptr<Buffer> b = string_storage
                                    ? make_string_buffer(std::string(reinterpret_cast<const char*>(want.data()), want.size()))
                                    : make_owned_buffer(want);
    int restores = 0;
    auto restore = [&](std::byte* dst) {
      ++restores;
      std::memcpy(dst, want.data(), want.size());
    };
    ASSERT_TRUE(b->release_bytes(restore));
    EXPECT_TRUE(b->bytes_released());
    EXPECT_EQ(b->size(), want.size());  // the size is the tensor's, released or not
    EXPECT_FALSE(b->release_bytes(restore)) << "released twice";
    ASSERT_EQ(std::memcmp(b->data(), want.data(), want.size()), 0);
    EXPECT_EQ(restores, 1);
    EXPECT_FALSE(b->bytes_released());
    // Read back once: someone reads it, so it is not given back again.
    EXPECT_FALSE(b->release_bytes(restore));
    EXPECT_EQ(std::memcmp(b->data(), want.data(), want.size()), 0);
    EXPECT_EQ(restores, 1);
  }
}

TEST(ReleasedBytes, ViewsAndEmptyBuffersAreNotGivenBack) {
  auto parent = make_owned_buffer(pattern(64));
  auto view = make_slice_buffer(parent, 8, 16);
  EXPECT_FALSE(view->release_bytes([](std::byte*) {}));
  EXPECT_FALSE(parent->bytes_released());
  EXPECT_FALSE(make_owned_buffer(size_t{0})->release_bytes([](std::byte*) {}));
}

namespace {

// x[batch,8,6,6] -> Conv(wc, pad 1) -> Relu -> Flatten -> MatMul(wm) -> h
// y1 = Gemm(h, wg, bg, transB=1); y2 = MatMul(h, ws); y3 = MatMul(h, ws * s)
// (ws is packed by one MatMul and read plain by the Mul on every run).
std::shared_ptr<const Model> model() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {"batch", int64_t{8}, int64_t{6}, int64_t{6}});
  b.input("s", DataType::Float, {int64_t{1}});
  b.initializer(make_float_tensor("wc", {16, 8, 3, 3}, floats(16 * 8 * 9, 0.2f, 1)));
  b.initializer(make_float_tensor("wm", {16 * 36, 64}, floats(16 * 36 * 64, 0.05f, 2)));
  b.initializer(make_float_tensor("wg", {128, 64}, floats(128 * 64, 0.3f, 3)));
  b.initializer(make_float_tensor("bg", {128}, floats(128, 0.1f, 4)));
  b.initializer(make_float_tensor("ws", {64, 64}, floats(64 * 64, 0.25f, 5)));
  auto& conv = b.node("Conv", {"x", "wc"}, {"c"}, "conv");
  attr_ints(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "relu");
  b.node("Flatten", {"r"}, {"f"}, "flatten");
  b.node("MatMul", {"f", "wm"}, {"h"}, "mm");
  auto& gemm = b.node("Gemm", {"h", "wg", "bg"}, {"y1"}, "gemm");
  attr_int(gemm, "transB", 1);
  b.node("MatMul", {"h", "ws"}, {"y2"}, "mm_shared");
  b.node("Mul", {"ws", "s"}, {"ws_scaled"}, "scale");
  b.node("MatMul", {"h", "ws_scaled"}, {"y3"}, "mm_scaled");
  b.output("y1", DataType::Float, {"batch", int64_t{128}});
  b.output("y2", DataType::Float, {"batch", int64_t{64}});
  b.output("y3", DataType::Float, {"batch", int64_t{64}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

NamedValues inputs(const Model& m, int64_t batch) {
  InputSpec spec;
  spec.seed = static_cast<uint64_t>(batch);
  spec.dims = {{"batch", batch}};
  return make_inputs(m, spec);
}

const Buffer& initializer_buffer(const Model& m, const std::string& name) {
  const Initializer* init = m.graph.initializer(name);
  EXPECT_NE(init, nullptr) << name;
  return *init->value.buffer();
}

}  // namespace

TEST(ReleasedWeights, RunsMatchAndTheModelReadsBackItsOwnWeights) {
  auto m = model();
  ASSERT_TRUE(m);
  // The original bytes, copied before any engine runs.
  std::map<std::string, std::vector<std::byte>> original;
  for (const auto& init : m->graph.initializers)
    original[init.name].assign(init.value.raw(), init.value.raw() + init.value.byte_size());

  // oneDNN's packed products (the few-row ones would be the small-product
  // kernel's, cpu-avx512, which cpu_small_matmul_test checks for this).
  auto releasing =
      make_cpu_engine(CpuOptions{.threads = 2, .disabled_kernels = {"cpu-avx512"}, .release_repacked_weights = true})
          ->prepare(m);
  auto keeping_model = model();
  auto keeping = make_cpu_engine(CpuOptions{.threads = 2, .disabled_kernels = {"cpu-avx512"}})->prepare(keeping_model);
  auto ref = make_reference_engine()->prepare(keeping_model);
  const bool matmul_packs_b =
      ONNXSCOPE_CPU_AVX512("avx512f") || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  for (int64_t batch : {int64_t{4}, int64_t{4}, int64_t{6}}) {  // rows enough for packed MatMul / Gemm weights
    SCOPED_TRACE("batch " + std::to_string(batch));
    const NamedValues in = inputs(*m, batch);
    const NamedValues got = releasing->run(in);
    const NamedValues kept = keeping->run(in);
    const NamedValues want = ref->run(in);
    ASSERT_EQ(got.size(), 3u);
    expect_float_outputs(kept, got, 0);    // bit for bit the engine that keeps its weights
    expect_float_outputs(want, got, 1e-4);  // and the reference's values
    // Packed and read by no one else: given back. Read plain on every run by
    // the Mul: restored once, then kept. Never packed (a bias): kept.
    EXPECT_TRUE(initializer_buffer(*m, "wc").bytes_released());
    // The MatMul's B is packed where oneDNN's matmul is its brgemm (AVX-512)
    // and by the AVX2 product (math/float_gemm_avx2.cpp) where the CPU has
    // AVX2 only; on neither (oneDNN 2.6's `gemm:jit`, weights `ab`) it is
    // read in place: no second copy, nothing to give back.
    EXPECT_EQ(initializer_buffer(*m, "wm").bytes_released(), matmul_packs_b);
    EXPECT_TRUE(initializer_buffer(*m, "wg").bytes_released());
    EXPECT_FALSE(initializer_buffer(*m, "ws").bytes_released());
    EXPECT_FALSE(initializer_buffer(*m, "bg").bytes_released());
    // The engine that keeps its weights gives nothing back.
    for (const auto& init : keeping_model->graph.initializers) EXPECT_FALSE(init.value.buffer()->bytes_released()) << init.name;
  }
  // Read back through the model, every weight is what the file held.
  for (const auto& init : m->graph.initializers) {
    ASSERT_EQ(init.value.byte_size(), original[init.name].size()) << init.name;
    EXPECT_EQ(std::memcmp(init.value.raw(), original[init.name].data(), init.value.byte_size()), 0) << init.name;
    EXPECT_FALSE(init.value.buffer()->bytes_released()) << init.name;
  }
  // Runs after the read: same outputs (the packed copies were kept), also at
  // batch 2, where MatMul and Gemm read the plain weights (sgemm).
  for (int64_t batch : {int64_t{5}, int64_t{2}, int64_t{5}}) {
    SCOPED_TRACE("after the read, batch " + std::to_string(batch));
    const NamedValues in = inputs(*m, batch);
    expect_float_outputs(keeping->run(in), releasing->run(in), 0);
  }
}

namespace {

// x[1,C,H,W] -> Conv(w, k x k, pads p) -> Relu -> Conv(w2, 1x1): the blocked
// layout runs both as NchwcConv; without it, each is the plain Conv kernel.
std::shared_ptr<const Model> tiny_map_model(int64_t C, int64_t H, int64_t W, int64_t k, int64_t pad, int64_t stride,
                                            int64_t dilation, bool depthwise) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, C, H, W});
  b.initializer(make_float_tensor("w", {C, depthwise ? 1 : C, k, k}, floats(static_cast<size_t>(C * (depthwise ? 1 : C) * k * k), 0.3f, 7)));
  b.initializer(make_float_tensor("w2", {C, C, 1, 1}, floats(static_cast<size_t>(C * C), 0.3f, 8)));
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv");
  attr_ints(conv, "pads", {pad, pad, pad, pad});
  attr_ints(conv, "strides", {stride, stride});
  attr_ints(conv, "dilations", {dilation, dilation});
  if (depthwise) attr_int(conv, "group", C);
  b.node("Relu", {"c"}, {"r"}, "relu");
  b.node("Conv", {"r", "w2"}, {"y"}, "conv2");
  b.output_untyped("y");
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

struct KernelsRan : Observer {
  std::vector<std::string> conv_kernels;
  void on_node(const NodeEvent& e) override {
    if (e.node->op_type == "Conv" || e.node->op_type == "FusedConv" || e.node->op_type == "NchwcConv") conv_kernels.push_back(std::string(e.kernel));
  }
};

}  // namespace

// A convolution over a map so small that some kernel taps only ever read the
// zero padding (a 3x3 window with padding 1 over 1x1 or 2x2): the oneDNN
// kernels crop those taps off (crop_window) and pack the kept ones from a
// view of the plain weights; the taps cropped off are kept beside the packed
// copy and the plain bytes are given back too, so the weights stay resident
// once, and read again they are restored from both, exactly. Against the
// reference, on the blocked layout and the plain one, for strides,
// dilations, rectangular maps and depthwise kernels; a map every tap reads
// is the control.
TEST(ReleasedWeights, ConvolutionTapsThatOnlyReadPaddingAreCroppedAndTheRestKept) {
  struct Case {
    int64_t C, H, W, k, pad, stride, dilation;
    bool depthwise, cropped;
  };
  const Case cases[] = {
      {32, 1, 1, 3, 1, 1, 1, false, true},  {32, 2, 2, 3, 1, 1, 1, false, false},  // 2x2: every tap reads some pixel
      {32, 2, 2, 3, 1, 2, 1, false, true},  // ... but at stride 2 the first row and column of taps does not
      {32, 1, 3, 3, 1, 1, 1, false, true},  {24, 1, 1, 5, 2, 1, 1, false, true},
      {32, 2, 2, 5, 2, 1, 1, false, true},  {32, 1, 1, 3, 2, 1, 2, false, true},
      {32, 3, 3, 3, 1, 2, 1, false, false}, {48, 1, 1, 3, 1, 1, 1, true, true},
      {32, 4, 4, 3, 1, 1, 1, false, false},
  };
  for (const Case& c : cases)
    for (bool blocked : {true, false}) {
      SCOPED_TRACE("C " + std::to_string(c.C) + " map " + std::to_string(c.H) + "x" + std::to_string(c.W) + " k " +
                   std::to_string(c.k) + " pad " + std::to_string(c.pad) + " stride " + std::to_string(c.stride) +
                   " dilation " + std::to_string(c.dilation) + (c.depthwise ? " depthwise" : "") +
                   (blocked ? " blocked" : " plain"));
      auto m = tiny_map_model(c.C, c.H, c.W, c.k, c.pad, c.stride, c.dilation, c.depthwise);
      ASSERT_TRUE(m);
      const std::vector<std::byte> original(m->graph.initializer("w")->value.raw(),
                                            m->graph.initializer("w")->value.raw() + m->graph.initializer("w")->value.byte_size());
      // (The Winograd kernel, cpu-winograd, would take the 3x3 ones on 4x4
      // maps on CPUs without AVX-512, keeping its own transformed copy and
      // the plain weights: left out, this is about oneDNN's cropping.)
      CpuOptions o{.threads = 2, .disabled_kernels = {"cpu-winograd"}, .release_repacked_weights = true};
      if (!blocked) o.disabled_passes = {"nchwc-layout"};
      auto cpu = make_cpu_engine(o)->prepare(m);
      InputSpec spec;
      spec.seed = 5;
      const NamedValues in = make_inputs(*m, spec);
      const NamedValues want = make_reference_engine()->prepare(m)->run(in);  // (reads the weights: before they are released)
      KernelsRan ran;
      RunOptions ro;
      ro.observer = &ran;
      ro.capture_original = false;
      expect_float_outputs(want, cpu->run(in, ro), 1e-5);
      ASSERT_EQ(ran.conv_kernels.size(), 2u);
      EXPECT_EQ(ran.conv_kernels[0], "onednn");
      // The observed run keeps every buffer: the next run, unobserved, releases.
      expect_float_outputs(want, cpu->run(in), 1e-5);
      // Packed in a blocked layout, whole or cropped: given back. (A 3x3
      // stride-1 convolution on the blocked layout may take oneDNN's Winograd
      // kernel, whose transformed weights cannot restore the plain ones: kept.
      // No cropped kernel here is 3x3.)
      const bool winograd_eligible = blocked && !c.depthwise && c.k == 3 && c.stride == 1 && c.dilation == 1;
      if (c.cropped || !winograd_eligible) {
        EXPECT_TRUE(m->graph.initializer("w")->value.buffer()->bytes_released());
      }
      const Tensor& w = m->graph.initializer("w")->value;
      EXPECT_EQ(std::memcmp(w.raw(), original.data(), original.size()), 0);
      EXPECT_FALSE(w.buffer()->bytes_released());
      expect_float_outputs(want, cpu->run(in), 1e-5);  // the packed copy still serves
    }
  // A 3-D convolution over a map one frame deep (a video network's last
  // stage): the depth taps before and after the frame are cropped off.
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{1}, int64_t{3}, int64_t{3}});
  b.initializer(make_float_tensor("w", {16, 16, 3, 3, 3}, floats(16 * 16 * 27, 0.3f, 9)));
  attr_ints(b.node("Conv", {"x", "w"}, {"y"}, "conv3d"), "pads", {1, 1, 1, 1, 1, 1});
  b.output_untyped("y");
  auto r = b.load();
  ASSERT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m(std::move(r.model));
  const Tensor& w = m->graph.initializer("w")->value;
  const std::vector<std::byte> original(w.raw(), w.raw() + w.byte_size());
  auto cpu = make_cpu_engine(CpuOptions{.threads = 2, .release_repacked_weights = true})->prepare(m);
  InputSpec spec;
  spec.seed = 6;
  const NamedValues in = make_inputs(*m, spec);
  const NamedValues want = make_reference_engine()->prepare(m)->run(in);
  expect_float_outputs(want, cpu->run(in), 1e-5);
  EXPECT_TRUE(w.buffer()->bytes_released());
  EXPECT_EQ(std::memcmp(w.raw(), original.data(), original.size()), 0);
  expect_float_outputs(want, cpu->run(in), 1e-5);
}

namespace {

// A model from `make` (an 8-bit product of input "a" [rows, K] and weights
// "b") on the CPU engine that gives repacked weights back: every run's
// output the reference's bit for bit, "b"'s bytes given back after the
// first runs and restored exactly when read.
void gives_back_and_restores(const std::function<std::shared_ptr<const Model>()>& make) {
  auto m = make();
  const Tensor& bw = m->graph.initializer("b")->value;
  const std::vector<std::byte> original(bw.raw(), bw.raw() + bw.byte_size());
  auto releasing = make_cpu_engine(CpuOptions{.threads = 2, .release_repacked_weights = true})->prepare(m);
  auto ref = make_reference_engine()->prepare(make());
  auto check = [&](int64_t rows) {
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(rows);
    spec.dims = {{"rows", rows}};
    const NamedValues in = make_inputs(*m, spec);
    const Tensor got = releasing->run(in).at(0).second.tensor();
    const Tensor want = ref->run(in).at(0).second.tensor();
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.byte_size()), 0);
  };
  check(7);
  check(13);
  EXPECT_TRUE(initializer_buffer(*m, "b").bytes_released());
  ASSERT_EQ(bw.byte_size(), original.size());
  EXPECT_EQ(std::memcmp(bw.raw(), original.data(), original.size()), 0);  // restored exactly
  EXPECT_FALSE(initializer_buffer(*m, "b").bytes_released());
  check(9);
}

}  // namespace

// The VNNI QGemm (kernels/quantization/qgemm_vnni.cpp) packs B minus its zero
// points and gives B's bytes back: restored from the packed copy, exactly,
// for uint8 and int8 B, transposed or not; every run bit for bit the
// reference's, before and after the read.
TEST(ReleasedWeights, TheVnniQGemmGivesItsWeightsBackAndRestoresThem) {
  if (!vnni::available()) GTEST_SKIP() << "neither VNNI nor AVX2: the 8-bit product's QGemm declines";
  for (const DataType bt : {DataType::Uint8, DataType::Int8})
    for (const bool trans : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(bt)) + (trans ? " transB" : ""));
      auto make = [&] {
        ModelBuilder b(17);
        b.opset("com.microsoft", 1);
        b.input("a", DataType::Uint8, {"rows", int64_t{40}});
        std::string w(40 * 24, '\0'), zb(24, '\0');
        for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<char>((bt == DataType::Uint8 ? 28 : -100) + (i * 37) % 200);
        for (size_t i = 0; i < zb.size(); ++i) zb[i] = static_cast<char>((bt == DataType::Uint8 ? 126 : -2) + i % 5);
        b.initializer(make_tensor_raw("b", bt, trans ? std::vector<int64_t>{24, 40} : std::vector<int64_t>{40, 24}, w));
        b.initializer(make_tensor_raw("bz", bt, {24}, zb));
        b.initializer(make_float_tensor("as", {}, {0.02f}));
        b.initializer(make_tensor_raw("az", DataType::Uint8, {}, std::string(1, static_cast<char>(120))));
        b.initializer(make_float_tensor("bs", {24}, floats(24, 0.01f, 7)));
        b.initializer(make_float_tensor("ys", {}, {0.1f}));
        b.initializer(make_tensor_raw("yz", DataType::Uint8, {}, std::string(1, static_cast<char>(128))));
        auto& q = b.node("QGemm", {"a", "as", "az", "b", "bs", "bz", "", "ys", "yz"}, {"y"}, "qgemm", "com.microsoft");
        if (trans) attr_int(q, "transB", 1);
        b.output_untyped("y");
        auto r = b.load();
        EXPECT_TRUE(r.ok()) << dump(r);
        return std::shared_ptr<const Model>(std::move(r.model));
      };
      gives_back_and_restores(make);
    }
}

// The VNNI MatMulInteger (kernels/quantization/matmul_integer_vnni.cpp) gives
// B's bytes back too: packed as they are (one zero point) or minus the zero
// point of each column; restored exactly, for uint8 and int8 B; every run's
// sums the reference's.
TEST(ReleasedWeights, TheVnniMatMulIntegerGivesItsWeightsBackAndRestoresThem) {
  if (!vnni::available()) GTEST_SKIP() << "neither VNNI nor AVX2: the 8-bit product's MatMulInteger declines";
  for (const DataType bt : {DataType::Uint8, DataType::Int8})
    for (const bool per_column : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(bt)) + (per_column ? " zero point per column" : " one zero point"));
      auto make = [&] {
        ModelBuilder b(10);
        b.input("a", DataType::Uint8, {"rows", int64_t{40}});
        std::string w(40 * 24, '\0'), zb(per_column ? 24 : 1, '\0');
        for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<char>((bt == DataType::Uint8 ? 28 : -100) + (i * 37) % 200);
        for (size_t i = 0; i < zb.size(); ++i) zb[i] = static_cast<char>((bt == DataType::Uint8 ? 126 : -2) + i % 5);
        b.initializer(make_tensor_raw("b", bt, {40, 24}, w));
        b.initializer(make_tensor_raw("bz", bt, per_column ? std::vector<int64_t>{24} : std::vector<int64_t>{}, zb));
        b.initializer(make_tensor_raw("az", DataType::Uint8, {}, std::string(1, static_cast<char>(120))));
        b.node("MatMulInteger", {"a", "b", "az", "bz"}, {"y"}, "mm");
        b.output_untyped("y");
        auto r = b.load();
        EXPECT_TRUE(r.ok()) << dump(r);
        return std::shared_ptr<const Model>(std::move(r.model));
      };
      gives_back_and_restores(make);
    }
}

