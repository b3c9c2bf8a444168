// Reference kernels: Cast and CastLike, between every pair of types (strings, the 8-, 4- and 2-bit floats and integers included).
//
// Cast goes through one intermediate per element (`Num`: a signed or unsigned
// 64-bit integer, or a real/complex double), so every pair of the 29 element
// types is covered by one decoder and one encoder per type. The rules follow
// the onnx Python reference, i.e. numpy/ml_dtypes `astype`:
//   float -> integer: truncate toward zero, then keep the low bits (two's
//     complement wrap, also for int4/uint4/int2/uint2); NaN gives 0. Out of
//     int64 range is undefined by the spec; we give INT64_MIN's bits.
//   integer -> narrower integer: keep the low bits.
//   anything -> bool: nonzero is true (NaN is true).
//   float -> narrower float: round to nearest even once (a double is first
//     rounded to float with round-to-odd, which makes the second rounding exact).
//   FP8 honours `saturate`, FLOAT8E8M0 `saturate` and `round_mode`.
//   numbers -> string: numpy's str() of the value (see format_real).
//   string -> numbers: decimal/scientific literals, INF/NaN in any case.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

struct Num {
  enum Kind : uint8_t { kSigned, kUnsigned, kReal, kComplex } kind = kSigned;
  int64_t s = 0;
  uint64_t u = 0;
  double re = 0, im = 0;
};
Num num_signed(int64_t v) { Num n; n.kind = Num::kSigned; n.s = v; return n; }
Num num_unsigned(uint64_t v) { Num n; n.kind = Num::kUnsigned; n.u = v; return n; }
Num num_real(double v) { Num n; n.kind = Num::kReal; n.re = v; return n; }
Num num_complex(double re, double im) { Num n; n.kind = Num::kComplex; n.re = re; n.im = im; return n; }

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// A numeric literal. Integer literals stay exact when the target is an integer
// type; everything else is read as a double ("INF", "-inf", "NaN" included).
Num parse_number(const KernelContext& ctx, const std::string& raw, bool want_integer) {
  const std::string s = trimmed(raw);
  if (s.empty()) ctx.fail("cannot cast the empty string to a number");
  if (want_integer) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && *end == '\0') return num_signed(v);
    if (s[0] != '-') {
      errno = 0;
      unsigned long long uv = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0 && *end == '\0') return num_unsigned(uv);
    }
  }
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') ctx.fail("cannot cast the string '" + raw + "' to a number");
  return num_real(d);
}

