// The CUDA runtime's fast paths, each against the plain way it replaces:
// - a fused operator's epilogue (bias, residual and activation after a GEMM
//   or a convolution, cuda/runtime.h Epilogue): on the host runtime the
//   epilogue kernel after the call, its fp16 forms (rounding first, reading
//   a half result) giving what the two passes they replace give; on a GPU,
//   where cuDNN and cuBLASLt apply it inside their calls, every form giving
//   what the host gives, whatever the output memory held before;
// - fp16 half copies of activations: the bits of a conversion;
// - on a GPU, page-locked host memory for large inputs and outputs: the
//   same bytes both ways, run after run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/kernel_device.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/runtime.h"
#include "model_builder.h"
#include "offload/offload_engine.h"
#include "onnxscope/cuda.h"
#include "onnxscope/inputs.h"
#ifdef ONNXSCOPE_TEST_GPU_RUNTIME
#include "cuda/cuda_runtime.h"
#endif

using namespace onnxscope;
using namespace onnxscope::cuda;

namespace {

std::vector<float> random_floats(size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// One GEMM or convolution problem, with its epilogue; run on a runtime
// from host vectors, the output memory filled with `fill` first.
struct Problem {
  std::string name;
  bool conv = false;
  GemmArgs g;
  ConvArgs c;
  std::vector<float> a, b, bias;  // A / x, B / w
  std::vector<float> residual;    // a convolution's, or empty
  int64_t out_offset = 0;         // C placed this many floats past an aligned address
  int64_t out_count = 0;
};

Problem gemm_problem(const std::string& name, int64_t m, int64_t n, int64_t k, int64_t batch, UnaryOp act, bool bias,
                     int64_t out_offset = 0) {
  Problem p;
  p.name = name;
  p.g.m = m;
  p.g.n = n;
  p.g.k = k;
  p.g.lda = m;
  p.g.ldb = k;
  p.g.ldc = m;
  p.g.batch = batch;
  p.g.stride_a = m * k;
  p.g.stride_b = k * n;
  p.g.stride_c = m * n;
  p.a = random_floats(static_cast<size_t>(batch * m * k), 1);
  p.b = random_floats(static_cast<size_t>(batch * k * n), 2);
  if (bias) p.bias = random_floats(static_cast<size_t>(m), 3);
  p.g.epilogue.act = act;
  p.g.epilogue.alpha = 0.1f;
  p.g.epilogue.channels = m;  // over C's rows: the row-major result's last dim
  p.out_offset = out_offset;
  p.out_count = batch * m * n;
  return p;
}

Problem conv_problem(const std::string& name, int64_t kernel, UnaryOp act, bool residual = false) {
  Problem p;
  p.name = name;
  p.conv = true;
  ConvArgs& c = p.c;
  c.n = 2;
  c.c = 8;
  c.k = 16;
  for (int d = 0; d < 2; ++d) {
    c.in[d] = 10;
    c.kernel[d] = kernel;
    c.pad[d] = kernel / 2;
    c.out[d] = 10;
  }
  p.a = random_floats(static_cast<size_t>(2 * 8 * 10 * 10), 4);
  p.b = random_floats(static_cast<size_t>(16 * 8 * kernel * kernel), 5, 0.3f);
  p.bias = random_floats(16, 6);
  c.epilogue.act = act;
  c.epilogue.alpha = 0.1f;
  c.epilogue.inner = 100;
  c.epilogue.channels = 16;
  p.out_count = 2 * 16 * 10 * 10;
  if (residual) p.residual = random_floats(static_cast<size_t>(p.out_count), 9);
  return p;
}

std::vector<Problem> problems() {
  return {conv_problem("conv3x3_bias_relu", 3, UnaryOp::Relu), conv_problem("conv3x3_bias", 3, UnaryOp::Identity),
          conv_problem("conv3x3_bias_residual_relu", 3, UnaryOp::Relu, true),
          conv_problem("conv1x1_bias_residual", 1, UnaryOp::Identity, true),
          conv_problem("conv1x1_bias_leakyrelu", 1, UnaryOp::LeakyRelu),
          gemm_problem("gemm_bias", 64, 48, 32, 1, UnaryOp::Identity, true),
          gemm_problem("gemm_batched_bias", 24, 40, 16, 3, UnaryOp::Identity, true),
          gemm_problem("gemm_unaligned_bias", 33, 17, 9, 1, UnaryOp::Identity, true, 1),
          gemm_problem("gemm_bias_gelu", 32, 32, 32, 1, UnaryOp::Gelu, true),
          gemm_problem("gemm_relu", 16, 8, 8, 1, UnaryOp::Relu, false)};
}

// Runs p on rt, the output filled with `fill` before; returns the output.
std::vector<float> run(Runtime& rt, const Problem& p, MathMode mode, float fill) {
  auto upload = [&](const std::vector<float>& v) {
    DeviceMemory m = rt.allocate_unplanned(v.size() * 4 + 4);
    if (!v.empty()) rt.copy_in(m.get(), v.data(), v.size() * 4);
    return m;
  };
  DeviceMemory a = upload(p.a), b = upload(p.b), bias = upload(p.bias), residual = upload(p.residual);
  std::vector<float> filled(static_cast<size_t>(p.out_count + p.out_offset), fill);
  DeviceMemory out = upload(filled);
  float* y = static_cast<float*>(out.get()) + p.out_offset;
  const float* bias_ptr = p.bias.empty() ? nullptr : static_cast<const float*>(bias.get());
  if (p.conv) {
    ConvArgs c = p.c;
    c.x = static_cast<const float*>(a.get());
    c.w = static_cast<const float*>(b.get());
    c.y = y;
    c.epilogue.bias = bias_ptr;
    c.epilogue.residual = p.residual.empty() ? nullptr : static_cast<const float*>(residual.get());
    rt.conv(c, mode);
  } else {
    GemmArgs g = p.g;
    g.a = static_cast<const float*>(a.get());
    g.b = static_cast<const float*>(b.get());
    g.c = y;
    g.epilogue.bias = bias_ptr;
    rt.gemm(g, mode);
  }
  std::vector<float> got(static_cast<size_t>(p.out_count));
  rt.copy_out(got.data(), y, got.size() * 4);
  return got;
}

}  // namespace

// On the host the epilogue is the kernel after the call: the same as the
// call without it followed by bias and activation, element by element.
TEST(CudaEpilogue, HostAppliesItAfterTheCall) {
  auto rt = make_host_runtime(1);
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.name);
    Problem plain = p;
    plain.g.epilogue = {};
    plain.c.epilogue = {};
    plain.bias.clear();
    plain.residual.clear();
    const std::vector<float> base = run(*rt, plain, MathMode::Fp32, 0.f);
    const std::vector<float> got = run(*rt, p, MathMode::Fp32, NAN);
    const Epilogue& e = p.conv ? p.c.epilogue : p.g.epilogue;
    for (size_t i = 0; i < got.size(); ++i) {
      float v = base[i];
      if (!p.bias.empty()) v += p.bias[(static_cast<int64_t>(i) / e.inner) % e.channels];
      if (!p.residual.empty()) v += p.residual[i];
      ASSERT_EQ(got[i], unary_math(e.act, v, e.alpha, e.beta, 0.f)) << i;
    }
  }
  EXPECT_EQ(rt->library_epilogues(), 0u);
}

