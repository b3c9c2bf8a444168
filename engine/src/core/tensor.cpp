#include "onnxscope/tensor.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/cpu_features.h"
#include "onnxscope/float_formats.h"

namespace onnxscope {

std::optional<uint64_t> checked_element_count(std::span<const int64_t> dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

std::string shape_to_string(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

namespace {
uint64_t count_or_throw(const Shape& shape) {
  auto n = checked_element_count(shape);
  if (!n) throw std::length_error("tensor shape " + shape_to_string(shape) + " is negative or overflows");
  return *n;
}
}  // namespace

Tensor Tensor::zeros(DataType type, Shape shape) {
  Tensor t;
  t.dtype_ = type;
  t.count_ = count_or_throw(shape);
  t.shape_ = std::move(shape);
  if (type == DataType::String) {
    t.strings_.resize(t.count_);
    return t;
  }
  auto bytes = storage_bytes(type, t.count_);
  if (!bytes || *bytes > SIZE_MAX) throw std::length_error("tensor byte size overflows");
  t.buffer_ = make_owned_buffer(static_cast<size_t>(*bytes));
  return t;
}

Tensor Tensor::from_buffer(DataType type, Shape shape, std::shared_ptr<Buffer> buffer) {
  Tensor t;
  t.dtype_ = type;
  t.count_ = count_or_throw(shape);
  t.shape_ = std::move(shape);
  auto bytes = storage_bytes(type, t.count_);
  if (!bytes) throw std::length_error("tensor byte size overflows or type has no fixed width");
  if (!buffer || buffer->size() < *bytes)
    throw std::length_error("buffer holds fewer bytes than the tensor needs");
  t.buffer_ = std::move(buffer);
  return t;
}

Tensor Tensor::from_strings(Shape shape, std::vector<std::string> strings) {
  Tensor t;
  t.dtype_ = DataType::String;
  t.count_ = count_or_throw(shape);
  if (strings.size() != t.count_) throw std::length_error("string count does not match shape");
  t.shape_ = std::move(shape);
  t.strings_ = std::move(strings);
  return t;
}

uint64_t Tensor::byte_size() const {
  if (dtype_ == DataType::String || dtype_ == DataType::Undefined) return 0;
  return storage_bytes(dtype_, count_).value_or(0);
}

std::byte* Tensor::mutable_raw() {
  if (!buffer_) return nullptr;
  if (std::byte* p = buffer_->mutable_data()) return p;
  // Read-only storage (a mapped file): copy on first write.
  auto copy = make_owned_buffer(buffer_->size());
  if (buffer_->size()) std::memcpy(copy->mutable_data(), buffer_->data(), buffer_->size());  // no null pointers to memcpy
  buffer_ = std::move(copy);
  return buffer_->mutable_data();
}

uint8_t packed_element_bits(DataType t, const std::byte* data, uint64_t i) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  switch (dtype_info(t).bits) {
    case 4: return (p[i / 2] >> ((i % 2) * 4)) & 0x0F;
    case 2: return (p[i / 4] >> ((i % 4) * 2)) & 0x03;
    case 6: {
      // 6-bit values form an LSB-first bit stream.
      uint64_t bit = i * 6;
      uint32_t word = p[bit / 8];
      if ((bit % 8) + 6 > 8) word |= uint32_t{p[bit / 8 + 1]} << 8;
      return static_cast<uint8_t>((word >> (bit % 8)) & 0x3F);
    }
    default: return p[i];
  }
}

void set_packed_element_bits(DataType t, std::byte* data, uint64_t i, uint8_t bits) {
  auto* p = reinterpret_cast<uint8_t*>(data);
  switch (dtype_info(t).bits) {
    case 4: {
      int sh = static_cast<int>(i % 2) * 4;
      p[i / 2] = static_cast<uint8_t>((p[i / 2] & ~(0x0F << sh)) | ((bits & 0x0F) << sh));
      return;
    }
    case 2: {
      int sh = static_cast<int>(i % 4) * 2;
      p[i / 4] = static_cast<uint8_t>((p[i / 4] & ~(0x03 << sh)) | ((bits & 0x03) << sh));
      return;
    }
    case 6: {
      uint64_t bit = i * 6;
      int sh = static_cast<int>(bit % 8);
      uint32_t mask = 0x3Fu << sh, val = uint32_t{bits & 0x3Fu} << sh;
      p[bit / 8] = static_cast<uint8_t>((p[bit / 8] & ~mask) | val);
      if (sh + 6 > 8)
        p[bit / 8 + 1] = static_cast<uint8_t>((p[bit / 8 + 1] & ~(mask >> 8)) | (val >> 8));
      return;
    }
    default: p[i] = bits;
  }
}

namespace {
// Element i of fixed-width storage, alignment-safe.
template <typename T>
T load_element(const std::byte* d, uint64_t i) {
  T v;
  std::memcpy(&v, d + i * sizeof(T), sizeof(T));
  return v;
}
}  // namespace

double Tensor::element_as_double(uint64_t i) const {
  if (i >= count_) throw std::out_of_range("tensor element index out of range");
  const std::byte* d = raw();
  auto load = [&](auto tag) { return load_element<decltype(tag)>(d, i); };
  switch (dtype_) {
    case DataType::Float: return load(float{});
    case DataType::Double: return load(double{});
    case DataType::Complex64: { float v; std::memcpy(&v, d + i * 8, 4); return v; }
    case DataType::Complex128: { double v; std::memcpy(&v, d + i * 16, 8); return v; }
    case DataType::Float16: return half_to_float(load(uint16_t{}));
    case DataType::BFloat16: return bfloat16_to_float(load(uint16_t{}));
    case DataType::Float8E4M3FN: return float8e4m3fn_to_float(load(uint8_t{}));
    case DataType::Float8E4M3FNUZ: return float8e4m3fnuz_to_float(load(uint8_t{}));
    case DataType::Float8E5M2: return float8e5m2_to_float(load(uint8_t{}));
    case DataType::Float8E5M2FNUZ: return float8e5m2fnuz_to_float(load(uint8_t{}));
    case DataType::Float8E8M0: return float8e8m0_to_float(load(uint8_t{}));
    case DataType::Float4E2M1: return float4e2m1_to_float(packed_element_bits(dtype_, d, i));
    case DataType::Float6E2M3: return float6e2m3_to_float(packed_element_bits(dtype_, d, i));
    case DataType::Float6E3M2: return float6e3m2_to_float(packed_element_bits(dtype_, d, i));
    case DataType::Uint64: return static_cast<double>(load(uint64_t{}));
    case DataType::String:
    case DataType::Undefined: throw std::invalid_argument("element_as_double on a string or empty tensor");
    default: return static_cast<double>(element_as_int64(i));
  }
}

int64_t Tensor::element_as_int64(uint64_t i) const {
  if (i >= count_) throw std::out_of_range("tensor element index out of range");
  const std::byte* d = raw();
  auto load = [&](auto tag) { return load_element<decltype(tag)>(d, i); };
  switch (dtype_) {
    case DataType::Uint8: return load(uint8_t{});
    case DataType::Int8: return load(int8_t{});
    case DataType::Uint16: return load(uint16_t{});
    case DataType::Int16: return load(int16_t{});
    case DataType::Int32: return load(int32_t{});
    case DataType::Int64: return load(int64_t{});
    case DataType::Uint32: return load(uint32_t{});
    case DataType::Uint64: return static_cast<int64_t>(load(uint64_t{}));
    case DataType::Bool: return load(uint8_t{}) != 0;
    case DataType::Uint4:
    case DataType::Uint2: return packed_element_bits(dtype_, d, i);
    case DataType::Int4: return sign_extend_int4(packed_element_bits(dtype_, d, i));
    case DataType::Int2: return sign_extend_int2(packed_element_bits(dtype_, d, i));
    default: {
      // A float as an integer: NaN and values past int64 saturate (a cast would be undefined), so a
      // caller's range check refuses them.
      const double v = element_as_double(i);
      if (std::isnan(v) || v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
      if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
      return static_cast<int64_t>(v);
    }
  }
}

void unpack_element_bits(DataType t, const std::byte* data, uint64_t first, uint64_t count, uint8_t* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  switch (dtype_info(t).bits) {
    case 4:
      for (uint64_t k = 0; k < count; ++k) {
        const uint64_t i = first + k;
        out[k] = (p[i >> 1] >> ((i & 1) * 4)) & 0x0F;
      }
      return;
    case 2:
      for (uint64_t k = 0; k < count; ++k) {
        const uint64_t i = first + k;
        out[k] = (p[i >> 2] >> ((i & 3) * 2)) & 0x03;
      }
      return;
    case 6:
      for (uint64_t k = 0; k < count; ++k) out[k] = packed_element_bits(t, data, first + k);
      return;
    default:
      if (count) std::memcpy(out, p + first, count);
  }
}

namespace {
// out[k] = f(element first + k) for fixed-width storage of T.
template <typename T, typename Out, typename F>
void decode_fixed(const std::byte* d, uint64_t first, uint64_t count, Out* out, F f) {
  const std::byte* s = d + first * sizeof(T);
  for (uint64_t k = 0; k < count; ++k) {
    T v;
    std::memcpy(&v, s + k * sizeof(T), sizeof(T));
    out[k] = static_cast<Out>(f(v));
  }
}

// out[k] = f(code of element first + k) for packed storage, through a small buffer.
template <typename Out, typename F>
void decode_packed(DataType t, const std::byte* d, uint64_t first, uint64_t count, Out* out, F f) {
  uint8_t codes[1024];
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min<uint64_t>(sizeof codes, count - done);
    unpack_element_bits(t, d, first + done, n, codes);
    for (uint64_t k = 0; k < n; ++k) out[done + k] = static_cast<Out>(f(codes[k]));
    done += n;
  }
}

const auto kSame = [](auto v) { return v; };

// The integer and bool types (and packed integers) into Out; false for any other type.
template <class Out>
bool decode_integers(DataType t, const std::byte* d, uint64_t first, uint64_t count, Out* out) {
  switch (t) {
    case DataType::Uint8: decode_fixed<uint8_t>(d, first, count, out, kSame); return true;
    case DataType::Int8: decode_fixed<int8_t>(d, first, count, out, kSame); return true;
    case DataType::Uint16: decode_fixed<uint16_t>(d, first, count, out, kSame); return true;
    case DataType::Int16: decode_fixed<int16_t>(d, first, count, out, kSame); return true;
    case DataType::Int32: decode_fixed<int32_t>(d, first, count, out, kSame); return true;
    case DataType::Uint32: decode_fixed<uint32_t>(d, first, count, out, kSame); return true;
    case DataType::Int64: decode_fixed<int64_t>(d, first, count, out, kSame); return true;
    case DataType::Uint64: decode_fixed<uint64_t>(d, first, count, out, kSame); return true;  // wraps into int64, as element_as_int64
    case DataType::Bool: decode_fixed<uint8_t>(d, first, count, out, [](uint8_t b) { return b != 0; }); return true;
    case DataType::Uint4:
    case DataType::Uint2: decode_packed(t, d, first, count, out, kSame); return true;
    case DataType::Int4: decode_packed(t, d, first, count, out, sign_extend_int4); return true;
    case DataType::Int2: decode_packed(t, d, first, count, out, sign_extend_int2); return true;
    default: return false;
  }
}
}  // namespace

namespace {
// float16 -> double by the F16C instructions where the CPU has them (exact,
// as half_to_float: a NaN stays a NaN), eight at a time.
__attribute__((target("avx2,f16c"))) void halves_to_double_f16c(const std::byte* s, uint64_t count, double* out) {
  uint64_t k = 0;
  for (; k + 8 <= count; k += 8) {
    const __m256 f = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 2 * k)));
    _mm256_storeu_pd(out + k, _mm256_cvtps_pd(_mm256_castps256_ps128(f)));
    _mm256_storeu_pd(out + k + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1)));
  }
  for (; k < count; ++k) {
    uint16_t v;
    std::memcpy(&v, s + 2 * k, 2);
    out[k] = half_to_float(v);
  }
}
}  // namespace