std::vector<Num> decode_all(const KernelContext& ctx, const Tensor& x, bool integer_target) {
  const uint64_t n = x.element_count();
  std::vector<Num> v(n);
  auto each = [&](auto fn) {
    for (uint64_t i = 0; i < n; ++i) v[i] = fn(i);
  };
  const DataType t = x.dtype();
  const std::byte* raw = x.raw();
  switch (t) {
    case DataType::Float: each([&](uint64_t i) { return num_real(load<float>(x, i)); }); break;
    case DataType::Double: each([&](uint64_t i) { return num_real(load<double>(x, i)); }); break;
    case DataType::Float16: each([&](uint64_t i) { return num_real(half_to_float(load<uint16_t>(x, i))); }); break;
    case DataType::BFloat16: each([&](uint64_t i) { return num_real(bfloat16_to_float(load<uint16_t>(x, i))); }); break;
    case DataType::Float8E4M3FN: each([&](uint64_t i) { return num_real(float8e4m3fn_to_float(load<uint8_t>(x, i))); }); break;
    case DataType::Float8E4M3FNUZ: each([&](uint64_t i) { return num_real(float8e4m3fnuz_to_float(load<uint8_t>(x, i))); }); break;
    case DataType::Float8E5M2: each([&](uint64_t i) { return num_real(float8e5m2_to_float(load<uint8_t>(x, i))); }); break;
    case DataType::Float8E5M2FNUZ: each([&](uint64_t i) { return num_real(float8e5m2fnuz_to_float(load<uint8_t>(x, i))); }); break;
    case DataType::Float8E8M0: each([&](uint64_t i) { return num_real(float8e8m0_to_float(load<uint8_t>(x, i))); }); break;
    case DataType::Float4E2M1: each([&](uint64_t i) { return num_real(float4e2m1_to_float(packed_element_bits(t, raw, i))); }); break;
    case DataType::Float6E2M3: each([&](uint64_t i) { return num_real(float6e2m3_to_float(packed_element_bits(t, raw, i))); }); break;
    case DataType::Float6E3M2: each([&](uint64_t i) { return num_real(float6e3m2_to_float(packed_element_bits(t, raw, i))); }); break;
    case DataType::Int8: each([&](uint64_t i) { return num_signed(load<int8_t>(x, i)); }); break;
    case DataType::Int16: each([&](uint64_t i) { return num_signed(load<int16_t>(x, i)); }); break;
    case DataType::Int32: each([&](uint64_t i) { return num_signed(load<int32_t>(x, i)); }); break;
    case DataType::Int64: each([&](uint64_t i) { return num_signed(load<int64_t>(x, i)); }); break;
    case DataType::Uint8: each([&](uint64_t i) { return num_unsigned(load<uint8_t>(x, i)); }); break;
    case DataType::Uint16: each([&](uint64_t i) { return num_unsigned(load<uint16_t>(x, i)); }); break;
    case DataType::Uint32: each([&](uint64_t i) { return num_unsigned(load<uint32_t>(x, i)); }); break;
    case DataType::Uint64: each([&](uint64_t i) { return num_unsigned(load<uint64_t>(x, i)); }); break;
    case DataType::Bool: each([&](uint64_t i) { return num_signed(load<uint8_t>(x, i) != 0); }); break;
    case DataType::Int4: each([&](uint64_t i) { return num_signed(sign_extend_int4(packed_element_bits(t, raw, i))); }); break;
    case DataType::Int2: each([&](uint64_t i) { return num_signed(sign_extend_int2(packed_element_bits(t, raw, i))); }); break;
    case DataType::Uint4:
    case DataType::Uint2: each([&](uint64_t i) { return num_unsigned(packed_element_bits(t, raw, i)); }); break;
    case DataType::Complex64:
      each([&](uint64_t i) { return num_complex(load<float>(x, 2 * i), load<float>(x, 2 * i + 1)); });
      break;
    case DataType::Complex128:
      each([&](uint64_t i) { return num_complex(load<double>(x, 2 * i), load<double>(x, 2 * i + 1)); });
      break;
    case DataType::String:
      each([&](uint64_t i) { return parse_number(ctx, x.strings()[i], integer_target); });
      break;
    default: ctx.fail("cannot cast from element type " + std::string(dtype_name(t)));
  }
  return v;
}

double as_double(const Num& v) {
  switch (v.kind) {
    case Num::kSigned: return static_cast<double>(v.s);
    case Num::kUnsigned: return static_cast<double>(v.u);
    default: return v.re;
  }
}

// Correctly rounded (nearest even) float32, integers included.
float as_float(const Num& v) {
  switch (v.kind) {
    case Num::kSigned: return static_cast<float>(v.s);
    case Num::kUnsigned: return static_cast<float>(v.u);
    default: return static_cast<float>(v.re);
  }
}

// double -> float rounding to odd: the nearest float toward zero with its last
// bit set when inexact. Rounding that float again to any format of at most 22
// fraction bits gives the same result as rounding the double directly.
float round_to_odd_float(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The value as a float ready for one final rounding to a narrow format.
float for_narrow(const Num& v) {
  if (v.kind == Num::kReal || v.kind == Num::kComplex) return round_to_odd_float(v.re);
  return round_to_odd_float(as_double(v));
}

// Integer bit pattern (two's complement) of a value; the target keeps its low bits.
uint64_t int_bits(const Num& v) {
  switch (v.kind) {
    case Num::kSigned: return static_cast<uint64_t>(v.s);
    case Num::kUnsigned: return v.u;
    default: break;
  }
  const double d = v.re;
  if (std::isnan(d)) return 0;
  const double t = std::trunc(d);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) return static_cast<uint64_t>(static_cast<int64_t>(t));
  if (t >= 0 && t < 18446744073709551616.0) return static_cast<uint64_t>(t);
  return uint64_t{1} << 63;  // out of range: undefined by the spec
}

