// Narrow floating-point conversions, bit-exact with the onnx 1.23.2 Python
// reference. onnx itself does little here: Cast with saturate=true on FP8 is
// numpy.clip(x, finfo.min, finfo.max) followed by an ml_dtypes cast, everything
// else is a plain ml_dtypes (or numpy, for float16) cast, and E8M0 has its own
// bit-level routine in numpy_helper.to_float8e8m0. So the NaN and overflow
// encodings below are ml_dtypes' choices, spelled out per format.
#include "onnxscope/float_formats.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

namespace onnxscope {
namespace {

uint32_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
float float_of(uint32_t u) { return std::bit_cast<float>(u); }

constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietNaN = 0x7FC00000u;

// Rounds a finite, non-negative float32 (given by its bits) to nearest even on
// the grid of a format with `mbits` mantissa bits and exponent bias `bias`,
// pretending the exponent range were unbounded above. Returns the magnitude
// code (exponent field << mbits | mantissa). Codes are monotonic in the value,
// so a result above the format's largest finite code means overflow, and a
// mantissa carry lands on the next binade's code (subnormal -> min normal
// included) without special cases.
uint32_t round_magnitude(uint32_t abs_bits, int mbits, int bias) {
  const uint32_t exp = abs_bits >> 23;
  const uint32_t man = abs_bits & 0x7FFFFFu;
  // Value = sig * 2^sexp exactly.
  const uint32_t sig = exp == 0 ? man : (man | 0x800000u);
  const int sexp = exp == 0 ? -149 : static_cast<int>(exp) - 150;
  const int unbiased = exp == 0 ? -126 : static_cast<int>(exp) - 127;
  // Target exponent field; values below the normal range use field 1's
  // quantum, which is the subnormal quantum.
  const int field = std::max(unbiased + bias, 1);
  const int quantum_exp = field - bias - mbits;
  const int shift = quantum_exp - sexp;  // >= 23 - mbits > 0 for every format here
  uint32_t k = 0;
  if (shift < 32) {  // otherwise sig < 2^24 is below half a quantum: k = 0
    k = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (k & 1u))) ++k;
  }
  // For field >= 1, k counts quanta including the implicit leading one
  // (k in [2^mbits, 2^(mbits+1)]); in the subnormal case field is 1 and
  // k < 2^mbits + 1. Both map to the code below.
  return (static_cast<uint32_t>(field - 1) << mbits) + k;
}

// A float32 split into what the per-format encoders need.
struct Rounded {
  bool negative = false;
  bool nan = false;
  bool overflow = false;  // +-inf, or rounds past max_code
  uint32_t code = 0;      // magnitude code when neither nan nor overflow
};

Rounded round_to(float f, int mbits, int bias, uint32_t max_code) {
  const uint32_t u = bits_of(f);
  const uint32_t a = u & 0x7FFFFFFFu;
  Rounded r;
  r.negative = (u >> 31) != 0;
  if (a > kF32Inf) {
    r.nan = true;
  } else if (a == kF32Inf) {
    r.overflow = true;
  } else {
    r.code = round_magnitude(a, mbits, bias);
    r.overflow = r.code > max_code;
  }
  return r;
}

// Inverse of round_magnitude for an in-range code; exact in float32.
float decode_magnitude(uint32_t code, int mbits, int bias) {
  const uint32_t field = code >> mbits;
  const uint32_t man = code & ((1u << mbits) - 1u);
  if (field == 0) return std::ldexp(static_cast<float>(man), 1 - bias - mbits);
  return std::ldexp(static_cast<float>(man | (1u << mbits)),
                    static_cast<int>(field) - bias - mbits);
}

float with_sign(float magnitude, bool negative) {
  return negative ? -magnitude : magnitude;
}

// ml_dtypes turns every narrow NaN into float32's canonical quiet NaN, keeping
// the sign bit of the encoding.
float decoded_nan(bool negative) {
  return float_of(kF32QuietNaN | (negative ? 0x80000000u : 0u));
}

