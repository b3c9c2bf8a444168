// Narrow floating-point conversions, bit-exact with the onnx 1.23.2 Python
// reference. onnx itself does little here: Cast with saturate=true on FP8 is
// numpy.clip(x, finfo.min, finfo.max) followed by an ml_dtypes cast, everything
// else is a plain ml_dtypes (or numpy, for float16) cast, and E8M0 has its own
// bit-level routine in numpy_helper.to_float8e8m0. So the NaN and overflow
// encodings below are ml_dtypes' choices, spelled out per format.
#include "onnxscope/float_formats.h"

#include "core/narrow_float_codec.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace onnxscope {
namespace {

// The rounding and the per-format codes: core/narrow_float_codec.h, shared
// with the CUDA kernels.
using narrow::bits_of;
using narrow::decode_magnitude;
using narrow::float_of;
using narrow::kF32Inf;
using narrow::kF32QuietNaN;
using narrow::Rounded;
using narrow::round_to;
using narrow::with_sign;

// Decoding FP8 is a table lookup; tables are built once from the definitions.
using Table256 = std::array<float, 256>;

template <typename DecodeFn>
Table256 make_table(DecodeFn decode) {
  Table256 t{};
  for (uint32_t b = 0; b < 256; ++b) t[b] = decode(static_cast<uint8_t>(b));
  return t;
}

const Table256& e4m3fn_table() {
  static const Table256 t = make_table(narrow::decode_e4m3fn);
  return t;
}
const Table256& e4m3fnuz_table() {
  static const Table256 t = make_table(narrow::decode_e4m3fnuz);
  return t;
}
const Table256& e5m2_table() {
  static const Table256 t = make_table(narrow::decode_e5m2);
  return t;
}
const Table256& e5m2fnuz_table() {
  static const Table256 t = make_table(narrow::decode_e5m2fnuz);
  return t;
}

}  // namespace

// ---------------------------------------------------------------- float16

// Float16 is the type every float16 model moves through each element of, so
// it is converted with integer steps rather than the generic narrowing
// (round_to), bit for bit the same: round to nearest even, overflow to inf.
uint16_t float_to_half(float f) {
  uint32_t x = bits_of(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > kF32Inf) {
    // numpy keeps the top 10 payload bits and does not quiet a signalling
    // NaN; if those bits are all zero it sets the lowest so it stays a NaN.
    uint16_t payload = static_cast<uint16_t>((x & 0x7FFFFFu) >> 13);
    if (payload == 0) payload = 1;
    return static_cast<uint16_t>(sign | 0x7C00u | payload);
  }
  if (x >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7C00u);  // 2^16 and above (inf too): inf
  if (x < 0x38800000u) {
    // Below float16's smallest normal (2^-14): adding 0.5 lines the float16
    // subnormal step (2^-24) up with float32's last bit, and the addition
    // rounds to nearest even.
    const uint32_t magic = 0x3F000000u;  // 0.5f
    return static_cast<uint16_t>(sign | (bits_of(float_of(x) + float_of(magic)) - magic));
  }
  // Normal: rebias the exponent, round the 13 dropped bits to nearest even
  // (a carry into the exponent rounds 65520 and above up to inf).
  const uint32_t odd = (x >> 13) & 1u;
  x += (static_cast<uint32_t>(15 - 127) << 23) + 0xFFFu + odd;
  return static_cast<uint16_t>(sign | (x >> 13));
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t field = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (field == 0x1F) return float_of(sign | kF32Inf | (man << 13));  // inf, or NaN with the payload shifted up (numpy)
  if (field == 0) {
    // Zero or subnormal: man * 2^-24, exact in float32.
    return float_of(sign | bits_of(static_cast<float>(man) * 0x1p-24f));
  }
  return float_of(sign | ((field + 112u) << 23) | (man << 13));
}

// ---------------------------------------------------------------- bfloat16

uint16_t float_to_bfloat16(float f) {
  const Rounded r = round_to(f, narrow::bf16_fmt());
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

uint8_t float_to_float8e4m3fn(float f, bool saturate) { return narrow::encode_e4m3fn(f, saturate); }
float float8e4m3fn_to_float(uint8_t bits) { return e4m3fn_table()[bits]; }
uint8_t float_to_float8e4m3fnuz(float f, bool saturate) { return narrow::encode_e4m3fnuz(f, saturate); }
float float8e4m3fnuz_to_float(uint8_t bits) { return e4m3fnuz_table()[bits]; }
uint8_t float_to_float8e5m2(float f, bool saturate) { return narrow::encode_e5m2(f, saturate); }
float float8e5m2_to_float(uint8_t bits) { return e5m2_table()[bits]; }
uint8_t float_to_float8e5m2fnuz(float f, bool saturate) { return narrow::encode_e5m2fnuz(f, saturate); }
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

using narrow::decode_mx;
using narrow::encode_mx;

uint8_t float_to_float4e2m1(float f, bool /*saturate: ignored, as in onnx*/) {
  return encode_mx(f, narrow::e2m1_fmt(), 0x08);
}
float float4e2m1_to_float(uint8_t bits) { return decode_mx(bits, narrow::e2m1_fmt(), 0x08); }

uint8_t float_to_float6e2m3(float f, bool /*saturate*/) {
  return encode_mx(f, narrow::e2m3_fmt(), 0x20);
}
float float6e2m3_to_float(uint8_t bits) { return decode_mx(bits, narrow::e2m3_fmt(), 0x20); }

uint8_t float_to_float6e3m2(float f, bool /*saturate*/) {
  return encode_mx(f, narrow::e3m2_fmt(), 0x20);
}
float float6e3m2_to_float(uint8_t bits) { return decode_mx(bits, narrow::e3m2_fmt(), 0x20); }

// ---------------------------------------------------------------- int4 / int2

int8_t sign_extend_int4(uint8_t nibble) {
  // Flip the sign bit and subtract its weight: 0..7 stay, 8..15 -> -8..-1.
  return static_cast<int8_t>(((nibble & 0x0F) ^ 0x08) - 0x08);
}

int8_t sign_extend_int2(uint8_t bits) {
  return static_cast<int8_t>(((bits & 0x03) ^ 0x02) - 0x02);
}

}  // namespace onnxscope