bool truthy(const Num& v) {
  switch (v.kind) {
    case Num::kSigned: return v.s != 0;
    case Num::kUnsigned: return v.u != 0;
    case Num::kReal: return v.re != 0;  // NaN != 0
    default: return v.re != 0 || v.im != 0;
  }
}

void encode_all(const KernelContext& ctx, const std::vector<Num>& v, Tensor& y, bool saturate, E8M0Round mode) {
  const uint64_t n = v.size();
  const DataType t = y.dtype();
  std::byte* raw = y.mutable_raw();
  auto each = [&](auto fn) {
    for (uint64_t i = 0; i < n; ++i) fn(i, v[i]);
  };
  auto packed = [&](auto encode) {
    each([&](uint64_t i, const Num& x) { set_packed_element_bits(t, raw, i, encode(x)); });
  };
  auto byte = [&](auto encode) {
    each([&](uint64_t i, const Num& x) { store<uint8_t>(y, i, encode(x)); });
  };
  switch (t) {
    case DataType::Float: each([&](uint64_t i, const Num& x) { store<float>(y, i, as_float(x)); }); break;
    case DataType::Double: each([&](uint64_t i, const Num& x) { store<double>(y, i, as_double(x)); }); break;
    case DataType::Float16:
      each([&](uint64_t i, const Num& x) { store<uint16_t>(y, i, float_to_half(for_narrow(x))); });
      break;
    case DataType::BFloat16:
      each([&](uint64_t i, const Num& x) { store<uint16_t>(y, i, float_to_bfloat16(for_narrow(x))); });
      break;
    case DataType::Float8E4M3FN: byte([&](const Num& x) { return float_to_float8e4m3fn(for_narrow(x), saturate); }); break;
    case DataType::Float8E4M3FNUZ: byte([&](const Num& x) { return float_to_float8e4m3fnuz(for_narrow(x), saturate); }); break;
    case DataType::Float8E5M2: byte([&](const Num& x) { return float_to_float8e5m2(for_narrow(x), saturate); }); break;
    case DataType::Float8E5M2FNUZ: byte([&](const Num& x) { return float_to_float8e5m2fnuz(for_narrow(x), saturate); }); break;
    // onnx converts to float32 first (round to nearest) and derives E8M0 from its bits.
    case DataType::Float8E8M0: byte([&](const Num& x) { return float_to_float8e8m0(as_float(x), saturate, mode); }); break;
    case DataType::Float4E2M1: packed([&](const Num& x) { return float_to_float4e2m1(for_narrow(x)); }); break;
    case DataType::Float6E2M3: packed([&](const Num& x) { return float_to_float6e2m3(for_narrow(x)); }); break;
    case DataType::Float6E3M2: packed([&](const Num& x) { return float_to_float6e3m2(for_narrow(x)); }); break;
    case DataType::Int8: each([&](uint64_t i, const Num& x) { store<int8_t>(y, i, static_cast<int8_t>(int_bits(x))); }); break;
    case DataType::Int16: each([&](uint64_t i, const Num& x) { store<int16_t>(y, i, static_cast<int16_t>(int_bits(x))); }); break;
    case DataType::Int32: each([&](uint64_t i, const Num& x) { store<int32_t>(y, i, static_cast<int32_t>(int_bits(x))); }); break;
    case DataType::Int64: each([&](uint64_t i, const Num& x) { store<int64_t>(y, i, static_cast<int64_t>(int_bits(x))); }); break;
    case DataType::Uint8: each([&](uint64_t i, const Num& x) { store<uint8_t>(y, i, static_cast<uint8_t>(int_bits(x))); }); break;
    case DataType::Uint16: each([&](uint64_t i, const Num& x) { store<uint16_t>(y, i, static_cast<uint16_t>(int_bits(x))); }); break;
    case DataType::Uint32: each([&](uint64_t i, const Num& x) { store<uint32_t>(y, i, static_cast<uint32_t>(int_bits(x))); }); break;
    case DataType::Uint64: each([&](uint64_t i, const Num& x) { store<uint64_t>(y, i, int_bits(x)); }); break;
    case DataType::Int4:
    case DataType::Uint4:
    case DataType::Int2:
    case DataType::Uint2: packed([&](const Num& x) { return static_cast<uint8_t>(int_bits(x)); }); break;
    case DataType::Bool: each([&](uint64_t i, const Num& x) { store<uint8_t>(y, i, truthy(x) ? 1 : 0); }); break;
    case DataType::Complex64:
      each([&](uint64_t i, const Num& x) {
        store<float>(y, 2 * i, as_float(x));
        store<float>(y, 2 * i + 1, static_cast<float>(x.kind == Num::kComplex ? x.im : 0.0));
      });
      break;
    case DataType::Complex128:
      each([&](uint64_t i, const Num& x) {
        store<double>(y, 2 * i, as_double(x));
        store<double>(y, 2 * i + 1, x.kind == Num::kComplex ? x.im : 0.0);
      });
      break;
    default: ctx.fail("cannot cast to element type " + std::string(dtype_name(t)));
  }
}