// Format parameters: mantissa bits, bias, largest finite magnitude code.
struct Fmt {
  int mbits;
  int bias;
  uint32_t max_code;
};
constexpr Fmt kHalf{10, 15, 0x7BFF};      // 65504
constexpr Fmt kBF16{7, 127, 0x7F7F};      // ~3.39e38
constexpr Fmt kE4M3FN{3, 7, 0x7E};        // 448 (0x7F is NaN)
constexpr Fmt kE4M3FNUZ{3, 8, 0x7F};      // 240
constexpr Fmt kE5M2{2, 15, 0x7B};         // 57344 (0x7C is inf)
constexpr Fmt kE5M2FNUZ{2, 16, 0x7F};     // 57344
constexpr Fmt kE2M1{1, 1, 0x7};           // 6
constexpr Fmt kE2M3{3, 1, 0x1F};          // 7.5
constexpr Fmt kE3M2{2, 3, 0x1F};          // 28

Rounded round_to(float f, const Fmt& fmt) {
  return round_to(f, fmt.mbits, fmt.bias, fmt.max_code);
}

// Decoding FP8 is a table lookup; tables are built once from the definitions.
using Table256 = std::array<float, 256>;

template <typename DecodeFn>
Table256 make_table(DecodeFn decode) {
  Table256 t{};
  for (uint32_t b = 0; b < 256; ++b) t[b] = decode(static_cast<uint8_t>(b));
  return t;
}

float decode_e4m3fn(uint8_t b) {
  const bool neg = (b & 0x80) != 0;
  if ((b & 0x7F) == 0x7F) return decoded_nan(neg);
  return with_sign(decode_magnitude(b & 0x7Fu, kE4M3FN.mbits, kE4M3FN.bias), neg);
}

float decode_e4m3fnuz(uint8_t b) {
  // 0x80 is NaN; ml_dtypes reads its set top bit as the sign, so it comes
  // back as a negative NaN.
  if (b == 0x80) return decoded_nan(true);
  return with_sign(decode_magnitude(b & 0x7Fu, kE4M3FNUZ.mbits, kE4M3FNUZ.bias),
                   (b & 0x80) != 0);
}

float decode_e5m2(uint8_t b) {
  const bool neg = (b & 0x80) != 0;
  if ((b & 0x7C) == 0x7C) {
    if ((b & 0x03) == 0) return with_sign(float_of(kF32Inf), neg);
    return decoded_nan(neg);  // payload dropped, as ml_dtypes does
  }
  return with_sign(decode_magnitude(b & 0x7Fu, kE5M2.mbits, kE5M2.bias), neg);
}

float decode_e5m2fnuz(uint8_t b) {
  if (b == 0x80) return decoded_nan(true);
  return with_sign(decode_magnitude(b & 0x7Fu, kE5M2FNUZ.mbits, kE5M2FNUZ.bias),
                   (b & 0x80) != 0);
}

const Table256& e4m3fn_table() {
  static const Table256 t = make_table(decode_e4m3fn);
  return t;
}
const Table256& e4m3fnuz_table() {
  static const Table256 t = make_table(decode_e4m3fnuz);
  return t;
}
const Table256& e5m2_table() {
  static const Table256 t = make_table(decode_e5m2);
  return t;
}
const Table256& e5m2fnuz_table() {
  static const Table256 t = make_table(decode_e5m2fnuz);
  return t;
}

}  // namespace

// ---------------------------------------------------------------- float16

uint16_t float_to_half(float f) {
  const Rounded r = round_to(f, kHalf);
  const uint16_t sign = r.negative ? 0x8000 : 0;
  if (r.nan) {
    // numpy keeps the top 10 payload bits and does not quiet a signalling
    // NaN; if those bits are all zero it sets the lowest so it stays a NaN.
    uint16_t payload = static_cast<uint16_t>((bits_of(f) & 0x7FFFFFu) >> 13);
    if (payload == 0) payload = 1;
    return static_cast<uint16_t>(sign | 0x7C00u | payload);
  }
  if (r.overflow) return static_cast<uint16_t>(sign | 0x7C00u);
  return static_cast<uint16_t>(sign | r.code);
}