// A GEMM's epilogue is defined over its result in memory order: C must be packed.
TEST(CudaEpilogue, NeedsAPackedResult) {
  auto rt = make_host_runtime(1);
  Problem p = gemm_problem("strided", 4, 3, 2, 1, UnaryOp::Relu, false);
  p.g.ldc = 5;
  std::vector<float> a(8, 1.f), b(6, 1.f), c(15, 0.f);
  p.g.a = a.data();
  p.g.b = b.data();
  p.g.c = c.data();
  EXPECT_THROW(rt->gemm(p.g, MathMode::Fp32), std::logic_error);
  p.g.ldc = 4;
  EXPECT_NO_THROW(rt->gemm(p.g, MathMode::Fp32));
}

// The fp16 forms the GPU runtime uses in one pass: rounding the float
// result to half first (an fp16 GEMM), or reading a half result (an fp16
// convolution), give the bits of a conversion followed by the epilogue.
TEST(CudaEpilogue, HalfFormsGiveTheTwoPassesBits) {
  auto rt = make_host_runtime(1);
  const std::vector<float> v = random_floats(96, 7, 3.f), bias = random_floats(6, 8);
  for (int source : {1, 2}) {
    SCOPED_TRACE(source);
    std::vector<uint16_t> half(v.size());
    for (size_t i = 0; i < v.size(); ++i) half[i] = float_to_half(v[i]);
    std::vector<float> y = source == 1 ? v : std::vector<float>(v.size(), NAN);
    EpilogueKernel k;
    k.act = UnaryOp::Gelu;
    k.bias = bias.data();
    k.inner = 4;
    k.channels = 6;
    k.source = source;
    k.half = half.data();
    k.y = y.data();
    launch(*rt, k, static_cast<int64_t>(y.size()));
    for (size_t i = 0; i < v.size(); ++i) {
      const float r = half_to_float(half[i]) + bias[(i / 4) % 6];
      ASSERT_EQ(y[i], unary_math(UnaryOp::Gelu, r, 0.f, 0.f, 0.f)) << i;
    }
  }
}

