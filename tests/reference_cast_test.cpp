// The reference's Cast between the plain numeric types (float, double, the
// 8- to 64-bit integers, bool), every pair each way, against the rules
// written out (numpy's astype, as the onnx reference): integers to floats
// rounded once to nearest, floats to integers truncated then their low bits
// (NaN 0, past uint64 INT64_MIN's bits), integers to integers their low bits,
// anything to bool nonzero (NaN true). Values at every type's limits, the
// floats' specials and halves, 40000 of them so the threads split the work;
// at 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/thread_pool.h"
#include "model_builder.h"
#include "onnxscope/reference.h"
#include "ops_harness.h"

using namespace onnxscope;
using namespace onnxscope::test;
using namespace onnxscope::test::harness;

namespace {

const DataType kTypes[] = {DataType::Float, DataType::Double, DataType::Int8,   DataType::Int16,
                           DataType::Int32, DataType::Int64,  DataType::Uint8,  DataType::Uint16,
                           DataType::Uint32, DataType::Uint64, DataType::Bool};

bool is_float(DataType t) { return t == DataType::Float || t == DataType::Double; }
bool is_unsigned(DataType t) {
  return t == DataType::Uint8 || t == DataType::Uint16 || t == DataType::Uint32 || t == DataType::Uint64 || t == DataType::Bool;
}
size_t width(DataType t) {
  switch (t) {
    case DataType::Double: case DataType::Int64: case DataType::Uint64: return 8;
    case DataType::Float: case DataType::Int32: case DataType::Uint32: return 4;
    case DataType::Int16: case DataType::Uint16: return 2;
    default: return 1;
  }
}

// Element i of a tensor of type t: a float as double, an integer as its
// two's-complement bits sign- or zero-extended to 64.
struct Elem {
  double d = 0;
  uint64_t bits = 0;
};
Elem elem(const Tensor& x, uint64_t i) {
  const std::byte* p = x.raw() + i * width(x.dtype());
  Elem e;
  switch (x.dtype()) {
    case DataType::Float: { float f; std::memcpy(&f, p, 4); e.d = f; break; }
    case DataType::Double: std::memcpy(&e.d, p, 8); break;
    case DataType::Int8: { int8_t v; std::memcpy(&v, p, 1); e.bits = static_cast<uint64_t>(int64_t{v}); break; }
    case DataType::Int16: { int16_t v; std::memcpy(&v, p, 2); e.bits = static_cast<uint64_t>(int64_t{v}); break; }
    case DataType::Int32: { int32_t v; std::memcpy(&v, p, 4); e.bits = static_cast<uint64_t>(int64_t{v}); break; }
    case DataType::Int64: std::memcpy(&e.bits, p, 8); break;
    case DataType::Uint8: case DataType::Bool: { uint8_t v; std::memcpy(&v, p, 1); e.bits = v; break; }
    case DataType::Uint16: { uint16_t v; std::memcpy(&v, p, 2); e.bits = v; break; }
    case DataType::Uint32: { uint32_t v; std::memcpy(&v, p, 4); e.bits = v; break; }
    default: std::memcpy(&e.bits, p, 8); break;
  }
  return e;
}

// The cast of element e of type `from` to `to`, written to out.
void expected(DataType from, const Elem& e, DataType to, std::byte* out) {
  if (from == DataType::Bool) {  // a byte other than 0 reads true
    Elem b;
    b.bits = e.bits != 0 ? 1 : 0;
    return expected(DataType::Uint8, b, to, out);
  }
  if (to == DataType::Bool) {
    const uint8_t v = is_float(from) ? (e.d != 0 ? 1 : 0) : (e.bits != 0 ? 1 : 0);  // NaN != 0
    std::memcpy(out, &v, 1);
    return;
  }
  if (is_float(to)) {
    const double dv = is_float(from) ? e.d : 0;
    if (to == DataType::Float) {
      const float f = is_float(from) ? static_cast<float>(dv)
                      : is_unsigned(from) ? static_cast<float>(e.bits) : static_cast<float>(static_cast<int64_t>(e.bits));
      std::memcpy(out, &f, 4);
    } else {
      const double d = is_float(from) ? dv
                       : is_unsigned(from) ? static_cast<double>(e.bits) : static_cast<double>(static_cast<int64_t>(e.bits));
      std::memcpy(out, &d, 8);
    }
    return;
  }
  uint64_t bits = e.bits;
  if (is_float(from)) {
    const double t = std::trunc(e.d);
    if (std::isnan(e.d)) bits = 0;
    else if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) bits = static_cast<uint64_t>(static_cast<int64_t>(t));
    else if (t >= 0 && t < 18446744073709551616.0) bits = static_cast<uint64_t>(t);
    else bits = uint64_t{1} << 63;
  }
  std::memcpy(out, &bits, width(to));  // the low bytes (little-endian)
}

