// The reference's MatMul, Gemm and Conv on floats (reference/ops/math/gemm_f64.h, nn/conv_f64.h)
// against the plain triple loop that defines them: each product and each
// partial sum rounded in double, t in order, then one rounding to the output
// type. Bit for bit, on random shapes (tiles' edges, zero-sized dims, 1-D
// operands, broadcast batches, transposes, C of every broadcast), float,
// double and float16, NaN and infinities mixed in, at 1 and at 2 threads;
// integer products against the integer loop.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // the loop below must round as written
#endif
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "cpu/thread_pool.h"
#include "reference/ops/math/common.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/quantization/integer_product.h"
#include "model_builder.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/inputs.h"
#include "onnxscope/loader.h"
#include "onnxscope/reference.h"
#include "ops_harness.h"
#include "vector_isas.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

double value(const Tensor& t, uint64_t i) { return t.element_as_double(i); }

// The result rounded to t's type, stored at i.
void store(Tensor& t, uint64_t i, double v) {
  switch (t.dtype()) {
    case DataType::Float: t.mutable_data<float>()[i] = static_cast<float>(v); break;
    case DataType::Double: t.mutable_data<double>()[i] = v; break;
    case DataType::Float16: {  // as the reference: to float, then to half
      const uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(t.mutable_raw() + i * 2, &h, 2);
      break;
    }
    default: FAIL() << "type";
  }
}

// sum over t of A(i, t) * B(t, j), in order.
double dot(const std::function<double(int64_t)>& a, const std::function<double(int64_t)>& b, int64_t K) {
  double acc = 0.0;
  for (int64_t t = 0; t < K; ++t) {
    const double p = a(t) * b(t);
    acc = acc + p;
  }
  return acc;
}

void expect_same_bits(const Tensor& want, const Tensor& got) {
  ASSERT_EQ(want.shape(), got.shape());
  ASSERT_EQ(want.dtype(), got.dtype());
  const size_t elem = want.byte_size() / std::max<uint64_t>(1, want.element_count());
  for (uint64_t i = 0; i < want.element_count(); ++i) {
    const bool nan_w = std::isnan(value(want, i)), nan_g = std::isnan(value(got, i));
    if (nan_w || nan_g) {
      ASSERT_TRUE(nan_w && nan_g) << "at " << i;
      continue;
    }
    ASSERT_EQ(std::memcmp(want.raw() + i * elem, got.raw() + i * elem, elem), 0)
        << "at " << i << ": want " << value(want, i) << ", got " << value(got, i);
  }
}

// The reference's outputs of `m` at 1, 2 and 3 threads (the first run's
// returned), each the same bits as at 1 thread.
NamedValues same_bits_at_1_2_3_threads(const std::shared_ptr<const Model>& m, const NamedValues& in) {
  std::vector<NamedValues> runs;
  for (int threads : {1, 2, 3}) {
    cpu::set_thread_count(threads);
    runs.push_back(make_reference_engine()->prepare(m)->run(in));
  }
  cpu::set_thread_count(0);
  for (size_t r = 1; r < runs.size(); ++r) {
    EXPECT_EQ(runs[r].size(), runs[0].size());
    for (size_t o = 0; o < std::min(runs[0].size(), runs[r].size()); ++o) {
      if (!runs[0][o].second.is_tensor()) continue;
      SCOPED_TRACE(runs[0][o].first + " at " + std::to_string(r + 1) + " threads");
      expect_same_bits(runs[0][o].second.tensor(), runs[r][o].second.tensor());
    }
  }
  return runs[0];
}

Tensor run_one(ModelBuilder& b, const NamedValues& in) {
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return make_reference_engine()->prepare(std::shared_ptr<const Model>(std::move(r.model)))->run(in).at(0).second.tensor();
}

const DataType kTypes[] = {DataType::Float, DataType::Double, DataType::Float16};

// Each vector form of the product's tiles the CPU has (AVX-512, AVX2,
// plain), at 1 and at 2 threads.
std::vector<std::pair<ref::math::VectorIsa, int>> forms() {
  std::vector<std::pair<ref::math::VectorIsa, int>> out;
  for (auto isa : vector_isas())
    for (int threads : {1, 2}) out.emplace_back(isa, threads);
  return out;
}

// run() at 1 and 2 threads, each with the 8-bit products on VNNI's 16-bit
// dot products (where the CPU has them) and on the double product; then the
// defaults back.
template <typename Run>
void on_both_product_paths(Run run) {
  for (int paths = 0; paths < 4; ++paths) {
    const int threads = 1 + paths % 2;
    const bool vnni = paths < 2;
    SCOPED_TRACE(std::to_string(threads) + " threads" + (vnni ? "" : ", double product"));
    cpu::set_thread_count(threads);
    ref::detail::set_vnni_products(vnni);
    run();
  }
  cpu::set_thread_count(0);
  ref::detail::set_vnni_products(true);
}

// MatMul(a, b) of floats has `want`'s bits at each of these thread counts.
void expect_matmul_bits(const Tensor& want, const Tensor& a, const Tensor& b, std::initializer_list<int> thread_counts) {
  for (auto isa : vector_isas())
  for (int threads : thread_counts) {
    SCOPED_TRACE(isa_name(isa) + ", " + std::to_string(threads) + " threads");
    VectorIsaLimit limit(isa);
    cpu::set_thread_count(threads);
    ModelBuilder mb(17);
    mb.input("a", DataType::Float, dims_of(a.shape()));
    mb.input("b", DataType::Float, dims_of(b.shape()));
    mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
    mb.output_untyped("y");
    expect_same_bits(want, run_one(mb, {{"a", Value(a)}, {"b", Value(b)}}));
  }
  cpu::set_thread_count(0);
}

}  // namespace

TEST(ReferenceGemm, MatMulIsThePlainLoopBitForBit) {
  Rng rng(31);
  for (int c = 0; c < 60; ++c) {
    const DataType type = kTypes[c % 3];
    // K past 128 too: the product then carries its partial sums across passes (gemm_f64.cpp).
    const int64_t M = pick(rng, 0, 20) == 0 ? 0 : pick(rng, 1, 61), K = pick(rng, 0, 3) == 0 ? pick(rng, 120, 400) : pick(rng, 0, 90),
                  N = pick(rng, 1, 70);
    const bool a_vec = c % 7 == 3, b_vec = c % 11 == 5;
    Shape as = a_vec ? Shape{K} : Shape{M, K}, bs = b_vec ? Shape{K} : Shape{K, N};
    // Broadcast batches: [2, 1] against [3]; or none.
    Shape ab, bb;
    if (c % 4 == 1 && !a_vec && !b_vec) {
      ab = {2, 1};
      bb = {3};
    } else if (c % 4 == 2 && !a_vec && !b_vec) {  // one B for every batch of A: one product of all A's rows
      ab = {2, 3};
      bb = c % 8 == 2 ? Shape{} : Shape{1, 1};
    }
    as.insert(as.begin(), ab.begin(), ab.end());
    bs.insert(bs.begin(), bb.begin(), bb.end());
    SCOPED_TRACE(std::string(dtype_name(type)) + " " + shape_to_string(as) + " @ " + shape_to_string(bs));
    const Tensor a = random_tensor(rng, type, as, -2, 2, c % 5 == 4), b = random_tensor(rng, type, bs, -2, 2, c % 5 == 4);
    // The plain loop.
    const int64_t m = a_vec ? 1 : M, n = b_vec ? 1 : N, batches = ab.empty() ? 1 : 6;
    Shape ys = ab.empty() ? Shape{} : Shape{2, 3};  // [2, 1] with [3], or [2, 3] with [] / [1, 1]
    if (!a_vec) ys.push_back(M);
    if (!b_vec) ys.push_back(N);
    Tensor want = Tensor::zeros(type, ys);
    for (int64_t bt = 0; bt < batches; ++bt) {
      const int64_t ao = ab.empty() ? 0 : (ab == Shape{2, 1} ? bt / 3 : bt), bo = bb == Shape{3} ? bt % 3 : 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          store(want, static_cast<uint64_t>((bt * m + i) * n + j),
                dot([&](int64_t t) { return value(a, static_cast<uint64_t>((ao * m + i) * K + t)); },
                    [&](int64_t t) { return value(b, static_cast<uint64_t>((bo * K + t) * n + j)); }, K));
    }
    for (const auto& [isa, threads] : forms()) {
      SCOPED_TRACE(isa_name(isa) + ", " + std::to_string(threads) + " threads");
      VectorIsaLimit limit(isa);
      cpu::set_thread_count(threads);
      ModelBuilder mb(17);
      mb.input("a", type, dims_of(as));
      mb.input("b", type, dims_of(bs));
      mb.node("MatMul", {"a", "b"}, {"y"}, "mm");
      mb.output_untyped("y");
      expect_same_bits(want, run_one(mb, {{"a", Value(a)}, {"b", Value(b)}}));
    }
  }
  cpu::set_thread_count(0);
}