// fp16 mode: a convolution's epilogue writes its output's half copy beside
// the float32 values (the same bits a conversion gives), and the next
// convolution (or GEMM) reads it instead of converting; results are the
// same bits with the copies as without them.
TEST(CudaEpilogue, Fp16HalfCopiesGiveTheConversionsBits) {
  // Runtime level: the copy is the result rounded to half, and a
  // convolution reading it gives the bits of one converting its input.
  auto rt = make_host_runtime(1);
  Problem p = conv_problem("conv3x3_bias_relu", 3, UnaryOp::Relu);
  std::vector<uint16_t> copy(static_cast<size_t>(p.out_count));
  Problem first = p;
  DeviceMemory x = rt->allocate_unplanned(p.a.size() * 4), w = rt->allocate_unplanned(p.b.size() * 4),
               bias = rt->allocate_unplanned(64), y = rt->allocate_unplanned(static_cast<size_t>(p.out_count) * 4);
  rt->copy_in(x.get(), p.a.data(), p.a.size() * 4);
  rt->copy_in(w.get(), p.b.data(), p.b.size() * 4);
  rt->copy_in(bias.get(), p.bias.data(), 64);
  ConvArgs c = p.c;
  c.x = static_cast<const float*>(x.get());
  c.w = static_cast<const float*>(w.get());
  c.y = static_cast<float*>(y.get());
  c.epilogue.bias = static_cast<const float*>(bias.get());
  c.epilogue.half_out = copy.data();
  rt->conv(c, MathMode::Fp16);
  std::vector<float> out(static_cast<size_t>(p.out_count));
  rt->copy_out(out.data(), y.get(), out.size() * 4);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(copy[i], float_to_half(out[i])) << i;
  EXPECT_THROW(rt->conv(c, MathMode::Fp32), std::logic_error);  // a half copy is fp16 mode's only

  // The output as the next convolution's input (16 channels, 10 x 10): from
  // the copy and by conversion, the same bits.
  ConvArgs next;
  next.n = 2;
  next.c = 16;
  next.k = 4;
  for (int d = 0; d < 2; ++d) {
    next.in[d] = next.out[d] = 10;
    next.kernel[d] = 3;
    next.pad[d] = 1;
  }
  const std::vector<float> w2 = random_floats(4 * 16 * 9, 11, 0.3f);
  std::vector<float> y_converted(2 * 4 * 100), y_from_copy(y_converted.size());
  next.x = out.data();
  next.w = w2.data();
  next.y = y_converted.data();
  rt->conv(next, MathMode::Fp16);
  std::vector<float> poisoned(out.size(), NAN);  // the float values unread when the copy is there
  next.x = poisoned.data();
  next.x_half = copy.data();
  next.y = y_from_copy.data();
  rt->conv(next, MathMode::Fp16);
  for (size_t i = 0; i < y_converted.size(); ++i) ASSERT_EQ(y_from_copy[i], y_converted[i]) << i;

  // Engine level (cuda-sim's operators): Conv + Relu -> Conv -> Conv + Add;
  // in fp16 the second and third read the copies; the outputs are the bits
  // of a run that converts.
  onnxscope::test::ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{8}});
  b.input("r", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
  std::mt19937 gen(3);
  auto weights = [&](const char* name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    b.initializer(onnxscope::test::make_float_tensor(name, dims, random_floats(static_cast<size_t>(n), gen(), 0.4f)));
  };
  weights("w1", {4, 3, 3, 3});
  weights("b1", {4});
  weights("w2", {4, 4, 3, 3});
  weights("w3", {4, 4, 1, 1});
  for (auto* n : {&b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), &b.node("Conv", {"a1", "w2"}, {"c2"}, "conv2")})
    onnxscope::test::attr_ints(*n, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"a1"}, "relu1");
  b.node("Conv", {"c2", "w3"}, {"c3"}, "conv3");
  b.node("Add", {"c3", "r"}, {"y"}, "add");
  b.output("y", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{8}, int64_t{8}});
  auto model = onnxscope::test::load_model(b);
  InputSpec spec;
  spec.seed = 8;
  const NamedValues in = make_inputs(*model, spec);
  std::vector<NamedValues> outs;
  for (bool copies : {true, false}) {
    auto sim = make_host_runtime(1);
    sim->set_half_copies(copies);
    auto engine = offload::make_offload_engine("cuda-sim", make_kernel_device(sim, MathMode::Fp16, "host fp16"));
    auto prepared = engine->prepare(model);
    for (int run = 0; run < 3; ++run) outs.push_back(prepared->run(in));  // recorded, captured, replayed
    // conv2 and conv3 in the first two runs (the third replays the second's calls)
    EXPECT_EQ(sim->half_inputs_read(), copies ? 4u : 0u);
  }
  for (size_t k = 1; k < outs.size(); ++k) {
    const Tensor& a = outs[0][0].second.tensor();
    const Tensor& o = outs[k][0].second.tensor();
    ASSERT_EQ(a.element_count(), o.element_count());
    for (uint64_t i = 0; i < a.element_count(); ++i) ASSERT_EQ(a.data<float>()[i], o.data<float>()[i]) << "run " << k << " [" << i << "]";
  }

  // A transformer's normalization feeding two projections (LayerNormalization
  // -> MatMul + bias, MatMul): both read its half copy.
  onnxscope::test::ModelBuilder t(17);
  t.input("h", DataType::Float, {int64_t{2}, int64_t{6}, int64_t{16}});
  for (const char* name : {"gamma", "beta"}) t.initializer(onnxscope::test::make_float_tensor(name, {16}, random_floats(16, gen(), 1.f)));
  t.initializer(onnxscope::test::make_float_tensor("wq", {16, 8}, random_floats(128, gen(), 0.4f)));
  t.initializer(onnxscope::test::make_float_tensor("wk", {16, 8}, random_floats(128, gen(), 0.4f)));
  t.initializer(onnxscope::test::make_float_tensor("bq", {8}, random_floats(8, gen(), 0.4f)));
  t.node("LayerNormalization", {"h", "gamma", "beta"}, {"n"}, "ln");
  t.node("MatMul", {"n", "wq"}, {"q0"}, "q_proj");
  t.node("Add", {"q0", "bq"}, {"q"}, "q_bias");
  t.node("MatMul", {"n", "wk"}, {"k"}, "k_proj");
  t.output("q", DataType::Float, {int64_t{2}, int64_t{6}, int64_t{8}});
  t.output("k", DataType::Float, {int64_t{2}, int64_t{6}, int64_t{8}});
  auto transformer = onnxscope::test::load_model(t);
  const NamedValues tin = make_inputs(*transformer, spec);
  std::vector<NamedValues> touts;
  for (bool copies : {true, false}) {
    auto sim = make_host_runtime(1);
    sim->set_half_copies(copies);
    auto prepared = offload::make_offload_engine("cuda-sim", make_kernel_device(sim, MathMode::Fp16, "host fp16"))->prepare(transformer);
    touts.push_back(prepared->run(tin));
    EXPECT_EQ(sim->half_inputs_read(), copies ? 2u : 0u) << "the two projections";
  }
  for (size_t o = 0; o < 2; ++o) {
    const Tensor& a = touts[0][o].second.tensor();
    const Tensor& b2 = touts[1][o].second.tensor();
    for (uint64_t i = 0; i < a.element_count(); ++i) ASSERT_EQ(a.data<float>()[i], b2.data<float>()[i]) << o << " [" << i << "]";
  }
}

