// The reference's exp and expm1 on values at most 0 (reference/ops/math/exp_f64.h)
// and the recurrent layers' Sigmoid and Tanh made of them (rnn/activations.cpp):
// over an array (eight or four lanes at a time, each vector form the CPU
// has) they give the one-lane form's bits on every value (so a run's result does not depend on the machine), and stay
// within a few ulp of libm's exp, expm1 and tanh in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "double_bits.h"
#include "vector_isas.h"
#include "reference/ops/math/exp_f64.h"
#include "cpu/thread_pool.h"
#include "reference/ops/rnn/common.h"

using namespace onnxscope;

namespace {

uint64_t bits(double v) { return test::double_bits(v); }

// Distance in units in the last place, by the ordered bit patterns.
double ulps(double a, double b) {
  if (a == b) return 0;
  auto key = [](double v) {
    const auto u = static_cast<int64_t>(bits(v));
    return u < 0 ? std::numeric_limits<int64_t>::min() - u : u;
  };
  const __int128 d = static_cast<__int128>(key(a)) - static_cast<__int128>(key(b));  // exact (a double has 53 bits)
  return static_cast<double>(d < 0 ? -d : d);
}

std::vector<double> values() {
  std::mt19937_64 rng(7);
  std::vector<double> v = {0.0, -0.0, 1e-300, -1e-300, 4.9e-324, -4.9e-324, 1e-17, -1e-9, 0.5, -0.5, 0.3465, -0.3466,
                           1.0, -1.0, 19.0, -19.1, 40.0, -41.0, 709.0, -745.5, -746.5, 1e308, -1e308,
                           std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()};
  std::uniform_real_distribution<double> small(-3, 3), wide(-800, 800), exponent(-60, 3), deep(-746, -700);
  for (int i = 0; i < 20000; ++i) {
    v.push_back(small(rng));
    v.push_back(deep(rng));  // subnormal exponentials, and 2^n below the normal range
    v.push_back(wide(rng));
    v.push_back((i % 2 ? -1 : 1) * std::pow(2.0, exponent(rng)));
  }
  return v;
}

}  // namespace

TEST(ReferenceRnnActivations, EightLanesGiveOneLanesBits) {
  const std::vector<double> in = values();
  for (auto isa : test::vector_isas())
  for (auto kind : {rnn::Activation::Sigmoid, rnn::Activation::Tanh}) {
    SCOPED_TRACE(test::isa_name(isa));
    test::VectorIsaLimit limit(isa);
    ref::Activation f{rnn::Activation{kind, 0, 0}};
    for (size_t n : {in.size(), size_t{7}, size_t{9}, size_t{1}}) {  // whole blocks of 8 and the tail
      std::vector<double> got(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
      f.apply(got.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i) {
        const double want = f(in[i]);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got[i])) << "kind " << kind << " at " << in[i];
          continue;
        }
        ASSERT_EQ(bits(want), bits(got[i])) << "kind " << kind << " at " << in[i] << ": " << want << " vs " << got[i];
      }
    }
  }
}

TEST(ReferenceRnnActivations, ExpOverAnArrayGivesOneLanesBits) {
  std::vector<double> y;
  for (double x : values()) y.push_back(std::isnan(x) ? x : -std::fabs(x));
  for (auto isa : test::vector_isas()) {
  SCOPED_TRACE(test::isa_name(isa));
  test::VectorIsaLimit limit(isa);
  std::vector<double> e = y, em = y;
  ref::math::exp_nonpositive(e.data(), static_cast<int64_t>(e.size()));
  ref::math::expm1_nonpositive(em.data(), static_cast<int64_t>(em.size()));
  for (size_t i = 0; i < y.size(); ++i) {
    if (std::isnan(y[i])) {
      EXPECT_TRUE(std::isnan(e[i]) && std::isnan(em[i]));
      continue;
    }
    ASSERT_EQ(bits(ref::math::exp_nonpositive(y[i])), bits(e[i])) << "exp at " << y[i];
    ASSERT_EQ(bits(ref::math::expm1_nonpositive(y[i])), bits(em[i])) << "expm1 at " << y[i];
  }
  }
}

TEST(ReferenceRnnActivations, WithinAFewUlpOfLibm) {
  double worst_exp = 0, worst_expm1 = 0, worst_tanh = 0, worst_sigmoid = 0;
  for (double x : values()) {
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(ref::math::tanh_by_expm1(x)));
      EXPECT_TRUE(std::isnan(ref::math::sigmoid_by_exp(x)));
      continue;
    }
    const double y = -std::fabs(x);
    worst_exp = std::max(worst_exp, ulps(ref::math::exp_nonpositive(y), std::exp(y)));
    worst_expm1 = std::max(worst_expm1, ulps(ref::math::expm1_nonpositive(y), std::expm1(y)));
    worst_tanh = std::max(worst_tanh, ulps(ref::math::tanh_by_expm1(x), std::tanh(x)));
    const long double e = std::exp(-std::fabs(static_cast<long double>(x)));
    const double s = static_cast<double>(x >= 0 ? 1.0L / (1.0L + e) : e / (1.0L + e));
    worst_sigmoid = std::max(worst_sigmoid, ulps(ref::math::sigmoid_by_exp(x), s));
  }
  EXPECT_LE(worst_exp, 2);
  EXPECT_LE(worst_expm1, 2);
  EXPECT_LE(worst_tanh, 3);
  EXPECT_LE(worst_sigmoid, 3);
  std::printf("largest distance in ulp: exp %g, expm1 %g, tanh %g, sigmoid %g\n", worst_exp, worst_expm1, worst_tanh, worst_sigmoid);
}