// Rows past one packed chunk of A (8 MiB of doubles: 2621 rows at K = 400),
// few columns (the threads split the rows too), t in two blocks (256 and
// 144) and the sums of more row tiles than one group keeps between blocks:
// the same bits.
TEST(ReferenceGemm, MatMulPastOneChunkOfRowsIsThePlainLoopBitForBit) {
  Rng rng(33);
  const int64_t M = 2700, K = 400, N = 37;
  const Tensor a = random_tensor(rng, DataType::Float, {M, K}), b = random_tensor(rng, DataType::Float, {K, N});
  Tensor want = Tensor::zeros(DataType::Float, {M, N});
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0.0;
      for (int64_t t = 0; t < K; ++t) {
        const double p = static_cast<double>(pa[i * K + t]) * static_cast<double>(pb[t * N + j]);
        acc = acc + p;
      }
      store(want, static_cast<uint64_t>(i * N + j), acc);
    }
  expect_matmul_bits(want, a, b, {1, 2, 3});
}

// A few rows (math/gemm_f64.h's unpacked path: M <= 4, or M <= 8 with a B
// of at most 2^20 values; B's rows contiguous), columns past one block of 512
// and a tail of fewer than 8, and the packed path just past it: the same bits.
TEST(ReferenceGemm, FewRowsAreThePlainLoopBitForBit) {
  Rng rng(34);
  for (int64_t M : {1, 2, 3, 4, 5, 8, 9})
    for (int64_t N : {7, 37, 100, 1031}) {
      const int64_t K = 45;
      SCOPED_TRACE(std::to_string(M) + " x " + std::to_string(K) + " x " + std::to_string(N));
      const Tensor a = random_tensor(rng, DataType::Float, {M, K}, -2, 2, true), b = random_tensor(rng, DataType::Float, {K, N}, -2, 2, true);
      Tensor want = Tensor::zeros(DataType::Float, {M, N});
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          store(want, static_cast<uint64_t>(i * N + j),
                dot([&](int64_t t) { return value(a, static_cast<uint64_t>(i * K + t)); },
                    [&](int64_t t) { return value(b, static_cast<uint64_t>(t * N + j)); }, K));
      expect_matmul_bits(want, a, b, {1, 2});
    }
}

// Integer products (MatMulInteger's, QLinearMatMul's: 8-bit operands minus
// their zero points) go through the double GEMM when every partial sum is an
// integer below 2^53 (math/common.h exact_integer_gemm): the integer loop's
// result, at 1 and 2 threads. Operands past that bound are refused (the
// caller's plain loop takes them).
TEST(ReferenceGemm, IntegerProductsAreTheIntegerLoop) {
  Rng rng(35);
  for (int c = 0; c < 24; ++c) {
    const int64_t M = pick(rng, 1, 40), K = c % 4 == 1 ? 768 : pick(rng, 1, 90), N = pick(rng, 1, 70);
    // Batches of A in some (B shared); zero points one value, or A's per row and B's per column.
    const int64_t batches = c % 3 == 2 ? 2 : 1;
    const bool each = c % 4 >= 2;
    SCOPED_TRACE(std::to_string(batches) + " x " + std::to_string(M) + " x " + std::to_string(K) + " x " + std::to_string(N) +
                 (each ? " zero points per row / column" : ""));
    const DataType ta = c % 2 ? DataType::Int8 : DataType::Uint8, tb = c % 5 < 2 ? DataType::Uint8 : DataType::Int8;
    const Tensor a = random_tensor(rng, ta, batches > 1 ? Shape{batches, M, K} : Shape{M, K}), b = random_tensor(rng, tb, {K, N});
    const Tensor za = random_tensor(rng, ta, each ? Shape{M} : Shape{}), zb = random_tensor(rng, tb, each ? Shape{N} : Shape{});
    Tensor want = Tensor::zeros(DataType::Int32, batches > 1 ? Shape{batches, M, N} : Shape{M, N});
    for (int64_t q = 0; q < batches; ++q)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          int64_t acc = 0;
          const auto zai = static_cast<int64_t>(value(za, each ? static_cast<uint64_t>(i) : 0));
          const auto zbj = static_cast<int64_t>(value(zb, each ? static_cast<uint64_t>(j) : 0));
          for (int64_t t = 0; t < K; ++t)
            acc += (static_cast<int64_t>(value(a, static_cast<uint64_t>((q * M + i) * K + t))) - zai) *
                   (static_cast<int64_t>(value(b, static_cast<uint64_t>(t * N + j))) - zbj);
          want.mutable_data<int32_t>()[(q * M + i) * N + j] = static_cast<int32_t>(acc);
        }
    ModelBuilder mb(13);
    mb.input("a", ta, dims_of(a.shape()));
    mb.input("b", tb, dims_of(b.shape()));
    mb.input("za", ta, dims_of(za.shape()));
    mb.input("zb", tb, dims_of(zb.shape()));
    mb.node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"}, "mm");
    mb.output_untyped("y");
    on_both_product_paths([&] { expect_same_bits(want, run_one(mb, {{"a", Value(a)}, {"b", Value(b)}, {"za", Value(za)}, {"zb", Value(zb)}})); });
  }
  // The bound: K * |a| * |b| below 2^53 goes through, at it or past it is refused.
  for (const auto& [av, bv, K, ok] : {std::tuple{int64_t{1} << 25, int64_t{1} << 26, int64_t{2}, true},   // 2^52
                                      std::tuple{int64_t{1} << 26, int64_t{1} << 26, int64_t{2}, false},  // 2^53
                                      std::tuple{int64_t{1} << 40, int64_t{1} << 13, int64_t{2}, false},  // 2^54
                                      std::tuple{int64_t{-255}, int64_t{255}, int64_t{100000}, true}}) {
    std::vector<int64_t> a(static_cast<size_t>(2 * K), av), b(static_cast<size_t>(K * 3), bv), y(6, 0);
    a[1] = -av;
    EXPECT_EQ(ref::math::exact_integer_gemm(a.data(), b.data(), 2, 3, K, y.data()), ok) << av << " " << bv << " " << K;
    if (ok) {
      EXPECT_EQ(y[0], (K - 2) * av * bv);  // row 0: K - 1 times a, once -a
    }
  }
}