void Tensor::elements_as_double(uint64_t first, uint64_t count, double* out) const {
  if (first > count_ || count > count_ - first) throw std::out_of_range("tensor element range out of range");
  if (count == 0) return;
  const std::byte* d = raw();
  switch (dtype_) {
    case DataType::Float: return decode_fixed<float>(d, first, count, out, kSame);
    case DataType::Double: return decode_fixed<double>(d, first, count, out, kSame);
    case DataType::Float16:
      if (cpu_has_f16c()) return halves_to_double_f16c(d + first * 2, count, out);
      return decode_fixed<uint16_t>(d, first, count, out, half_to_float);
    case DataType::BFloat16: return decode_fixed<uint16_t>(d, first, count, out, bfloat16_to_float);
    case DataType::Float8E4M3FN: return decode_fixed<uint8_t>(d, first, count, out, float8e4m3fn_to_float);
    case DataType::Float8E4M3FNUZ: return decode_fixed<uint8_t>(d, first, count, out, float8e4m3fnuz_to_float);
    case DataType::Float8E5M2: return decode_fixed<uint8_t>(d, first, count, out, float8e5m2_to_float);
    case DataType::Float8E5M2FNUZ: return decode_fixed<uint8_t>(d, first, count, out, float8e5m2fnuz_to_float);
    case DataType::Float8E8M0: return decode_fixed<uint8_t>(d, first, count, out, float8e8m0_to_float);
    case DataType::Float4E2M1: return decode_packed(dtype_, d, first, count, out, float4e2m1_to_float);
    case DataType::Float6E2M3: return decode_packed(dtype_, d, first, count, out, float6e2m3_to_float);
    case DataType::Float6E3M2: return decode_packed(dtype_, d, first, count, out, float6e3m2_to_float);
    default:
      if (decode_integers(dtype_, d, first, count, out)) return;
      // complex (real part) and anything rarer: one element at a time
      for (uint64_t k = 0; k < count; ++k) out[k] = element_as_double(first + k);
  }
}

void Tensor::elements_as_int64(uint64_t first, uint64_t count, int64_t* out) const {
  if (first > count_ || count > count_ - first) throw std::out_of_range("tensor element range out of range");
  if (count == 0 || decode_integers(dtype_, raw(), first, count, out)) return;
  // floats saturate one at a time, as element_as_int64 does
  for (uint64_t k = 0; k < count; ++k) out[k] = element_as_int64(first + k);
}

uint64_t normalize_bool_bytes(Tensor& t) {
  if (t.dtype() != DataType::Bool || t.element_count() == 0 || !t.raw()) return 0;
  const std::byte* p = t.raw();
  uint64_t odd = 0;
  for (uint64_t i = 0; i < t.element_count(); ++i) odd += static_cast<uint8_t>(p[i]) > 1;
  if (!odd) return 0;
  std::byte* w = t.mutable_raw();
  for (uint64_t i = 0; i < t.element_count(); ++i)
    if (static_cast<uint8_t>(w[i]) > 1) w[i] = std::byte{1};
  return odd;
}

}  // namespace onnxscope