// numpy (2.x) prints the shortest digits that read back as the same value of
// the source type, positionally ("0.001", "100000.0") when 1e-4 <= |v| <
// `sci_from`, else in scientific form ("1e-05", "1.5e+07"). `sci_from` is 1e16
// for double, 1e6 for float and 1e3 for float16; numpy cannot print bfloat16
// or the 8/6/4-bit floats, which we print by the float rule.
template <typename RoundTrips>
std::string format_real(double v, double sci_from, RoundTrips round_trips) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, v);
    if (round_trips(buf)) break;
  }
  // buf is "-d.ddde+XX": split into sign, digits and decimal exponent.
  std::string s(buf);
  const bool neg = s[0] == '-';
  if (neg) s.erase(0, 1);
  const size_t epos = s.find('e');
  const int exp10 = std::atoi(s.c_str() + epos + 1);
  std::string digits;
  for (size_t k = 0; k < epos; ++k)
    if (s[k] != '.') digits += s[k];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

  std::string out = neg ? "-" : "";
  const double a = std::fabs(v);
  if (a >= 1e-4 && a < sci_from) {
    if (exp10 >= 0) {
      std::string ip = digits.substr(0, std::min<size_t>(digits.size(), static_cast<size_t>(exp10) + 1));
      while (ip.size() < static_cast<size_t>(exp10) + 1) ip += '0';
      std::string fp = digits.size() > ip.size() ? digits.substr(ip.size()) : "0";
      if (digits.size() <= static_cast<size_t>(exp10) + 1) fp = "0";
      out += ip + "." + fp;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp10 - 1), '0') + digits;
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += e;
  }
  return out;
}

std::string format_double(double v) {
  return format_real(v, 1e16, [&](const char* s) { return std::strtod(s, nullptr) == v; });
}

std::string format_float(float v) {
  return format_real(v, 1e6, [&](const char* s) { return std::strtof(s, nullptr) == v; });
}

// A narrow float given by its bits and its codec.
template <typename Enc, typename Dec>
std::string format_narrow(uint32_t bits, Enc encode, Dec decode, double sci_from) {
  const float v = decode(bits);
  return format_real(v, sci_from, [&](const char* s) { return decode(encode(std::strtof(s, nullptr))) == v; });
}

// numpy's complex: "(1+0j)", "(0.5-2.5j)"; integral parts lose their ".0".
std::string format_complex(double re, double im, bool single) {
  auto part = [&](double x) {
    std::string s = single ? format_float(static_cast<float>(x)) : format_double(x);
    if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
    return s;
  };
  std::string out(1, '(');
  out += part(re);
  out += std::signbit(im) && !std::isnan(im) ? '-' : '+';
  out += part(std::fabs(im));
  out += "j)";
  return out;
}