// A product with more rows than one chunk of packed A (the 16-bit dot
// products pack A's rows 4 MiB at a time), an odd K and a partial last panel
// of columns: the integer loop's sums, at 1 and 2 threads.
TEST(ReferenceGemm, IntegerProductInRowChunksIsTheIntegerLoop) {
  Rng rng(39);
  const int64_t M = 2900, K = 771, N = 40;
  const Tensor a = random_tensor(rng, DataType::Uint8, {M, K}), b = random_tensor(rng, DataType::Int8, {K, N});
  const Tensor za = random_tensor(rng, DataType::Uint8, {M}), zb = random_tensor(rng, DataType::Int8, {N});
  Tensor want = Tensor::zeros(DataType::Int32, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t acc = 0;
      for (int64_t t = 0; t < K; ++t)
        acc += (int64_t{a.data<uint8_t>()[i * K + t]} - int64_t{za.data<uint8_t>()[i]}) *
               (int64_t{b.data<int8_t>()[t * N + j]} - int64_t{zb.data<int8_t>()[j]});
      want.mutable_data<int32_t>()[i * N + j] = static_cast<int32_t>(acc);
    }
  ModelBuilder mb(13);
  mb.input("a", DataType::Uint8, {M, K});
  mb.input("b", DataType::Int8, {K, N});
  mb.input("za", DataType::Uint8, {M});
  mb.input("zb", DataType::Int8, {N});
  mb.node("MatMulInteger", {"a", "b", "za", "zb"}, {"y"}, "mm");
  mb.output_untyped("y");
  on_both_product_paths([&] { expect_same_bits(want, run_one(mb, {{"a", Value(a)}, {"b", Value(b)}, {"za", Value(za)}, {"zb", Value(zb)}})); });
}

// com.microsoft QGemm with transposed operands (read through their strides,
// not copied), per-column B zero points and scales, and C: the spec's loop
// in float after the exact integer sums, at 1 and 2 threads.
TEST(ReferenceGemm, QGemmTransposedIsTheLoop) {
  Rng rng(36);
  for (int c = 0; c < 12; ++c) {
    const bool ta = c % 2 == 1, tb = c / 2 % 2 == 1;
    // From case 8 on, Y quantized (y_scale, y_zero_point; case 11's y_scale makes
    // the scale overflow to infinity); C one value (case 9) or [M, N] (case 10).
    const bool quantized = c >= 8;
    const int64_t M = pick(rng, 1, 30), K = c == 5 ? 300 : pick(rng, 1, 70), N = pick(rng, 1, 50);
    SCOPED_TRACE(std::to_string(M) + " x " + std::to_string(K) + " x " + std::to_string(N) + (ta ? " transA" : "") + (tb ? " transB" : "") +
                 (quantized ? " quantized Y" : ""));
    const Tensor a = random_tensor(rng, DataType::Uint8, ta ? Shape{K, M} : Shape{M, K});
    const Tensor b = random_tensor(rng, DataType::Int8, tb ? Shape{N, K} : Shape{K, N});
    const Tensor za = random_tensor(rng, DataType::Uint8, {}), zb = random_tensor(rng, DataType::Int8, {N});
    const Tensor sa = random_tensor(rng, DataType::Float, {}, 0.01, 0.1), sb = random_tensor(rng, DataType::Float, {N}, 0.001, 0.02);
    const Shape cs = c == 9 ? Shape{} : c == 10 ? Shape{M, N} : Shape{N};
    const Tensor cc = random_tensor(rng, DataType::Int32, cs, -5000, 5000);
    const float sy = c == 11 ? 1e-38f : 0.37f;
    const uint8_t zy = 7;
    Tensor want = Tensor::zeros(quantized ? DataType::Uint8 : DataType::Float, {M, N});
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = cc.data<int32_t>()[c == 9 ? 0 : c == 10 ? i * N + j : j];
        for (int64_t t = 0; t < K; ++t)
          acc += (int64_t{a.data<uint8_t>()[ta ? t * M + i : i * K + t]} - int64_t{za.data<uint8_t>()[0]}) *
                 (int64_t{b.data<int8_t>()[tb ? j * K + t : t * N + j]} - int64_t{zb.data<int8_t>()[j]});
        float scale = sa.data<float>()[0] * sb.data<float>()[j];
        if (quantized) scale /= sy;
        const float v = static_cast<float>(acc) * scale;
        if (!quantized) {
          want.mutable_data<float>()[i * N + j] = v;
          continue;
        }
        const float q = std::nearbyint(v) + static_cast<float>(zy);
        want.mutable_data<uint8_t>()[i * N + j] = static_cast<uint8_t>(q < 0.0f ? 0.0f : q > 255.0f ? 255.0f : q);
      }
    ModelBuilder mb(13);
    mb.opset("com.microsoft", 1);
    mb.input("a", DataType::Uint8, dims_of(a.shape()));
    mb.input("as", DataType::Float, {});
    mb.input("az", DataType::Uint8, {});
    mb.input("b", DataType::Int8, dims_of(b.shape()));
    mb.input("bs", DataType::Float, {N});
    mb.input("bz", DataType::Int8, {N});
    mb.input("c", DataType::Int32, dims_of(cs));
    std::vector<std::string> ins = {"a", "as", "az", "b", "bs", "bz", "c"};
    if (quantized) {
      add_initializer(mb, "ys", scalar(DataType::Float, sy));
      add_initializer(mb, "yz", scalar(DataType::Uint8, zy));
      ins.push_back("ys");
      ins.push_back("yz");
    }
    auto& n = mb.node("QGemm", ins, {"y"}, "qg", "com.microsoft");
    if (ta) attr_int(n, "transA", 1);
    if (tb) attr_int(n, "transB", 1);
    mb.output_untyped("y");
    const NamedValues feeds = {{"a", Value(a)},   {"as", Value(sa)}, {"az", Value(za)}, {"b", Value(b)},
                               {"bs", Value(sb)}, {"bz", Value(zb)}, {"c", Value(cc)}};
    on_both_product_paths([&] { expect_same_bits(want, run_one(mb, feeds)); });
  }
}