#ifdef ONNXSCOPE_TEST_GPU_RUNTIME
// Every problem on the GPU against the host, the output filled with NaN
// first (cuDNN's fused call is given y as its z, weighted 0), in each
// precision; in fp32 the bias-only GEMMs and the ReLU convolution must have
// gone through the libraries' fused calls.
TEST(CudaEpilogue, GpuFusedEpiloguesIgnoreWhatYHeld) {
  const CudaStatus s = cuda_status();
  if (s.devices.empty()) GTEST_SKIP() << "no GPU to run on: " << (s.reason.empty() ? "no CUDA device" : s.reason);
  auto host = make_host_runtime(1);
  auto gpu = make_gpu_runtime(0);
  for (MathMode mode : {MathMode::Fp32, MathMode::Tf32, MathMode::Fp16}) {
    for (const Problem& p : problems()) {
      SCOPED_TRACE(p.name + " " + math_mode_name(mode));
      const uint64_t before = gpu->library_epilogues();
      const std::vector<float> want = run(*host, p, mode, 0.f);
      const std::vector<float> got = run(*gpu, p, mode, NAN);
      if (mode == MathMode::Fp32 && (p.name == "conv3x3_bias_relu" || p.name == "conv3x3_bias_residual_relu" ||
                                     p.name == "gemm_bias" || p.name == "gemm_batched_bias")) {
        EXPECT_EQ(gpu->library_epilogues(), before + 1) << "not fused in the library's call";
      }
      double sq = 0;
      for (float w : want) sq += double(w) * w;
      const double rms = std::sqrt(sq / static_cast<double>(want.size()));
      const double tol = mode == MathMode::Fp32 ? 1e-5 : mode == MathMode::Tf32 ? 5e-3 : 1e-2;
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], tol * std::max<double>(std::abs(want[i]), rms) + 1e-6) << i;
    }
  }
}