float half_to_float(uint16_t h) {
  const bool neg = (h & 0x8000) != 0;
  const uint32_t field = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FFu;
  if (field == 0x1F) {
    // Inf, or NaN with the payload shifted up unchanged (numpy).
    return float_of((neg ? 0x80000000u : 0u) | kF32Inf | (man << 13));
  }
  return with_sign(decode_magnitude(h & 0x7FFFu, kHalf.mbits, kHalf.bias), neg);
}

// ---------------------------------------------------------------- bfloat16

uint16_t float_to_bfloat16(float f) {
  const Rounded r = round_to(f, kBF16);
  const uint16_t sign = r.negative ? 0x8000 : 0;
  if (r.nan) return static_cast<uint16_t>(sign | 0x7FC0u);  // ml_dtypes: payload dropped
  if (r.overflow) return static_cast<uint16_t>(sign | 0x7F80u);
  return static_cast<uint16_t>(sign | r.code);
}

float bfloat16_to_float(uint16_t b) {
  // bfloat16 is the top half of a float32; every pattern (NaN payloads too)
  // maps exactly.
  return float_of(static_cast<uint32_t>(b) << 16);
}

// ---------------------------------------------------------------- FP8

uint8_t float_to_float8e4m3fn(float f, bool saturate) {
  const Rounded r = round_to(f, kE4M3FN);
  const uint8_t sign = r.negative ? 0x80 : 0;
  // No inf: NaN, and overflow without saturation, give S.1111.111.
  if (r.nan) return static_cast<uint8_t>(sign | 0x7F);
  if (r.overflow) return static_cast<uint8_t>(sign | (saturate ? 0x7E : 0x7F));
  return static_cast<uint8_t>(sign | r.code);
}

float float8e4m3fn_to_float(uint8_t bits) { return e4m3fn_table()[bits]; }

uint8_t float_to_float8e4m3fnuz(float f, bool saturate) {
  const Rounded r = round_to(f, kE4M3FNUZ);
  // The single NaN 0x80 has no sign; saturation keeps the sign.
  if (r.nan) return 0x80;
  if (r.overflow) return saturate ? static_cast<uint8_t>((r.negative ? 0x80 : 0) | 0x7F) : 0x80;
  if (r.code == 0) return 0;  // no negative zero: -0 and negative underflow give +0
  return static_cast<uint8_t>((r.negative ? 0x80 : 0) | r.code);
}

float float8e4m3fnuz_to_float(uint8_t bits) { return e4m3fnuz_table()[bits]; }

uint8_t float_to_float8e5m2(float f, bool saturate) {
  const Rounded r = round_to(f, kE5M2);
  const uint8_t sign = r.negative ? 0x80 : 0;
  // IEEE-like: NaN becomes the canonical quiet NaN S.11111.10 (ml_dtypes),
  // overflow becomes inf unless saturating. Saturation also maps +-inf to
  // +-max, as the Cast table says (it is a clip before the cast).
  if (r.nan) return static_cast<uint8_t>(sign | 0x7E);
  if (r.overflow) return static_cast<uint8_t>(sign | (saturate ? 0x7B : 0x7C));
  return static_cast<uint8_t>(sign | r.code);
}

float float8e5m2_to_float(uint8_t bits) { return e5m2_table()[bits]; }

uint8_t float_to_float8e5m2fnuz(float f, bool saturate) {
  const Rounded r = round_to(f, kE5M2FNUZ);
  if (r.nan) return 0x80;
  if (r.overflow) return saturate ? static_cast<uint8_t>((r.negative ? 0x80 : 0) | 0x7F) : 0x80;
  if (r.code == 0) return 0;
  return static_cast<uint8_t>((r.negative ? 0x80 : 0) | r.code);
}

float float8e5m2fnuz_to_float(uint8_t bits) { return e5m2fnuz_table()[bits]; }