// n values of type t: its limits and the floats' specials first, then random bits.
Tensor values(DataType t, uint64_t n, Rng& rng) {
  Tensor x = Tensor::zeros(t, {static_cast<int64_t>(n)});
  std::byte* p = x.mutable_raw();
  const size_t w = width(t);
  std::vector<double> special = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 255.9, -1.1, 16777217.0,
                                 4294967295.7, 3e9, -3e9, 1e10, -1e10, 9.3e18, 1e19, 1.8e19, 2e19, -1e19, 1e30, 1e-30};
  for (uint64_t i = 0; i < n; ++i) {
    if (is_float(t)) {
      const double v = i < special.size() ? special[i] : std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(pick(rng, -5, 70)));
      if (t == DataType::Float) {
        const float f = static_cast<float>(v);
        std::memcpy(p + i * 4, &f, 4);
      } else {
        std::memcpy(p + i * 8, &v, 8);
      }
      continue;
    }
    // Integers: 0, 1, all ones, the sign bit alone and below it, then random bits.
    const uint64_t top = uint64_t{1} << (8 * w - 1);
    const uint64_t limits[] = {0, 1, ~uint64_t{0}, top, top - 1, 2, 255, 256};
    uint64_t b = i < 8 ? limits[i] : (uint64_t{rng()} << 32) | uint64_t{rng()};
    if (t == DataType::Bool) b = i < 3 ? i : b % 3;  // 0, 1 and a byte of 2 (true)
    std::memcpy(p + i * w, &b, w);
  }
  return x;
}

}  // namespace

TEST(ReferenceCast, PlainNumericTypesFollowTheRules) {
  Rng rng(44);
  constexpr uint64_t n = 40000;
  for (DataType from : kTypes) {
    const Tensor x = values(from, n, rng);
    for (DataType to : kTypes) {
      if (to == from) continue;
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to)));
      ModelBuilder mb(21);
      mb.input("x", from, {static_cast<int64_t>(n)});
      attr_int(mb.node("Cast", {"x"}, {"y"}, "c"), "to", static_cast<int64_t>(to));
      mb.output_untyped("y");
      auto r = mb.load();
      ASSERT_TRUE(r.ok()) << dump(r);
      std::shared_ptr<const Model> m = std::move(r.model);
      std::vector<std::byte> want(n * width(to));
      for (uint64_t i = 0; i < n; ++i) expected(from, elem(x, i), to, want.data() + i * width(to));
      for (int threads : {1, 2}) {
        cpu::set_thread_count(threads);
        auto out = make_reference_engine()->prepare(m)->run({{"x", Value(x)}}, {});
        const Tensor& y = out[0].second.tensor();
        ASSERT_EQ(y.dtype(), to);
        ASSERT_EQ(y.byte_size(), want.size());
        for (uint64_t i = 0; i < n; ++i)
          ASSERT_EQ(std::memcmp(y.raw() + i * width(to), want.data() + i * width(to), width(to)), 0)
              << "element " << i << " at " << threads << " threads";
      }
      cpu::set_thread_count(0);
    }
  }
}