// com.microsoft QLinearSoftmax against its formula written out (each value
// dequantized, exp in double of x - max(row) times the scale, normalized,
// requantized): uint8 and int8 over their whole range, the opset-13 axis
// and the older flattening rule, rows across 1 and 2 threads.
TEST(ReferenceQuantize, QLinearSoftmaxIsTheFormula) {
  Rng rng(38);
  for (int c = 0; c < 8; ++c) {
    const DataType t = c % 2 ? DataType::Int8 : DataType::Uint8;
    const Shape s = c == 2 ? Shape{4, 200, 64} : Shape{pick(rng, 1, 4), pick(rng, 1, 40), pick(rng, 2, 70)};  // c 2: rows split
    const int64_t axis = c % 3 == 0 ? 1 : 2, opset = c % 4 == 3 ? 12 : 13;
    SCOPED_TRACE(shape_to_string(s) + " axis " + std::to_string(axis) + " opset " + std::to_string(opset));
    const Tensor x = random_bytes(rng, t, s, t == DataType::Int8 ? -128 : 0, t == DataType::Int8 ? 127 : 255);
    const float sx = 0.05f + 0.01f * static_cast<float>(c), sy = 1.0f / 256;
    const int zy = t == DataType::Int8 ? -128 : 0;
    auto at = [&](int64_t i) { return t == DataType::Int8 ? int64_t{x.data<int8_t>()[i]} : int64_t{x.data<uint8_t>()[i]}; };
    // Rows of n values `inner` apart.
    const int64_t outer = axis == 1 ? s[0] : s[0] * s[1];
    const int64_t n = opset >= 13 ? s[static_cast<size_t>(axis)] : (axis == 1 ? s[1] * s[2] : s[2]);
    const int64_t inner = opset >= 13 && axis == 1 ? s[2] : 1;
    Tensor want = Tensor::zeros(t, s);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        int64_t m = at(base);
        for (int64_t k = 1; k < n; ++k) m = std::max(m, at(base + k * inner));
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += std::exp(static_cast<double>(at(base + k * inner) - m) * sx);
        for (int64_t k = 0; k < n; ++k) {
          const double e = std::exp(static_cast<double>(at(base + k * inner) - m) * sx);
          const float q = std::nearbyint(static_cast<float>(e / sum / sy)) + static_cast<float>(zy);
          const float lo = zy, hi = zy + 255;
          const auto v = static_cast<int64_t>(q < lo ? lo : q > hi ? hi : q);
          if (t == DataType::Int8) want.mutable_data<int8_t>()[base + k * inner] = static_cast<int8_t>(v);
          else want.mutable_data<uint8_t>()[base + k * inner] = static_cast<uint8_t>(v);
        }
      }
    ModelBuilder mb(13);
    mb.opset("com.microsoft", 1);
    mb.input("x", t, dims_of(s));
    add_initializer(mb, "sx", scalar(DataType::Float, sx));
    add_initializer(mb, "zx", scalar(t, 0));
    add_initializer(mb, "sy", scalar(DataType::Float, sy));
    add_initializer(mb, "zy", scalar(t, zy));
    auto& node = mb.node("QLinearSoftmax", {"x", "sx", "zx", "sy", "zy"}, {"y"}, "sm", "com.microsoft");
    attr_int(node, "axis", axis);
    attr_int(node, "opset", opset);
    mb.output_untyped("y");
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      cpu::set_thread_count(threads);
      expect_same_bits(want, run_one(mb, {{"x", Value(x)}}));
    }
    cpu::set_thread_count(0);
  }
}

// com.microsoft QLinearAdd and QLinearMul against their formula written out
// (ratios of the scales in float, products and sums as written, rounded
// half to even, saturated): uint8 and int8, A and B of one shape or either
// broadcast (a row, a column, a scalar), rows long enough for the vector
// path and its tail, scales whose ratios overflow to infinity and give NaN
// (the scalar cast's bytes), at 1 and 2 threads.
TEST(ReferenceQuantize, QLinearAddMulAreTheFormula) {
  Rng rng(47);
  const Shape shapes_b[] = {{3, 50, 37}, {37}, {3, 50, 1}, {1}, {1, 50, 37}};
  for (int c = 0; c < 20; ++c) {
    const bool mul = c % 2 == 1;
    const DataType t = c / 2 % 2 ? DataType::Int8 : DataType::Uint8;
    const Shape sa{3, 50, 37}, sb = shapes_b[c / 4 % 5];
    const bool huge = c >= 16;  // sc tiny: the ratios overflow
    SCOPED_TRACE(std::string(mul ? "QLinearMul " : "QLinearAdd ") + std::string(dtype_name(t)) + " B " + shape_to_string(sb) +
                 (huge ? " overflowing ratios" : ""));
    const bool s8 = t == DataType::Int8;
    const Tensor a = random_bytes(rng, t, sa, s8 ? -128 : 0, s8 ? 127 : 255);
    const Tensor b = random_bytes(rng, t, sb, s8 ? -128 : 0, s8 ? 127 : 255);
    const float fa = 0.02f + 0.001f * static_cast<float>(c), fb = 0.03f, fc = huge ? 1e-38f : 0.05f;
    const int za = s8 ? -3 : 128, zb = s8 ? 5 : 120, zc = s8 ? -1 : 131;
    auto at = [&](const Tensor& x, int64_t i) { return s8 ? int32_t{x.data<int8_t>()[i]} : int32_t{x.data<uint8_t>()[i]}; };
    const float ra = fa / fc, rb = fb / fc, rab = fa * fb / fc;
    Tensor want = Tensor::zeros(t, sa);
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 50; ++j)
        for (int64_t k = 0; k < 37; ++k) {
          const int64_t ia = (i * 50 + j) * 37 + k;
          int64_t ib = 0;  // B's index under numpy broadcasting against [3, 50, 37]
          const size_t r = sb.size();
          const int64_t idx[3] = {i, j, k};
          for (size_t d = 0; d < r; ++d) ib = ib * sb[d] + (sb[d] == 1 ? 0 : idx[3 - r + d]);
          const float qa = static_cast<float>(at(a, ia) - za), qb = static_cast<float>(at(b, ib) - zb);
          volatile float prod = qa * ra, prod2 = qb * rb;  // (volatile: no fused multiply-add in the test either)
          const float v = mul ? qa * qb * rab : prod + prod2;
          const float q = std::nearbyint(v) + static_cast<float>(zc);
          const float lo = s8 ? -128.0f : 0.0f, hi = s8 ? 127.0f : 255.0f;
          const float clamped = q < lo ? lo : q > hi ? hi : q;
          const auto byte = static_cast<int32_t>(clamped);  // NaN: the cast's bytes, as the kernel's own loop
          if (s8) want.mutable_data<int8_t>()[ia] = static_cast<int8_t>(byte);
          else want.mutable_data<uint8_t>()[ia] = static_cast<uint8_t>(byte);
        }
    ModelBuilder mb(13);
    mb.opset("com.microsoft", 1);
    mb.input("a", t, dims_of(sa));
    mb.input("b", t, dims_of(sb));
    add_initializer(mb, "fa", scalar(DataType::Float, fa));
    add_initializer(mb, "za", scalar(t, za));
    add_initializer(mb, "fb", scalar(DataType::Float, fb));
    add_initializer(mb, "zb", scalar(t, zb));
    add_initializer(mb, "fc", scalar(DataType::Float, fc));
    add_initializer(mb, "zc", scalar(t, zc));
    mb.node(mul ? "QLinearMul" : "QLinearAdd", {"a", "fa", "za", "b", "fb", "zb", "fc", "zc"}, {"y"}, "q", "com.microsoft");
    mb.output_untyped("y");
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      cpu::set_thread_count(threads);
      expect_same_bits(want, run_one(mb, {{"a", Value(a)}, {"b", Value(b)}}));
    }
    cpu::set_thread_count(0);
  }
}

// The requantizing kernels' inline rounding is std::nearbyint, bit for bit:
// a sweep over float bit patterns (every 251st, both signs, subnormals, NaN
// payloads, infinities), the halves on either side of every integer up to
// 2^12, and the 2^23 seam.
TEST(ReferenceQuantize, NearestEvenIsNearbyint) {
  auto same = [](float v) {
    const float a = onnxscope::ref::nearest_even(v), b = std::nearbyint(v);
    uint32_t ba, bb;
    std::memcpy(&ba, &a, 4);
    std::memcpy(&bb, &b, 4);
    if (std::isnan(b)) return std::isnan(a);
    return ba == bb;
  };
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    float v;
    const auto u = static_cast<uint32_t>(bits);
    std::memcpy(&v, &u, 4);
    ASSERT_TRUE(same(v)) << v << " (bits " << u << ")";
  }
  for (int i = -4096; i <= 4096; ++i)
    for (float d : {-0.5f, 0.5f, 0.25f, -0.25f, 0.75f})
      ASSERT_TRUE(same(static_cast<float>(i) + d)) << i << " + " << d;
  for (float v : {8388607.5f, -8388607.5f, 8388608.0f, 8388609.0f, 4194303.5f, 4194304.5f, -0.0f, 0.0f, 1e-45f, -1e-45f,
                  INFINITY, -INFINITY, NAN})
    ASSERT_TRUE(same(v)) << v;
}

