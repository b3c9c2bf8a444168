#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "onnxscope/dtype.h"
#include "onnxscope/tensor.h"

using namespace onnxscope;

TEST(DType, NamesRoundTripForEveryType) {
  for (int32_t v = 1; v <= kMaxDataType; ++v) {
    ASSERT_TRUE(is_known_dtype(v));
    auto t = static_cast<DataType>(v);
    EXPECT_EQ(static_cast<int32_t>(dtype_info(t).type), v);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
    EXPECT_EQ(dtype_from_name(dtype_info(t).onnx_name), t);
    EXPECT_EQ(dtype_from_name("tensor(" + std::string(dtype_name(t)) + ")"), t);
  }
  EXPECT_FALSE(is_known_dtype(0));
  EXPECT_FALSE(is_known_dtype(kMaxDataType + 1));
  EXPECT_FALSE(is_known_dtype(-3));
  EXPECT_FALSE(dtype_from_name("float7"));
}

TEST(DType, StorageBytesFollowThePackingRules) {
  EXPECT_EQ(storage_bytes(DataType::Float, 3), 12u);
  EXPECT_EQ(storage_bytes(DataType::Complex128, 2), 32u);
  EXPECT_EQ(storage_bytes(DataType::Bool, 5), 5u);
  EXPECT_EQ(storage_bytes(DataType::Int4, 3), 2u);   // two per byte, rounded up
  EXPECT_EQ(storage_bytes(DataType::Uint4, 4), 2u);
  EXPECT_EQ(storage_bytes(DataType::Float4E2M1, 1), 1u);
  EXPECT_EQ(storage_bytes(DataType::Int2, 5), 2u);   // four per byte
  EXPECT_EQ(storage_bytes(DataType::Uint2, 8), 2u);
  EXPECT_EQ(storage_bytes(DataType::Float6E2M3, 4), 3u);  // 4 values in 3 bytes
  EXPECT_EQ(storage_bytes(DataType::Float6E3M2, 5), 4u);  // ceil(30/8)
  EXPECT_FALSE(storage_bytes(DataType::String, 1));
  EXPECT_FALSE(storage_bytes(DataType::Double, UINT64_MAX / 4));  // overflow
}

TEST(Tensor, ElementCountRejectsNegativeAndOverflow) {
  EXPECT_EQ(checked_element_count(std::vector<int64_t>{2, 3, 4}), 24u);
  EXPECT_EQ(checked_element_count(std::vector<int64_t>{}), 1u);
  EXPECT_EQ(checked_element_count(std::vector<int64_t>{0, 5}), 0u);
  EXPECT_FALSE(checked_element_count(std::vector<int64_t>{2, -1}));
  EXPECT_FALSE(checked_element_count(std::vector<int64_t>{INT64_MAX, INT64_MAX, 4}));
  EXPECT_THROW(Tensor::zeros(DataType::Float, {INT64_MAX, 16}), std::length_error);
}

// Kernels' 64-byte vector loads and stores: at malloc's 16-byte alignment
// each crossed two cache lines. Sizes around the allocator's small-block,
// heap and mmap thresholds; the bytes are zero either way.
TEST(Tensor, ZerosStartOnACacheLineAndAreZero) {
  std::vector<Tensor> held;  // kept, so each allocation lands somewhere new
  for (int64_t n : {1, 3, 15, 16, 17, 1000, 4093, 32768, 100003, 1 << 20}) {
    Tensor t = Tensor::zeros(DataType::Float, {n});
    const auto at = reinterpret_cast<std::uintptr_t>(t.raw());
    EXPECT_EQ(at % 64, 0u) << n << " floats at " << at;
    const auto* f = reinterpret_cast<const float*>(t.raw());
    EXPECT_EQ(f[0], 0.0f);
    EXPECT_EQ(f[n - 1], 0.0f);
    held.push_back(std::move(t));
  }
}