// Large transfers through page-locked memory: a 4 MiB tensor up and back
// down, three times (registered the first time, reused after), the download
// in a buffer of the pool; then a new tensor after the first is dropped.
TEST(CudaPinned, GpuLargeTransfersKeepTheirBytes) {
  const CudaStatus s = cuda_status();
  if (s.devices.empty()) GTEST_SKIP() << "no GPU to run on: " << (s.reason.empty() ? "no CUDA device" : s.reason);
  auto gpu = make_gpu_runtime(0);
  for (int tensor = 0; tensor < 2; ++tensor) {
    Tensor t = Tensor::zeros(DataType::Float, {1024, 1024});
    const std::vector<float> v = random_floats(1024 * 1024, 20 + static_cast<unsigned>(tensor));
    std::memcpy(t.mutable_raw(), v.data(), v.size() * 4);
    DeviceMemory d = gpu->allocate_unplanned(t.byte_size());
    for (int run = 0; run < 3; ++run) {
      SCOPED_TRACE("tensor " + std::to_string(tensor) + ", run " + std::to_string(run));
      gpu->copy_in_tensor(d.get(), t);
      std::shared_ptr<Buffer> back = gpu->host_buffer(t.byte_size());
      ASSERT_NE(back, nullptr) << "no page-locked buffer for 4 MiB";
      ASSERT_EQ(back->size(), t.byte_size());
      std::memset(back->mutable_data(), 0xff, back->size());
      gpu->copy_out(back->mutable_data(), d.get(), t.byte_size());
      ASSERT_EQ(std::memcmp(back->data(), t.raw(), t.byte_size()), 0);
    }
  }
  EXPECT_EQ(gpu->host_buffer(1000), nullptr) << "small transfers go as they are";
}
#endif