// QuantizeLinear and DequantizeLinear's float paths (float x or y, 8-bit
// the other side, one scale or one per channel) against the spec's formula
// in double as the general loop computes it: halves exactly (scales that
// are powers of two), NaN, infinities, values far past the range; at 1 and
// 2 threads.
TEST(ReferenceQuantize, FloatPathsAreTheSpecsFormula) {
  Rng rng(37);
  const int64_t C = 3, L = 20000;  // enough for the threads to split the rows
  Tensor x = random_tensor(rng, DataType::Float, {2, C, L}, -300, 300);
  float* xv = x.mutable_data<float>();
  const float odd[] = {NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 0.25f, 63.75f};
  for (size_t i = 0; i < std::size(odd); ++i) xv[i * 977] = odd[i];
  for (int64_t i = 0; i < 2 * C * L; i += 7) xv[i] = std::round(xv[i] * 4.0f) / 4.0f;  // quarters: halves once scaled
  for (const bool per_channel : {false, true})
    for (const DataType q : {DataType::Uint8, DataType::Int8}) {
      SCOPED_TRACE(std::string(per_channel ? "per channel " : "one scale ") + std::string(dtype_name(q)));
      const Shape ps = per_channel ? Shape{C} : Shape{};
      Tensor scale = Tensor::zeros(DataType::Float, ps), zp = Tensor::zeros(q, ps);
      for (uint64_t k = 0; k < scale.element_count(); ++k) {
        scale.mutable_data<float>()[k] = k == 0 ? 0.5f : k == 1 ? 0.0371f : 2.0f;
        const int z = q == DataType::Uint8 ? 120 + static_cast<int>(k) : -3 + static_cast<int>(k);
        reinterpret_cast<uint8_t*>(zp.mutable_raw())[k] = static_cast<uint8_t>(z);
      }
      auto zero = [&](uint64_t k) { return q == DataType::Uint8 ? double(zp.data<uint8_t>()[k]) : double(zp.data<int8_t>()[k]); };
      const double lo = q == DataType::Uint8 ? 0 : -128, hi = q == DataType::Uint8 ? 255 : 127;
      Tensor want_q = Tensor::zeros(q, x.shape());
      Tensor want_d = Tensor::zeros(DataType::Float, x.shape());
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        const uint64_t k = per_channel ? i / L % C : 0;
        const double sq = static_cast<float>(static_cast<double>(xv[i]) / static_cast<double>(scale.data<float>()[k]));
        const double v = std::clamp((std::isnan(sq) ? 0.0 : std::nearbyint(sq)) + zero(k), lo, hi);
        if (q == DataType::Uint8) want_q.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(v);
        else want_q.mutable_data<int8_t>()[i] = static_cast<int8_t>(v);
        want_d.mutable_data<float>()[i] = static_cast<float>((v - zero(k)) * static_cast<double>(scale.data<float>()[k]));
      }
      ModelBuilder mb(13);
      mb.input("x", DataType::Float, dims_of(x.shape()));
      mb.input("s", DataType::Float, dims_of(ps));
      mb.input("z", q, dims_of(ps));
      mb.node("QuantizeLinear", {"x", "s", "z"}, {"y"}, "q");
      mb.node("DequantizeLinear", {"y", "s", "z"}, {"d"}, "d");
      mb.output_untyped("y");
      mb.output_untyped("d");
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::to_string(threads) + " threads");
        cpu::set_thread_count(threads);
        const auto got = make_reference_engine()->prepare(load_model(mb))->run({{"x", Value(x)}, {"s", Value(scale)}, {"z", Value(zp)}});
        expect_same_bits(want_q, got[0].second.tensor());
        expect_same_bits(want_d, got[1].second.tensor());
      }
      cpu::set_thread_count(0);
    }
}

// ConvInteger's sums (quantization/integer_conv.h: the blocked double
// convolution) against the integer loop written out here: groups, padding,
// strides, dilations, a per-channel weight zero point, uint8 and int8, at 1
// and 2 threads.
TEST(ReferenceQuantize, ConvIntegerIsTheIntegerLoop) {
  Rng rng(38);
  for (int c = 0; c < 8; ++c) {
    const int64_t G = c % 3 == 1 ? 2 : 1, Cg = pick(rng, 1, 9), Mg = pick(rng, 1, 7), H = pick(rng, 5, 17), W = pick(rng, 5, 17);
    const int64_t KH = pick(rng, 1, 3), KW = pick(rng, 1, 3), S = c % 2 + 1, D = c % 4 == 3 ? 2 : 1, P = c % 3;
    const int64_t C = G * Cg, M = G * Mg, OH = (H + 2 * P - D * (KH - 1) - 1) / S + 1, OW = (W + 2 * P - D * (KW - 1) - 1) / S + 1;
    if (OH < 1 || OW < 1) continue;
    SCOPED_TRACE("case " + std::to_string(c));
    const DataType tx = c % 2 ? DataType::Int8 : DataType::Uint8, tw = c % 4 < 2 ? DataType::Int8 : DataType::Uint8;
    const Tensor x = random_tensor(rng, tx, {2, C, H, W}), w = random_tensor(rng, tw, {M, Cg, KH, KW});
    const Tensor zx = random_tensor(rng, tx, {}), zw = random_tensor(rng, tw, {M});
    Tensor want = Tensor::zeros(DataType::Int32, {2, M, OH, OW});
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            int64_t acc = 0;
            for (int64_t ci = 0; ci < Cg; ++ci)
              for (int64_t kh = 0; kh < KH; ++kh)
                for (int64_t kw = 0; kw < KW; ++kw) {
                  const int64_t ih = oh * S - P + kh * D, iw = ow * S - P + kw * D;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;  // padding: x at its zero point
                  const int64_t cx = m / Mg * Cg + ci;
                  acc += (static_cast<int64_t>(value(x, static_cast<uint64_t>(((n * C + cx) * H + ih) * W + iw))) -
                          static_cast<int64_t>(value(zx, 0))) *
                         (static_cast<int64_t>(value(w, static_cast<uint64_t>(((m * Cg + ci) * KH + kh) * KW + kw))) -
                          static_cast<int64_t>(value(zw, static_cast<uint64_t>(m))));
                }
            want.mutable_data<int32_t>()[((n * M + m) * OH + oh) * OW + ow] = static_cast<int32_t>(acc);
          }
    ModelBuilder mb(10);
    mb.input("x", tx, dims_of(x.shape()));
    mb.input("w", tw, dims_of(w.shape()));
    mb.input("zx", tx, {});
    mb.input("zw", tw, {M});
    auto& node = mb.node("ConvInteger", {"x", "w", "zx", "zw"}, {"y"}, "conv");
    attr_int(node, "group", G);
    attr_ints(node, "pads", {P, P, P, P});
    attr_ints(node, "strides", {S, S});
    attr_ints(node, "dilations", {D, D});
    mb.output_untyped("y");
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(threads) + " threads");
      cpu::set_thread_count(threads);
      expect_same_bits(want, run_one(mb, {{"x", Value(x)}, {"w", Value(w)}, {"zx", Value(zx)}, {"zw", Value(zw)}}));
    }
    cpu::set_thread_count(0);
  }
}