void to_strings(const KernelContext& ctx, const Tensor& x, Tensor& y) {
  const DataType t = x.dtype();
  const std::byte* raw = x.raw();
  std::vector<std::string>& out = y.mutable_strings();
  auto each = [&](auto fn) {
    for (uint64_t i = 0; i < x.element_count(); ++i) out[i] = fn(i);
  };
  auto narrow8 = [&](auto enc, auto dec) {
    each([&](uint64_t i) {
      return format_narrow(load<uint8_t>(x, i), [&](float f) { return enc(f); }, [&](uint32_t b) { return dec(static_cast<uint8_t>(b)); }, 1e6);
    });
  };
  auto narrow_packed = [&](auto enc, auto dec) {
    each([&](uint64_t i) {
      return format_narrow(packed_element_bits(t, raw, i), [&](float f) { return enc(f); }, [&](uint32_t b) { return dec(static_cast<uint8_t>(b)); }, 1e6);
    });
  };
  switch (t) {
    case DataType::String: out = x.strings(); break;
    case DataType::Bool: each([&](uint64_t i) { return std::string(load<uint8_t>(x, i) ? "True" : "False"); }); break;
    case DataType::Float: each([&](uint64_t i) { return format_float(load<float>(x, i)); }); break;
    case DataType::Double: each([&](uint64_t i) { return format_double(load<double>(x, i)); }); break;
    case DataType::Float16:
      each([&](uint64_t i) {
        return format_narrow(load<uint16_t>(x, i), [](float f) { return float_to_half(f); },
                             [](uint32_t b) { return half_to_float(static_cast<uint16_t>(b)); }, 1e3);
      });
      break;
    case DataType::BFloat16:
      each([&](uint64_t i) {
        return format_narrow(load<uint16_t>(x, i), [](float f) { return float_to_bfloat16(f); },
                             [](uint32_t b) { return bfloat16_to_float(static_cast<uint16_t>(b)); }, 1e6);
      });
      break;
    case DataType::Float8E4M3FN: narrow8([](float f) { return float_to_float8e4m3fn(f); }, float8e4m3fn_to_float); break;
    case DataType::Float8E4M3FNUZ: narrow8([](float f) { return float_to_float8e4m3fnuz(f); }, float8e4m3fnuz_to_float); break;
    case DataType::Float8E5M2: narrow8([](float f) { return float_to_float8e5m2(f); }, float8e5m2_to_float); break;
    case DataType::Float8E5M2FNUZ: narrow8([](float f) { return float_to_float8e5m2fnuz(f); }, float8e5m2fnuz_to_float); break;
    case DataType::Float8E8M0:
      narrow8([](float f) { return float_to_float8e8m0(f, true, E8M0Round::Nearest); }, float8e8m0_to_float);
      break;
    case DataType::Float4E2M1: narrow_packed([](float f) { return float_to_float4e2m1(f); }, float4e2m1_to_float); break;
    case DataType::Float6E2M3: narrow_packed([](float f) { return float_to_float6e2m3(f); }, float6e2m3_to_float); break;
    case DataType::Float6E3M2: narrow_packed([](float f) { return float_to_float6e3m2(f); }, float6e3m2_to_float); break;
    case DataType::Complex64:
      each([&](uint64_t i) { return format_complex(load<float>(x, 2 * i), load<float>(x, 2 * i + 1), true); });
      break;
    case DataType::Complex128:
      each([&](uint64_t i) { return format_complex(load<double>(x, 2 * i), load<double>(x, 2 * i + 1), false); });
      break;
    case DataType::Uint64: each([&](uint64_t i) { return std::to_string(load<uint64_t>(x, i)); }); break;
    default:
      if (!dtype_info(t).is_integer) ctx.fail("cannot cast element type " + std::string(dtype_name(t)) + " to string");
      each([&](uint64_t i) { return std::to_string(x.element_as_int64(i)); });
  }
}