TEST(Tensor, PackedBitsRoundTripForSubByteTypes) {
  for (DataType t : {DataType::Int4, DataType::Uint2, DataType::Float6E2M3}) {
    const uint32_t bits = dtype_info(t).bits;
    Tensor x = Tensor::zeros(t, {11});
    for (uint64_t i = 0; i < 11; ++i)
      set_packed_element_bits(t, x.mutable_raw(), i, static_cast<uint8_t>((i * 7 + 3) & ((1u << bits) - 1)));
    for (uint64_t i = 0; i < 11; ++i)
      EXPECT_EQ(packed_element_bits(t, x.raw(), i), (i * 7 + 3) & ((1u << bits) - 1)) << dtype_name(t) << " " << i;
  }
  // int4 layout: first element in the low nibble.
  Tensor y = Tensor::zeros(DataType::Int4, {2});
  set_packed_element_bits(DataType::Int4, y.mutable_raw(), 0, 0x7);
  set_packed_element_bits(DataType::Int4, y.mutable_raw(), 1, 0x8);
  EXPECT_EQ(static_cast<uint8_t>(y.raw()[0]), 0x87);
  EXPECT_EQ(y.element_as_int64(0), 7);
  EXPECT_EQ(y.element_as_int64(1), -8);
}

TEST(Tensor, ElementAccessWidensEveryNumericType) {
  Tensor h = Tensor::zeros(DataType::Float16, {1});
  h.mutable_data<uint16_t>()[0] = 0x3C00;  // 1.0
  EXPECT_EQ(h.element_as_double(0), 1.0);
  Tensor b = Tensor::zeros(DataType::BFloat16, {1});
  b.mutable_data<uint16_t>()[0] = 0xC040;  // -3.0
  EXPECT_EQ(b.element_as_double(0), -3.0);
  Tensor u = Tensor::zeros(DataType::Uint64, {1});
  u.mutable_data<uint64_t>()[0] = 1ull << 40;
  EXPECT_EQ(u.element_as_int64(0), int64_t{1} << 40);
  EXPECT_THROW(u.element_as_double(1), std::out_of_range);
}

// The bulk decoders (what diff and the dump statistics use) give exactly what
// the one-element accessors give, for every numeric type, from offsets that
// start inside a packed byte, over random bytes (NaN, Inf and bool bytes
// other than 0 and 1 included).
TEST(Tensor, RangeDecodeMatchesElementAccessForEveryType) {
  std::mt19937 rng(7);
  for (int code = 1; code <= kMaxDataType; ++code) {
    const auto t = static_cast<DataType>(code);
    if (t == DataType::String) continue;
    Tensor x = Tensor::zeros(t, {4099});
    std::byte* p = x.mutable_raw();
    for (uint64_t i = 0; i < x.byte_size(); ++i) p[i] = static_cast<std::byte>(rng());
    for (uint64_t first : {0ull, 1ull, 3ull, 1027ull}) {
      const uint64_t n = x.element_count() - first;
      std::vector<double> d(n);
      std::vector<int64_t> v(n);
      x.elements_as_double(first, n, d.data());
      x.elements_as_int64(first, n, v.data());
      for (uint64_t k = 0; k < n; ++k) {
        const double want = x.element_as_double(first + k);
        ASSERT_TRUE(d[k] == want || (std::isnan(d[k]) && std::isnan(want)))
            << dtype_name(t) << " element " << first + k << ": " << d[k] << " vs " << want;
        ASSERT_EQ(v[k], x.element_as_int64(first + k)) << dtype_name(t) << " element " << first + k;
      }
    }
    std::vector<double> one(1);
    EXPECT_THROW(x.elements_as_double(4099, 1, one.data()), std::out_of_range) << dtype_name(t);
    EXPECT_THROW(x.elements_as_double(1, UINT64_MAX, one.data()), std::out_of_range) << dtype_name(t);
  }
}

// Every float16 bit pattern decoded in bulk (eight at a time where the CPU
// has F16C) gives what the one-element accessor gives; NaN stays NaN.
TEST(Tensor, BulkFloat16DecodeGivesEveryPatternsValue) {
  Tensor x = Tensor::zeros(DataType::Float16, {65536 + 5});
  for (uint32_t i = 0; i < 65536 + 5; ++i) x.mutable_data<uint16_t>()[i] = static_cast<uint16_t>(i);
  std::vector<double> d(x.element_count());
  x.elements_as_double(0, d.size(), d.data());
  for (uint64_t k = 0; k < d.size(); ++k) {
    const double want = x.element_as_double(k);
    ASSERT_TRUE(d[k] == want || (std::isnan(d[k]) && std::isnan(want))) << "pattern " << k << ": " << d[k] << " vs " << want;
    ASSERT_EQ(std::signbit(d[k]), std::signbit(want)) << "pattern " << k;
  }
}