TEST(ReferenceGemm, GemmIsThePlainLoopBitForBit) {
  Rng rng(32);
  for (int c = 0; c < 48; ++c) {
    const DataType type = kTypes[c % 3];
    const bool ta = c % 2 == 1, tb = c % 4 >= 2;
    const int64_t M = pick(rng, 1, 55), K = pick(rng, 0, 3) == 0 ? pick(rng, 120, 300) : pick(rng, 0, 80), N = pick(rng, 1, 75);
    const std::vector<Shape> c_shapes = {{}, {M, N}, {N}, {M, 1}, {1}, {1, N}};
    const Shape cs = c_shapes[static_cast<size_t>(c / 4) % c_shapes.size()];
    const bool has_c = c % 13 != 12;
    const float alpha = c % 3 == 0 ? 1.0f : 0.75f, beta = c % 5 == 0 ? 1.0f : -1.5f;
    const Shape as = ta ? Shape{K, M} : Shape{M, K}, bs = tb ? Shape{N, K} : Shape{K, N};
    SCOPED_TRACE(std::string(dtype_name(type)) + " A" + shape_to_string(as) + (ta ? "^T" : "") + " B" + shape_to_string(bs) +
                 (tb ? "^T" : "") + (has_c ? " C" + shape_to_string(cs) : ""));
    const Tensor a = random_tensor(rng, type, as, -2, 2, c % 6 == 5), b = random_tensor(rng, type, bs, -2, 2, c % 6 == 5);
    const Tensor cv = random_tensor(rng, type, cs);
    Tensor want = Tensor::zeros(type, {M, N});
    const int64_t c_rows = cs.size() == 2 ? cs[0] : 1, c_cols = cs.empty() ? 1 : cs.back();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        const double p = dot([&](int64_t t) { return value(a, static_cast<uint64_t>(ta ? t * M + i : i * K + t)); },
                             [&](int64_t t) { return value(b, static_cast<uint64_t>(tb ? j * K + t : t * N + j)); }, K);
        const double cval = has_c ? value(cv, static_cast<uint64_t>((c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j))) : 0.0;
        const double al = alpha, be = beta;
        const double x = al * p;
        const double y = be * cval;
        store(want, static_cast<uint64_t>(i * N + j), x + y);
      }
    for (const auto& [isa, threads] : forms()) {
      SCOPED_TRACE(isa_name(isa) + ", " + std::to_string(threads) + " threads");
      VectorIsaLimit limit(isa);
      cpu::set_thread_count(threads);
      ModelBuilder mb(13);
      mb.input("a", type, dims_of(as));
      mb.input("b", type, dims_of(bs));
      std::vector<std::string> in{"a", "b"};
      NamedValues values{{"a", Value(a)}, {"b", Value(b)}};
      if (has_c) {
        mb.input("c", type, dims_of(cs));
        in.push_back("c");
        values.emplace_back("c", Value(cv));
      }
      auto& g = mb.node("Gemm", in, {"y"}, "gemm");
      attr_int(g, "transA", ta ? 1 : 0);
      attr_int(g, "transB", tb ? 1 : 0);
      attr_float(g, "alpha", alpha);
      attr_float(g, "beta", beta);
      mb.output_untyped("y");
      expect_same_bits(want, run_one(mb, values));
    }
  }
  cpu::set_thread_count(0);
}

// Conv against its direct sum: over c of the group, then the kernel
// positions in order, positions in the padding skipped, then + B, one
// rounding. 1-D to 3-D, groups (depthwise included), strides, dilations,
// pads, kernels wider than the input; NaN and inf in X, and in W (where a
// padded position must add nothing, not 0 * inf), at 1 and 2 threads.
TEST(ReferenceConv, IsTheDirectSumBitForBit) {
  Rng rng(33);
  for (int c = 0; c < 54; ++c) {
    const DataType type = kTypes[c % 3];
    const int64_t dims = 1 + c % 3 == 3 ? (c % 9 == 2 ? 3 : 2) : 1 + c % 3;
    const int64_t group = c % 5 == 0 ? 1 : (c % 5 == 1 ? 3 : 2);
    const int64_t Cg = pick(rng, 1, 4), Mg = pick(rng, 1, 5), N = pick(rng, 1, 2);
    const int64_t C = Cg * group, M = Mg * group;
    Shape xs{N, C}, ws{M, Cg};
    std::vector<int64_t> strides, dil, pads_b, pads_e, in, k;
    for (int64_t d = 0; d < dims; ++d) {
      in.push_back(pick(rng, 1, dims == 3 ? 5 : 11));
      k.push_back(pick(rng, 1, 4));
      strides.push_back(pick(rng, 1, 2));
      dil.push_back(pick(rng, 1, 2));
      pads_b.push_back(pick(rng, 0, 2));
      pads_e.push_back(pick(rng, 0, 2));
      // The padded input must hold the dilated kernel.
      while (in.back() + pads_b.back() + pads_e.back() < (k.back() - 1) * dil.back() + 1) ++pads_e.back();
      xs.push_back(in.back());
      ws.push_back(k.back());
    }
    const bool bias = c % 4 != 3, specials = c % 6 == 5;
    SCOPED_TRACE(std::string(dtype_name(type)) + " X" + shape_to_string(xs) + " W" + shape_to_string(ws) + " group " +
                 std::to_string(group) + (specials ? " with NaN/inf" : ""));
    const Tensor x = random_tensor(rng, type, xs, -2, 2, specials), w = random_tensor(rng, type, ws, -2, 2, specials);
    const Tensor b = random_tensor(rng, type, {M});
    // The direct sum.
    std::vector<int64_t> out;
    for (int64_t d = 0; d < dims; ++d)
      out.push_back((in[static_cast<size_t>(d)] + pads_b[static_cast<size_t>(d)] + pads_e[static_cast<size_t>(d)] -
                     ((k[static_cast<size_t>(d)] - 1) * dil[static_cast<size_t>(d)] + 1)) / strides[static_cast<size_t>(d)] + 1);
    Shape ys{N, M};
    ys.insert(ys.end(), out.begin(), out.end());
    Tensor want = Tensor::zeros(type, ys);
    const auto count = [](const std::vector<int64_t>& v) {
      int64_t p = 1;
      for (int64_t e : v) p *= e;
      return p;
    };
    const int64_t OS = count(out), KS = count(k), IS = count(in);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t o = 0; o < OS; ++o) {
          std::vector<int64_t> oi(static_cast<size_t>(dims));
          for (int64_t d = dims - 1, r = o; d >= 0; --d) {
            oi[static_cast<size_t>(d)] = r % out[static_cast<size_t>(d)];
            r /= out[static_cast<size_t>(d)];
          }
          double acc = 0.0;
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kp = 0; kp < KS; ++kp) {
              int64_t ip = 0, rest = kp;
              std::vector<int64_t> ki(static_cast<size_t>(dims));
              for (int64_t d = dims - 1; d >= 0; --d) {
                ki[static_cast<size_t>(d)] = rest % k[static_cast<size_t>(d)];
                rest /= k[static_cast<size_t>(d)];
              }
              bool inside = true;
              for (int64_t d = 0; d < dims; ++d) {
                const auto u = static_cast<size_t>(d);
                const int64_t pos = oi[u] * strides[u] - pads_b[u] + ki[u] * dil[u];
                inside = inside && pos >= 0 && pos < in[u];
                ip = ip * in[u] + pos;
              }
              if (!inside) continue;
              const double p = value(x, static_cast<uint64_t>((n * C + (m / Mg) * Cg + ci) * IS + ip)) *
                               value(w, static_cast<uint64_t>((m * Cg + ci) * KS + kp));
              acc = acc + p;
            }
          store(want, static_cast<uint64_t>((n * M + m) * OS + o), bias ? acc + value(b, static_cast<uint64_t>(m)) : acc);
        }
    for (const auto& [isa, threads] : forms()) {
      SCOPED_TRACE(isa_name(isa) + ", " + std::to_string(threads) + " threads");
      VectorIsaLimit limit(isa);
      cpu::set_thread_count(threads);
      ModelBuilder mb(17);
      mb.input("x", type, dims_of(xs));
      mb.input("w", type, dims_of(ws));
      std::vector<std::string> inputs{"x", "w"};
      NamedValues values{{"x", Value(x)}, {"w", Value(w)}};
      if (bias) {
        mb.input("b", type, dims_of({M}));
        inputs.push_back("b");
        values.emplace_back("b", Value(b));
      }
      auto& conv = mb.node("Conv", inputs, {"y"}, "conv");
      attr_int(conv, "group", group);
      attr_ints(conv, "strides", strides);
      attr_ints(conv, "dilations", dil);
      std::vector<int64_t> pads = pads_b;
      pads.insert(pads.end(), pads_e.begin(), pads_e.end());
      attr_ints(conv, "pads", pads);
      mb.output_untyped("y");
      expect_same_bits(want, run_one(mb, values));
    }
  }
  cpu::set_thread_count(0);
}