E8M0Round round_mode_of(const KernelContext& ctx) {
  const std::string m = ctx.attr_string("round_mode", "up");
  if (m == "up") return E8M0Round::Up;
  if (m == "down") return E8M0Round::Down;
  if (m == "nearest") return E8M0Round::Nearest;
  ctx.fail("round_mode must be 'up', 'down' or 'nearest', got '" + m + "'");
}

// The plain numeric types (float, double, the 8- to 64-bit integers, bool)
// each way: the decoding and encoding above, an element at a time (no
// vector of every element's Num: 40 bytes each), in chunks across the
// threads. A quantized GPT-2's int32 -> float Casts took 37% of its run.
template <typename S> Num decode_one(S v) {
  if constexpr (std::is_same_v<S, bool>) return num_signed(v ? 1 : 0);
  else if constexpr (std::is_floating_point_v<S>) return num_real(v);
  else if constexpr (std::is_signed_v<S>) return num_signed(v);
  else return num_unsigned(v);
}

template <typename D> D encode_one(const Num& v) {
  if constexpr (std::is_same_v<D, bool>) return truthy(v);
  else if constexpr (std::is_same_v<D, float>) return as_float(v);
  else if constexpr (std::is_same_v<D, double>) return as_double(v);
  else return static_cast<D>(int_bits(v));
}

template <typename S, typename D> void cast_plain(const Tensor& x, Tensor& y) {
  const std::byte* in = x.raw();
  std::byte* out = y.mutable_raw();
  for_chunks(x.element_count(), [&](uint64_t lo, uint64_t hi) {
    for (uint64_t i = lo; i < hi; ++i) {
      const S v = load_at<S>(in, i);  // (bool: a byte other than 0 reads true)
      const D r = encode_one<D>(decode_one<S>(v));
      if constexpr (std::is_same_v<D, bool>) out[i] = std::byte{static_cast<unsigned char>(r ? 1 : 0)};
      else store_at<D>(out, i, r);
    }
  });
}

// Calls fn(T{}) for a plain numeric type; false for the others.
template <typename Fn> bool with_plain_type(DataType t, Fn fn) {
  switch (t) {
    case DataType::Float: fn(float{}); return true;
    case DataType::Double: fn(double{}); return true;
    case DataType::Int8: fn(int8_t{}); return true;
    case DataType::Int16: fn(int16_t{}); return true;
    case DataType::Int32: fn(int32_t{}); return true;
    case DataType::Int64: fn(int64_t{}); return true;
    case DataType::Uint8: fn(uint8_t{}); return true;
    case DataType::Uint16: fn(uint16_t{}); return true;
    case DataType::Uint32: fn(uint32_t{}); return true;
    case DataType::Uint64: fn(uint64_t{}); return true;
    case DataType::Bool: fn(bool{}); return true;
    default: return false;
  }
}

bool cast_plain_types(const Tensor& x, Tensor& y) {
  bool done = false;
  with_plain_type(x.dtype(), [&](auto s) {
    done = with_plain_type(y.dtype(), [&](auto d) { cast_plain<decltype(s), decltype(d)>(x, y); });
  });
  return done;
}

void cast_to(KernelContext& ctx, const Tensor& x, DataType to) {
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  const E8M0Round mode = round_mode_of(ctx);
  if (to == x.dtype()) {
    ctx.set_output(0, Value(x));
    return;
  }
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  if (to == DataType::String) {
    to_strings(ctx, x, y);
  } else if (x.is_string() && to == DataType::Bool) {
    // numpy: a string is true when it is not empty (so "0" and "False" are true).
    for (uint64_t i = 0; i < x.element_count(); ++i) store<uint8_t>(y, i, x.strings()[i].empty() ? 0 : 1);
  } else if (!cast_plain_types(x, y)) {
    const DTypeInfo& info = dtype_info(to);
    encode_all(ctx, decode_all(ctx, x, info.is_integer), y, saturate, mode);
  }
}

}  // namespace

void Cast(KernelContext& ctx) { cast_to(ctx, ctx.input(0), target_type(ctx)); }

void CastLike(KernelContext& ctx) { cast_to(ctx, ctx.input(0), ctx.input(1).dtype()); }

}  // namespace onnxscope::ref
