// Integer arithmetic that overflows wraps, as numpy and ONNX Runtime do, and
// is computed without C++ undefined behaviour (the fuzzer found Mul of int64
// overflowing under UBSan): Add/Sub/Mul of int64, int32 and int16 at their
// limits, and Neg/Abs of the most negative value.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "model_builder.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

template <typename T>
T run_binary(const char* op, DataType type, T a, T b) {
  ModelBuilder mb(17);
  mb.input("a", type, {int64_t{1}});
  mb.input("b", type, {int64_t{1}});
  mb.node(op, {"a", "b"}, {"y"});
  mb.output_untyped("y");
  auto r = mb.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  Tensor ta = Tensor::zeros(type, {1}), tb = Tensor::zeros(type, {1});
  std::memcpy(ta.mutable_raw(), &a, sizeof(T));
  std::memcpy(tb.mutable_raw(), &b, sizeof(T));
  auto out = make_reference_engine()->prepare(m)->run({{"a", Value(ta)}, {"b", Value(tb)}}, {});
  T y;
  std::memcpy(&y, out[0].second.tensor().raw(), sizeof(T));
  return y;
}

template <typename T>
T run_unary(const char* op, DataType type, T a) {
  ModelBuilder mb(17);
  mb.input("a", type, {int64_t{1}});
  mb.node(op, {"a"}, {"y"});
  mb.output_untyped("y");
  auto r = mb.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  std::shared_ptr<const Model> m = std::move(r.model);
  Tensor ta = Tensor::zeros(type, {1});
  std::memcpy(ta.mutable_raw(), &a, sizeof(T));
  auto out = make_reference_engine()->prepare(m)->run({{"a", Value(ta)}}, {});
  T y;
  std::memcpy(&y, out[0].second.tensor().raw(), sizeof(T));
  return y;
}

}  // namespace

TEST(ReferenceIntegers, OverflowWrapsLikeNumpy) {
  constexpr int64_t max64 = std::numeric_limits<int64_t>::max(), min64 = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(run_binary<int64_t>("Add", DataType::Int64, max64, 1), min64);
  EXPECT_EQ(run_binary<int64_t>("Sub", DataType::Int64, min64, 1), max64);
  EXPECT_EQ(run_binary<int64_t>("Mul", DataType::Int64, int64_t{49478023249922}, int64_t{49478023249924}),
            static_cast<int64_t>(uint64_t{49478023249922} * uint64_t{49478023249924}));
  EXPECT_EQ(run_binary<int32_t>("Mul", DataType::Int32, 65536, 65536), 0);
  EXPECT_EQ(run_binary<int16_t>("Mul", DataType::Int16, int16_t{-32768}, int16_t{-1}), int16_t{-32768});
  EXPECT_EQ(run_binary<uint16_t>("Mul", DataType::Uint16, uint16_t{65535}, uint16_t{65535}), uint16_t{1});
  EXPECT_EQ(run_unary<int64_t>("Neg", DataType::Int64, min64), min64);
  EXPECT_EQ(run_unary<int32_t>("Abs", DataType::Int32, std::numeric_limits<int32_t>::min()),
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(run_unary<int32_t>("Neg", DataType::Int32, 5), -5);
}

// Pow of integers (the fuzzer found 10^huge converting inf to int64 under
// UBSan): whole exponents multiply and wrap like numpy; others go through
// double, and a result outside the type becomes its lowest value.
TEST(ReferenceIntegers, PowWrapsOrSaturatesWithoutUndefinedBehaviour) {
  EXPECT_EQ(run_binary<int64_t>("Pow", DataType::Int64, 3, 4), 81);
  EXPECT_EQ(run_binary<int64_t>("Pow", DataType::Int64, 2, 62), int64_t{1} << 62);
  EXPECT_EQ(run_binary<int64_t>("Pow", DataType::Int64, 2, 64), 0);  // wraps to zero, as numpy
  // 3^41 mod 2^64, as a signed value (numpy: np.int64(3) ** 41).
  uint64_t want = 1;
  for (int i = 0; i < 41; ++i) want *= 3;
  EXPECT_EQ(run_binary<int64_t>("Pow", DataType::Int64, 3, 41), static_cast<int64_t>(want));
  EXPECT_EQ(run_binary<int64_t>("Pow", DataType::Int64, 2, -1), 0);  // 0.5 truncates
  EXPECT_EQ(run_binary<int32_t>("Pow", DataType::Int32, -2, 31), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(run_binary<int32_t>("Pow", DataType::Int32, 7, 20), static_cast<int32_t>(static_cast<uint32_t>(79792266297612001ull)));
}