namespace {

// A transformer block: LayerNorm, a QKV MatMul with bias, attention through
// MatMul / Softmax / MatMul, an Erf GELU MLP, residual Adds; x [4, 128, 96]: big enough
// that the products and the elementwise ops split into several work items.
std::shared_ptr<Model> transformer_block() {
  ModelBuilder b(17);
  Rng rng(44);
  auto weight = [&](const std::string& name, const Shape& s) {
    b.initializer(make_float_tensor(name, std::vector<int64_t>(s.begin(), s.end()),
                                    [&] {
                                      const Tensor t = random_tensor(rng, DataType::Float, s, -0.3, 0.3);
                                      return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
                                    }()));
  };
  b.input("x", DataType::Float, {int64_t{4}, int64_t{128}, int64_t{96}});
  weight("g", {96});
  weight("be", {96});
  weight("wq", {96, 96});
  weight("wk", {96, 96});
  weight("wv", {96, 96});
  weight("bq", {96});
  weight("w1", {96, 384});
  weight("w2", {384, 96});
  b.initializer(make_float_tensor("inv_sqrt2", {}, {0.70710677f}));
  b.initializer(make_float_tensor("one", {}, {1.0f}));
  b.initializer(make_float_tensor("half", {}, {0.5f}));
  b.initializer(make_float_tensor("scale", {}, {0.1021f}));
  b.node("LayerNormalization", {"x", "g", "be"}, {"n"}, "ln");
  b.node("MatMul", {"n", "wq"}, {"q0"}, "q");
  b.node("Add", {"q0", "bq"}, {"q1"}, "qb");
  b.node("MatMul", {"n", "wk"}, {"k"}, "k");
  b.node("MatMul", {"n", "wv"}, {"v"}, "v");
  attr_ints(b.node("Transpose", {"k"}, {"kt"}, "kt"), "perm", {0, 2, 1});
  b.node("MatMul", {"q1", "kt"}, {"s0"}, "qk");
  b.node("Mul", {"s0", "scale"}, {"s1"}, "sc");
  attr_int(b.node("Softmax", {"s1"}, {"p"}, "softmax"), "axis", -1);
  b.node("MatMul", {"p", "v"}, {"a"}, "pv");
  b.node("Add", {"x", "a"}, {"r1"}, "res1");
  b.node("MatMul", {"r1", "w1"}, {"h"}, "fc1");
  b.node("Mul", {"h", "inv_sqrt2"}, {"hs"}, "gs");
  b.node("Erf", {"hs"}, {"he"}, "erf");
  b.node("Add", {"he", "one"}, {"h1"}, "g1");
  b.node("Mul", {"h", "h1"}, {"h2"}, "g2");
  b.node("Mul", {"h2", "half"}, {"h3"}, "g3");
  b.node("MatMul", {"h3", "w2"}, {"m"}, "fc2");
  b.node("Add", {"r1", "m"}, {"y"}, "res2");
  b.output_untyped("y");
  return load_model(b);
}

}  // namespace

// Whole models give the same bits at 1, 2 and 3 threads: the repository's
// sample CNN (Conv, Relu, pooling, Gemm), the control-flow sample, a
// transformer block, and a depthwise / grouped / strided convolution net
// with a bias and padding.
TEST(ReferenceThreads, WholeModelsGiveTheSameBitsAtAnyThreadCount) {
  std::vector<std::pair<std::string, std::shared_ptr<const Model>>> models;
  for (const char* file : {"sample_cnn.onnx", "control_flow.onnx"}) {
    auto r = load_model_file(std::filesystem::path(ONNXSCOPE_SOURCE_DIR) / "resources" / "models" / file);
    ASSERT_TRUE(r.ok()) << file;
    models.emplace_back(file, std::shared_ptr<const Model>(std::move(r.model)));
  }
  models.emplace_back("transformer block", transformer_block());
  {
    ModelBuilder b(17);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{6}, int64_t{47}, int64_t{41}});
    Rng rng(45);
    auto weight = [&](const std::string& name, const std::vector<int64_t>& s) {
      const Tensor t = random_tensor(rng, DataType::Float, Shape(s.begin(), s.end()), -0.5, 0.5);
      b.initializer(make_float_tensor(name, s, std::vector<float>(t.data<float>(), t.data<float>() + t.element_count())));
    };
    weight("w1", {12, 3, 3, 3});
    weight("b1", {12});
    weight("w2", {12, 1, 5, 5});
    weight("w3", {7, 12, 1, 1});
    auto& c1 = b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "grouped");
    attr_int(c1, "group", 2);
    attr_ints(c1, "pads", {1, 1, 1, 1});
    b.node("Relu", {"c1"}, {"r1"}, "relu");
    auto& c2 = b.node("Conv", {"r1", "w2"}, {"c2"}, "depthwise");
    attr_int(c2, "group", 12);
    attr_ints(c2, "pads", {2, 2, 2, 2});
    attr_ints(c2, "strides", {2, 2});
    b.node("Conv", {"c2", "w3"}, {"y"}, "pointwise");
    b.output_untyped("y");
    models.emplace_back("conv net", load_model(b));
  }
  {  // com.microsoft SkipLayerNormalization and the simplified form, rows split across the threads; then
     // DynamicQuantizeLinear of the result
    ModelBuilder b(17);
    b.opset("com.microsoft", 1);
    b.input("x", DataType::Float, {int64_t{2}, int64_t{64}, int64_t{384}});
    b.input("skip", DataType::Float, {int64_t{64}, int64_t{384}});
    Rng rng(46);
    for (const char* name : {"gamma", "beta", "bias"}) {
      const Tensor t = random_tensor(rng, DataType::Float, {384}, -1, 1);
      b.initializer(make_float_tensor(name, {384}, std::vector<float>(t.data<float>(), t.data<float>() + 384)));
    }
    b.node("SkipLayerNormalization", {"x", "skip", "gamma", "beta", "bias"}, {"y", "mean", "inv_std", "sum"}, "sln",
           "com.microsoft");
    b.node("SkipSimplifiedLayerNormalization", {"y", "skip", "gamma", "bias"}, {"z"}, "ssln", "com.microsoft");
    b.node("DynamicQuantizeLinear", {"z"}, {"zq", "zs", "zz"}, "dql");  // its range found in chunks
    for (const char* out : {"z", "mean", "inv_std", "sum", "zq", "zs", "zz"}) b.output_untyped(out);
    models.emplace_back("skip layer norms, dynamic quantization", load_model(b));
  }
  for (const auto& [name, m] : models) {
    SCOPED_TRACE(name);
    InputSpec spec;
    spec.seed = 9;
    if (name == "sample_cnn.onnx") spec.dims = {{"batch", 2}};
    const NamedValues in = make_inputs(*m, spec);
    same_bits_at_1_2_3_threads(m, in);
  }
}