// ---------------------------------------------------------------- E8M0

// Mirrors onnx.numpy_helper.to_float8e8m0, which works on the float32
// exponent field alone: the sign is ignored, 0 and float32 subnormals land
// on 0 (2^-127) or 1, and NaN and +-inf both give 0xFF (NaN) whatever
// saturate says.
uint8_t float_to_float8e8m0(float f, bool saturate, E8M0Round round_mode) {
  const uint32_t u = bits_of(f);
  uint32_t exp = (u >> 23) & 0xFF;
  if (exp == 0xFF) return 0xFF;
  bool round_up = false;
  switch (round_mode) {
    case E8M0Round::Up:
      round_up = (u & 0x7FFFFFu) != 0;
      break;
    case E8M0Round::Down:
      break;
    case E8M0Round::Nearest: {
      // onnx's "nearest": round up when the first dropped bit is set and
      // anything else is set, where "the lsb" is taken to be (exp > 0), so an
      // exact tie rounds up except from exponent field 0.
      const bool guard = (u & 0x400000u) != 0;
      const bool rest = (u & 0x3FFFFFu) != 0;
      round_up = guard && (rest || exp > 0);
      break;
    }
  }
  // 0xFE + 1 would be the NaN code; saturation stops there.
  if (round_up && !(saturate && exp == 0xFE)) ++exp;
  return static_cast<uint8_t>(exp);
}

float float8e8m0_to_float(uint8_t bits) {
  if (bits == 0xFF) return float_of(kF32QuietNaN);
  return std::ldexp(1.0f, static_cast<int>(bits) - 127);  // 2^-127 is a float32 subnormal, exact
}

// ---------------------------------------------------------------- FP4 / FP6

namespace {

// Shared by the MX formats, which have neither inf nor NaN. ml_dtypes
// saturates overflow and inf to +-max, and maps NaN to its chosen
// "quiet_NaN", the pattern of -0, then flips that by the input's sign: +NaN
// gives -0 and -NaN gives +0.
uint8_t encode_mx(float f, const Fmt& fmt, uint8_t sign_bit) {
  const Rounded r = round_to(f, fmt);
  if (r.nan) return r.negative ? 0 : sign_bit;
  const uint8_t sign = r.negative ? sign_bit : 0;
  if (r.overflow) return static_cast<uint8_t>(sign | fmt.max_code);
  return static_cast<uint8_t>(sign | r.code);
}

float decode_mx(uint8_t bits, const Fmt& fmt, uint8_t sign_bit) {
  const uint8_t mask = static_cast<uint8_t>(sign_bit - 1);
  return with_sign(decode_magnitude(bits & mask, fmt.mbits, fmt.bias),
                   (bits & sign_bit) != 0);
}

}  // namespace

uint8_t float_to_float4e2m1(float f, bool /*saturate: ignored, as in onnx*/) {
  return encode_mx(f, kE2M1, 0x08);
}
float float4e2m1_to_float(uint8_t bits) { return decode_mx(bits, kE2M1, 0x08); }

uint8_t float_to_float6e2m3(float f, bool /*saturate*/) {
  return encode_mx(f, kE2M3, 0x20);
}
float float6e2m3_to_float(uint8_t bits) { return decode_mx(bits, kE2M3, 0x20); }

uint8_t float_to_float6e3m2(float f, bool /*saturate*/) {
  return encode_mx(f, kE3M2, 0x20);
}
float float6e3m2_to_float(uint8_t bits) { return decode_mx(bits, kE3M2, 0x20); }

// ---------------------------------------------------------------- int4 / int2

int8_t sign_extend_int4(uint8_t nibble) {
  // Flip the sign bit and subtract its weight: 0..7 stay, 8..15 -> -8..-1.
  return static_cast<int8_t>(((nibble & 0x0F) ^ 0x08) - 0x08);
}

int8_t sign_extend_int2(uint8_t bits) {
  return static_cast<int8_t>(((bits & 0x03) ^ 0x02) - 0x02);
}

}  // namespace onnxscope
