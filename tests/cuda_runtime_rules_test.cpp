// The runtime refuses, on cuda-sim as on a GPU, the GEMM and convolution
// arguments cuBLAS and cuDNN refuse: an operator that would pass here and
// fail on a GPU shows in CI instead. Also the fp16 weight cache.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "cuda/half_cache.h"
#include "cuda/kernels/portable.h"
#include "cuda/runtime.h"

using namespace onnxscope;
using namespace onnxscope::cuda;

namespace {

// The message of what `f` throws ("" when it throws nothing).
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// C (2 x 3) = A (2 x 4) B (4 x 3), column-major, every operand packed.
GemmArgs packed_gemm(const float* a, const float* b, float* c) {
  GemmArgs g;
  g.m = 2;
  g.n = 3;
  g.k = 4;
  g.a = a;
  g.lda = 2;
  g.b = b;
  g.ldb = 4;
  g.c = c;
  g.ldc = 2;
  return g;
}

}  // namespace

TEST(CudaRuntimeRules, GemmArgumentsCublasRefusesAreRefused) {
  auto rt = make_host_runtime(1);
  std::vector<float> a(8, 1.f), b(12, 2.f), c(6, -1.f);
  rt->gemm(packed_gemm(a.data(), b.data(), c.data()), MathMode::Fp32);
  EXPECT_EQ(c, std::vector<float>(6, 8.f));

  GemmArgs g = packed_gemm(a.data(), b.data(), c.data());
  g.lda = 1;  // A's column holds m = 2 rows
  EXPECT_EQ(refusal([&] { rt->gemm(g, MathMode::Fp32); }), "cuBLAS would refuse this call: lda 1 is less than max(1, 2)");
  g = packed_gemm(a.data(), b.data(), c.data());
  g.trans_b = true;  // B stored n x k: ldb at least n = 3
  g.ldb = 2;
  EXPECT_EQ(refusal([&] { rt->gemm(g, MathMode::Fp32); }), "cuBLAS would refuse this call: ldb 2 is less than max(1, 3)");
  g = packed_gemm(a.data(), b.data(), c.data());
  g.k = 0;  // a sum over nothing still needs leading dims of 1
  g.ldb = 0;
  EXPECT_EQ(refusal([&] { rt->gemm(g, MathMode::Fp32); }), "cuBLAS would refuse this call: ldb 0 is less than max(1, 0)");
  g = packed_gemm(a.data(), b.data(), c.data());
  g.n = int64_t{INT_MAX} + 1;
  EXPECT_EQ(refusal([&] { rt->gemm(g, MathMode::Fp32); }), "cuBLAS would refuse this call: n 2147483648 is outside [0, INT_MAX]");

  // An empty result is nothing to do, whatever the pointers.
  GemmArgs empty;
  empty.m = 0;
  empty.n = 5;
  empty.k = 3;
  empty.lda = empty.ldb = empty.ldc = 5;
  EXPECT_EQ(refusal([&] { rt->gemm(empty, MathMode::Fp32); }), "");
}

TEST(CudaRuntimeRules, ConvolutionArgumentsCudnnRefusesAreRefused) {
  auto rt = make_host_runtime(1);
  // x [1, 1, 4, 4] * w [1, 1, 3, 3] -> y [1, 1, 2, 2]
  std::vector<float> x(16, 1.f), w(9, 1.f), y(4, 0.f);
  ConvArgs c;
  c.n = c.c = c.k = 1;
  for (int d = 0; d < 2; ++d) {
    c.in[d] = 4;
    c.kernel[d] = 3;
    c.out[d] = 2;
  }
  c.x = x.data();
  c.w = w.data();
  c.y = y.data();
  rt->conv(c, MathMode::Fp32);
  EXPECT_EQ(y, std::vector<float>(4, 9.f));

  ConvArgs bad = c;
  bad.c = 0;
  EXPECT_EQ(refusal([&] { rt->conv(bad, MathMode::Fp32); }), "cuDNN would refuse this call: channels is 0");
  bad = c;
  bad.out[1] = 3;
  EXPECT_EQ(refusal([&] { rt->conv(bad, MathMode::Fp32); }),
            "cuDNN would refuse this call: convolution: spatial dim 1 of 4 with pad 0, window 3 and stride 1 gives 2, not 3");
  bad = c;
  bad.pad[0] = -1;
  EXPECT_EQ(refusal([&] { rt->conv(bad, MathMode::Fp32); }), "cuDNN would refuse this call: pad -1 is outside [0, INT_MAX]");
  bad = c;
  bad.c = bad.k = 4;
  bad.groups = 3;
  EXPECT_EQ(refusal([&] { rt->conv(bad, MathMode::Fp32); }), "cuDNN would refuse this call: 4 channels and 4 filters in 3 groups");
  // 2^16 images of 2^15 elements: refused before anything is read.
  bad = c;
  bad.n = int64_t{1} << 16;
  bad.c = bad.k = 2;
  for (int d = 0; d < 2; ++d) {
    bad.in[d] = 128;
    bad.kernel[d] = 1;
    bad.out[d] = 128;
  }
  EXPECT_EQ(refusal([&] { rt->conv(bad, MathMode::Fp32); }), "cuDNN would refuse this call: a tensor of 2^31 elements or more");
  bad.rank = 4;
  EXPECT_EQ(refusal([&] { rt->conv(bad, MathMode::Fp32); }), "cuDNN would refuse this call: 4 spatial dims (it takes 1 to 3 here)");
}

// fp16 mode's weights: a float32 constant is converted once and its
// float16 copy reused; anything else is left to the per-call conversion.
TEST(CudaHalfCache, AConstantIsConvertedOnceAndReused) {
  auto rt = make_host_runtime(1);
  HalfCache cache(rt);
  const std::vector<float> w = {1.f, 1.f / 3, -65504.f, 1e-8f, 70000.f};
  offload::DeviceTensor t;
  t.dtype = DataType::Float;
  t.shape = {5};
  t.storage = rt->allocate(w.size() * 4);
  t.data = t.storage.get();
  rt->copy_in(t.data, w.data(), w.size() * 4);
  EXPECT_EQ(cache.get(t), nullptr) << "not a constant";
  t.constant = true;
  const void* h = cache.get(t);
  ASSERT_NE(h, nullptr);
  std::vector<uint16_t> bits(5);
  rt->copy_out(bits.data(), h, 10);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_EQ(bits[i], float_to_half(w[i])) << i;
  EXPECT_EQ(cache.get(t), h) << "converted again";
  EXPECT_EQ(cache.size(), 1u);
  offload::DeviceTensor view = t;  // the same address read as fewer elements is another entry
  view.shape = {2};
  EXPECT_NE(cache.get(view), h);
  EXPECT_EQ(cache.size(), 2u);
  offload::DeviceTensor ints = t;
  ints.dtype = DataType::Int32;
  EXPECT_EQ(cache.get(ints), nullptr);
  // Inside a capture: a cached copy is read, a new one is not made.
  offload::DeviceTensor other = t;
  other.storage = rt->allocate(20);
  other.data = other.storage.get();
  rt->begin_capture();
  EXPECT_EQ(cache.get(t), h);
  EXPECT_EQ(cache.get(other), nullptr);
  rt->abort_capture();
}
