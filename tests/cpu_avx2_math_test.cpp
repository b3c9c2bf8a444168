// The AVX2 forms of the CPU kernels' math, called directly: on a CPU with
// AVX-512 the kernels that use them never run (their dispatch takes the
// AVX-512 ones), so without this test a machine of that kind would not
// check them. exp, sigmoid, tanh and erf (math/vector_math_avx2.h) against
// double precision over every binade of float32 and densely where they are
// used most; Cast's int64 -> float32 (tensor/cast_i64_avx2.h) bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/tensor/cast_i64_avx2.h"
#include "float_range.h"

namespace {

using namespace onnxscope::cpu;

bool avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// The inputs of CpuOpsThreads.UnaryOverTheWholeFloatRange: both signs of
// every binade, the edges where a formula changes, and [-10, 10] densely.
std::vector<float> inputs() {
  std::vector<float> v = onnxscope::test::every_binade_both_signs();
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.72f, 88.73f, 89.0f, -86.0f, -86.01f, -87.33f, -87.34f,
                  -87.4f, -103.9f, -104.1f, 0.499999f, 0.5f, 9.0f, 9.01f, -9.01f})
    v.push_back(f);
  for (int i = -40000; i <= 40000; ++i) v.push_back(static_cast<float>(i) * 2.5e-4f);
  while (v.size() % 8) v.push_back(1.0f);
  return v;
}

enum class Fn { Exp, ExpSubnormal, Sigmoid, Tanh, Erf, ExpNonPositive, ExpSubnormalNonPositive };

// `fn` on x, 8 lanes at a time (the NonPositive forms on -|x|).
__attribute__((target("avx2,fma"))) std::vector<float> apply(Fn fn, const std::vector<float>& x) {
  std::vector<float> y(x.size());
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (size_t i = 0; i < x.size(); i += 8) {
    const __m256 v = _mm256_loadu_ps(x.data() + i);
    __m256 r;
    switch (fn) {
      case Fn::Exp: r = avx2::exp(v); break;
      case Fn::ExpSubnormal: r = avx2::exp_subnormal(v); break;
      case Fn::Sigmoid: r = avx2::sigmoid(v); break;
      case Fn::Tanh: r = avx2::tanh(v); break;
      case Fn::Erf: r = avx2::erf(v); break;
      case Fn::ExpNonPositive: r = avx2::exp<true>(_mm256_or_ps(v, sign)); break;
      case Fn::ExpSubnormalNonPositive: r = avx2::exp_subnormal<true>(_mm256_or_ps(v, sign)); break;
    }
    _mm256_storeu_ps(y.data() + i, r);
  }
  return y;
}

// Against `want` in double: NaN for NaN, the same infinity where the float
// result overflows, otherwise within 2e-6 relative (about 16 ulp) plus `atol`.
void check(const char* name, Fn fn, const std::function<double(double)>& want, double atol) {
  const std::vector<float> x = inputs();
  const std::vector<float> y = apply(fn, x);
  int bad = 0;
  for (size_t i = 0; i < x.size() && bad < 5; ++i) {
    const double w = want(static_cast<double>(x[i]));
    const float wf = static_cast<float>(w);
    bool ok;
    if (std::isnan(w)) ok = std::isnan(y[i]);
    else if (std::isinf(wf)) ok = y[i] == wf;
    else ok = std::isfinite(y[i]) && std::fabs(y[i] - w) <= atol + 2e-6 * std::fabs(w);
    if (!ok) {
      ++bad;
      ADD_FAILURE() << name << "(" << x[i] << ") = " << y[i] << ", want " << w;
    }
  }
}

TEST(CpuAvx2Math, ExpSigmoidTanhErfOverTheWholeFloatRange) {
  if (!avx2_fma()) GTEST_SKIP() << "no AVX2 and FMA";
  const auto exp_d = [](double v) { return std::exp(v); };
  // Results below FLT_MIN come out 0 (exp) or as the subnormal (exp_subnormal).
  check("exp", Fn::Exp, exp_d, 1.2e-38);
  check("exp_subnormal", Fn::ExpSubnormal, exp_d, 1e-44);
  check("sigmoid", Fn::Sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, 1.2e-38);
  check("tanh", Fn::Tanh, [](double v) { return std::tanh(v); }, 0);
  check("erf", Fn::Erf, [](double v) { return std::erf(v); }, 0);
}

// The callers that know x <= 0 (softmax's x - max) take the shorter exp.
TEST(CpuAvx2Math, ExpOfNonPositiveArguments) {
  if (!avx2_fma()) GTEST_SKIP() << "no AVX2 and FMA";
  const auto exp_d = [](double v) { return std::exp(-std::fabs(v)); };
  check("exp<true>", Fn::ExpNonPositive, exp_d, 1.2e-38);
  check("exp_subnormal<true>", Fn::ExpSubnormalNonPositive, exp_d, 1e-44);
}

// Blocks of 8 in int32's range take the vector conversion, any other block
// (and the tail) the scalar one: the same bits as static_cast either way.
TEST(CpuAvx2Math, CastInt64ToFloatInAndOutOfInt32Range) {
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2";
  std::vector<int64_t> s;
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{INT32_MAX}, int64_t{INT32_MIN},
                    int64_t{INT32_MAX} + 1, int64_t{INT32_MIN} - 1, int64_t{16777217}, int64_t{-16777217},
                    int64_t{(1LL << 40) + 3}, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()})
    s.push_back(v);
  uint64_t r = 12345;
  for (int i = 0; i < 4099; ++i) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t v = static_cast<int64_t>(r >> 16);
    s.push_back(i % 3 == 0 ? v : static_cast<int32_t>(v));  // mostly in range, some blocks not
  }
  std::vector<float> d(s.size());
  avx2::i64_to_f32(s.data(), d.data(), static_cast<int64_t>(s.size()));
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(d[i], static_cast<float>(s[i])) << "at " << i << ": " << s[i];
}

}  // namespace
