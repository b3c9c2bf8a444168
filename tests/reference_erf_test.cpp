// The reference's erf for float32 values (reference/ops/math/exp_f64.h,
// erf_by_exp; the Erf operator's float32 path): over an array (eight or four
// lanes at a time, each vector form the CPU has) it gives the one-lane form's bits on every value, stays within
// a few ulp of libm's erf in double below |x| = 4, and rounds to the float
// libm's double erf rounds to.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "double_bits.h"
#include "vector_isas.h"
#include "reference/ops/math/exp_f64.h"

using namespace onnxscope;

namespace {

uint64_t bits(double v) { return test::double_bits(v); }

// Float32 values (as doubles): the edges, and random ones over [-5, 5] and
// over magnitudes down to 1e-30.
std::vector<double> float_values() {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 4.0, -4.0, 3.9999998, 0.99999994, 1.0000001, 1e-38, -1e-45, 38.0,
                           std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()};
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> wide(-5, 5), exponent(-100, 2);
  for (int i = 0; i < 100000; ++i) {
    v.push_back(static_cast<float>(wide(rng)));
    v.push_back(static_cast<float>((i % 2 ? -1 : 1) * std::pow(2.0, exponent(rng))));
  }
  return v;
}

}  // namespace

TEST(ReferenceErf, EightLanesGiveOneLanesBits) {
  const std::vector<double> in = float_values();
  for (auto isa : test::vector_isas())
  for (size_t n : {in.size(), size_t{7}, size_t{9}, size_t{1}}) {  // whole blocks of 8 and the tail
    SCOPED_TRACE(test::isa_name(isa));
    test::VectorIsaLimit limit(isa);
    std::vector<double> got(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
    ref::math::erf_by_exp(got.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      const double want = ref::math::erf_by_exp(in[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << "at " << in[i];
        continue;
      }
      ASSERT_EQ(bits(want), bits(got[i])) << "at " << in[i] << ": " << want << " vs " << got[i];
    }
  }
}

TEST(ReferenceErf, RoundsToTheFloatOfLibmsDoubleErf) {
  double worst = 0;
  int64_t other_float = 0;
  for (double x : float_values()) {
    const double got = ref::math::erf_by_exp(x), want = std::erf(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << "at " << x;
    if (std::fabs(x) < 4) worst = std::max(worst, std::fabs(got - want) / std::fabs(std::nextafter(want, 0.0) - want));
    if (static_cast<float>(got) != static_cast<float>(want)) ++other_float;
  }
  EXPECT_LE(worst, 4) << "ulps of libm's erf in double below |x| = 4";
  EXPECT_EQ(other_float, 0) << "float32 results other than libm's double erf rounded";
  std::printf("largest distance below |x| = 4: %g double ulps\n", worst);
}