// One batch entry with a layer large enough that each step's products are
// shared out to the threads by R's panels (and the input projection by W's):
// the same bits at 1, 2 and 3 threads.
TEST(ReferenceRecurrent, OneEntrySharedOutPerStepKeepsItsBits) {
  const int64_t T = 5, I = 40, H = 320;
  Rng rng(47);
  auto floats = [&](const Shape& s) {
    const Tensor t = random_tensor(rng, DataType::Float, s, -0.1, 0.1);
    return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
  };
  for (const auto& [op, gates, linear] : {std::tuple<const char*, int64_t, int64_t>{"GRU", 3, 0}, {"GRU", 3, 1}, {"LSTM", 4, 0}}) {
    SCOPED_TRACE(std::string(op) + (linear ? " linear_before_reset" : ""));
    const int64_t G = gates * H;
    ModelBuilder b(14);
    b.input("X", DataType::Float, {T, 1, I});
    b.initializer(make_float_tensor("W", {1, G, I}, floats({1, G, I})));
    b.initializer(make_float_tensor("R", {1, G, H}, floats({1, G, H})));
    b.initializer(make_float_tensor("B", {1, 2 * G}, floats({1, 2 * G})));
    auto& n = b.node(op, {"X", "W", "R", "B"}, {"Y", "Yh"}, "rnn");
    attr_int(n, "hidden_size", H);
    if (linear) attr_int(n, "linear_before_reset", 1);
    b.output_untyped("Y");
    b.output_untyped("Yh");
    auto m = load_model(b);
    same_bits_at_1_2_3_threads(m, {{"X", Value(random_tensor(rng, DataType::Float, {T, 1, I}, -1, 1))}});
  }
}

// The recurrent layers step every batch entry of a thread's range together
// (one read of the weights per step): entries whose sequences end early, a
// backward direction that starts from each sequence's own end, and layout 1
// keep their meaning. A bidirectional RNN with sequence_lens against the
// defining loop written out here, and RNN, GRU (both linear_before_reset
// forms) and LSTM giving the same bits at 1, 2 and 3 threads.
TEST(ReferenceRecurrent, EntriesSteppedTogetherKeepTheirSequences) {
  const int64_t T = 7, B = 5, I = 6, H = 9;
  const std::vector<int32_t> lens = {7, 3, 0, 5, 7};
  Rng rng(46);
  auto floats = [&](const Shape& s, double lo, double hi) {
    const Tensor t = random_tensor(rng, DataType::Float, s, lo, hi);
    return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
  };
  struct Case {
    const char* op;
    int64_t gates;
    int64_t layout;
    int64_t linear_before_reset;
  };
  for (const Case c : {Case{"RNN", 1, 0, 0}, Case{"RNN", 1, 1, 0}, Case{"GRU", 3, 0, 0}, Case{"GRU", 3, 1, 1},
                       Case{"LSTM", 4, 0, 0}, Case{"LSTM", 4, 1, 0}}) {
    SCOPED_TRACE(std::string(c.op) + " layout " + std::to_string(c.layout) + (c.linear_before_reset ? " linear_before_reset" : ""));
    const int64_t G = c.gates * H;
    const std::vector<float> x = floats({T, B, I}, -1, 1), w = floats({2, G, I}, -0.5, 0.5), r = floats({2, G, H}, -0.5, 0.5),
                             bias = floats({2, 2 * G}, -0.2, 0.2);
    ModelBuilder b(14);
    const std::vector<int64_t> xs = c.layout ? std::vector<int64_t>{B, T, I} : std::vector<int64_t>{T, B, I};
    b.input("X", DataType::Float, {xs[0], xs[1], xs[2]});
    b.initializer(make_float_tensor("W", {2, G, I}, w));
    b.initializer(make_float_tensor("R", {2, G, H}, r));
    b.initializer(make_float_tensor("B", {2, 2 * G}, bias));
    onnx::TensorProto L;
    L.set_name("L");
    L.set_data_type(onnx::TensorProto::INT32);
    L.add_dims(B);
    for (int32_t v : lens) L.add_int32_data(v);
    b.initializer(L);
    auto& n = b.node(c.op, {"X", "W", "R", "B", "L"}, {"Y", "Yh"}, "rnn");
    attr_int(n, "hidden_size", H);
    attr_string(n, "direction", "bidirectional");
    attr_int(n, "layout", c.layout);
    if (c.linear_before_reset) attr_int(n, "linear_before_reset", 1);
    b.output_untyped("Y");
    b.output_untyped("Yh");
    auto m = load_model(b);
    Tensor xt = Tensor::zeros(DataType::Float, Shape(xs.begin(), xs.end()));
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < B; ++e)
        for (int64_t i = 0; i < I; ++i)
          xt.mutable_data<float>()[c.layout ? (e * T + t) * I + i : (t * B + e) * I + i] = x[size_t((t * B + e) * I + i)];
    const NamedValues out = same_bits_at_1_2_3_threads(m, {{"X", Value(xt)}});
    if (std::string(c.op) != "RNN") continue;
    // The defining loop: per direction and entry, over that entry's own steps.
    const Tensor& Y = out[0].second.tensor();
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t e = 0; e < B; ++e) {
        std::vector<double> h(static_cast<size_t>(H), 0.0);
        for (int64_t k = 0; k < lens[size_t(e)]; ++k) {
          const int64_t t = d == 0 ? k : lens[size_t(e)] - 1 - k;
          std::vector<double> next(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            double wx = 0, rh = 0;
            for (int64_t i = 0; i < I; ++i) wx += double(w[size_t((d * G + j) * I + i)]) * x[size_t((t * B + e) * I + i)];
            for (int64_t i = 0; i < H; ++i) rh += double(r[size_t((d * G + j) * H + i)]) * h[size_t(i)];
            next[size_t(j)] = std::tanh(wx + rh + bias[size_t(d * 2 * G + j)] + bias[size_t(d * 2 * G + G + j)]);
          }
          h = next;
          for (int64_t j = 0; j < H; ++j) {
            const int64_t at = c.layout ? ((e * T + t) * 2 + d) * H + j : ((t * 2 + d) * B + e) * H + j;
            EXPECT_EQ(Y.data<float>()[at], static_cast<float>(h[size_t(j)])) << "t " << t << " d " << d << " entry " << e;
          }
        }
        // Steps past an entry's length stay zero.
        for (int64_t t = lens[size_t(e)]; t < T; ++t)
          for (int64_t j = 0; j < H; ++j) {
            const int64_t at = c.layout ? ((e * T + t) * 2 + d) * H + j : ((t * 2 + d) * B + e) * H + j;
            EXPECT_EQ(Y.data<float>()[at], 0.f);
          }
      }
  }
}