// The matrix-vector step over R's panels: each form this machine has and the
// plain form give the same bits, against the plain loop in double, for
// segments that are not whole panels and any number of vectors, with float
// weights (kept as float) and double weights (kept as double).
class MatrixVectorStep : public ::testing::TestWithParam<DataType> {};

namespace {

void check_matvec(DataType type, int64_t seg, int64_t cols) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> nd(0.0, 1.0);
  const int64_t dirs = 2, rows = 3 * seg;
  std::vector<double> r(size_t(dirs * rows * cols));
  Tensor R = Tensor::zeros(type, {dirs, rows, cols});
  for (size_t i = 0; i < r.size(); ++i) {
    if (type == DataType::Float) {
      r[i] = static_cast<float>(nd(rng));
      R.mutable_data<float>()[i] = static_cast<float>(r[i]);
    } else {
      r[i] = nd(rng) * (1.0 + 1e-12);  // not a float
      R.mutable_data<double>()[i] = r[i];
    }
  }
  // A context only for recurrent_weights' type dispatch (its errors name a node).
  struct Ctx : KernelContext {
    Node n;
    Graph g;
    const Node& node() const override { return n; }
    int64_t opset_version() const override { return 17; }
    size_t input_count() const override { return 0; }
    const Value* input_value(size_t) const override { return nullptr; }
    size_t output_count() const override { return 0; }
    bool output_wanted(size_t) const override { return false; }
    Value& output(size_t) override { throw std::runtime_error("no outputs"); }
    std::vector<Value> run_graph(const Graph&, std::vector<Value>) override { return {}; }
    uint64_t seed() const override { return 0; }
    uint64_t max_tensor_bytes() const override { return uint64_t{1} << 30; }
    Location location() const override { return {}; }
    const Graph& graph() const override { return g; }
  } ctx;
  const ref::RecurrentWeights w = ref::recurrent_weights(ctx, R, dirs, rows, cols, {{0, 2 * seg}, {2 * seg, seg}});
  EXPECT_EQ(w.is_float(), type == DataType::Float);
  for (int64_t n : {1, 2, 3, 4, 5, 7}) {
    std::vector<double> v(size_t(n * cols));
    for (double& x : v) x = nd(rng);
    for (int64_t d = 0; d < dirs; ++d)
      for (size_t s = 0; s < 2; ++s) {
        const int64_t seg_rows = w.segments[s].second, row0 = w.segments[s].first;
        std::vector<double> fast(size_t(n * seg_rows)), plain(size_t(n * seg_rows));
        ref::matvec_n(w, d, s, v.data(), cols, fast.data(), seg_rows, n);
        ref::matvec_n_plain(w, d, s, v.data(), cols, plain.data(), seg_rows, n);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t g = 0; g < seg_rows; ++g) {
            double acc = 0.0;
            for (int64_t i = 0; i < cols; ++i)
              acc = std::fma(static_cast<double>(r[size_t((d * rows + row0 + g) * cols + i)]), v[size_t(b * cols + i)], acc);
            const size_t at = size_t(b * seg_rows + g);
            ASSERT_EQ(bits(acc), bits(fast[at])) << "n " << n << " d " << d << " segment " << s << " row " << g;
            ASSERT_EQ(bits(acc), bits(plain[at])) << "n " << n << " d " << d << " segment " << s << " row " << g;
          }
      }
  }
}

}  // namespace

// Small segments (one thread), and segments large enough that a step's
// panels are shared out to 2 or 3 threads.
TEST_P(MatrixVectorStep, FormsGiveThePlainLoopsBits) {
  for (auto isa : test::vector_isas())
  for (const auto& [seg, cols, threads] : {std::tuple<int64_t, int64_t, int>{37, 29, 0}, {300, 301, 2}, {300, 301, 3}}) {
    SCOPED_TRACE(test::isa_name(isa) + ", segment rows " + std::to_string(seg) + ", " + std::to_string(threads) + " threads");
    test::VectorIsaLimit limit(isa);
    cpu::set_thread_count(threads);
    check_matvec(GetParam(), seg, cols);
  }
  cpu::set_thread_count(0);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, MatrixVectorStep, ::testing::Values(DataType::Float, DataType::Double),
                         [](const ::testing::TestParamInfo<DataType>& i) { return i.param == DataType::Float ? "float" : "double"; });
