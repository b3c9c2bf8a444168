// The narrow floating-point formats' rounding, encoding and decoding as plain
// integer arithmetic, one source for the host (core/float_formats.cpp, the
// public conversions) and the CUDA kernels (cuda/kernels/quantize.h), which
// nvcc compiles as C++17 for the GPU. The encodings of NaN and overflow are
// ml_dtypes' choices (see float_formats.cpp).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OS_CODEC __host__ __device__ inline
#else
#define OS_CODEC inline
#endif

namespace onnxscope::narrow {

OS_CODEC uint32_t bits_of(float f) {
  union {
    float f;
    uint32_t u;
  } c{f};
  return c.u;
}
OS_CODEC float float_of(uint32_t u) {
  union {
    uint32_t u;
    float f;
  } c{u};
  return c.f;
}

constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietNaN = 0x7FC00000u;

// Format parameters: mantissa bits, bias, largest finite magnitude code.
struct Fmt {
  int mbits;
  int bias;
  uint32_t max_code;
};
// Functions rather than constants: a class-type constant is not visible in
// device code.
OS_CODEC Fmt half_fmt() { return {10, 15, 0x7BFF}; }    // 65504
OS_CODEC Fmt bf16_fmt() { return {7, 127, 0x7F7F}; }    // ~3.39e38
OS_CODEC Fmt e4m3fn_fmt() { return {3, 7, 0x7E}; }      // 448 (0x7F is NaN)
OS_CODEC Fmt e4m3fnuz_fmt() { return {3, 8, 0x7F}; }    // 240
OS_CODEC Fmt e5m2_fmt() { return {2, 15, 0x7B}; }       // 57344 (0x7C is inf)
OS_CODEC Fmt e5m2fnuz_fmt() { return {2, 16, 0x7F}; }   // 57344
OS_CODEC Fmt e2m1_fmt() { return {1, 1, 0x7}; }         // 6
OS_CODEC Fmt e2m3_fmt() { return {3, 1, 0x1F}; }        // 7.5
OS_CODEC Fmt e3m2_fmt() { return {2, 3, 0x1F}; }        // 28

// Rounds a finite, non-negative float32 (given by its bits) to nearest even on
// the grid of a format with `mbits` mantissa bits and exponent bias `bias`,
// pretending the exponent range were unbounded above. Returns the magnitude
// code (exponent field << mbits | mantissa). Codes are monotonic in the value,
// so a result above the format's largest finite code means overflow, and a
// mantissa carry lands on the next binade's code (subnormal -> min normal
// included) without special cases.
OS_CODEC uint32_t round_magnitude(uint32_t abs_bits, int mbits, int bias) {
  const uint32_t exp = abs_bits >> 23;
  const uint32_t man = abs_bits & 0x7FFFFFu;
  // Value = sig * 2^sexp exactly.
  const uint32_t sig = exp == 0 ? man : (man | 0x800000u);
  const int sexp = exp == 0 ? -149 : static_cast<int>(exp) - 150;
  const int unbiased = exp == 0 ? -126 : static_cast<int>(exp) - 127;
  // Target exponent field; values below the normal range use field 1's
  // quantum, which is the subnormal quantum.
  const int field = unbiased + bias > 1 ? unbiased + bias : 1;
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

OS_CODEC Rounded round_to(float f, Fmt fmt) {
  const uint32_t u = bits_of(f);
  const uint32_t a = u & 0x7FFFFFFFu;
  Rounded r;
  r.negative = (u >> 31) != 0;
  if (a > kF32Inf) {
    r.nan = true;
  } else if (a == kF32Inf) {
    r.overflow = true;
  } else {
    r.code = round_magnitude(a, fmt.mbits, fmt.bias);
    r.overflow = r.code > fmt.max_code;
  }
  return r;
}

// Inverse of round_magnitude for an in-range code; exact in float32.
OS_CODEC float decode_magnitude(uint32_t code, int mbits, int bias) {
  const uint32_t field = code >> mbits;
  const uint32_t man = code & ((1u << mbits) - 1u);
  if (field == 0) return ldexpf(static_cast<float>(man), 1 - bias - mbits);
  return ldexpf(static_cast<float>(man | (1u << mbits)), static_cast<int>(field) - bias - mbits);
}

OS_CODEC float with_sign(float magnitude, bool negative) { return negative ? -magnitude : magnitude; }

// ml_dtypes turns every narrow NaN into float32's canonical quiet NaN, keeping
// the sign bit of the encoding.
OS_CODEC float decoded_nan(bool negative) { return float_of(kF32QuietNaN | (negative ? 0x80000000u : 0u)); }

// --- FP8 ---------------------------------------------------------------------
// saturate: out-of-range values and +-inf become +-max finite, NaN stays NaN;
// otherwise out of range becomes +-inf (E5M2) or NaN (the others).

OS_CODEC uint8_t encode_e4m3fn(float f, bool saturate) {
  const Rounded r = round_to(f, e4m3fn_fmt());
  const uint8_t sign = r.negative ? 0x80 : 0;
  // No inf: NaN, and overflow without saturation, give S.1111.111.
  if (r.nan) return static_cast<uint8_t>(sign | 0x7F);
  if (r.overflow) return static_cast<uint8_t>(sign | (saturate ? 0x7E : 0x7F));
  return static_cast<uint8_t>(sign | r.code);
}

// The FNUZ formats (E4M3FNUZ, E5M2FNUZ): the single NaN 0x80 has no sign;
// saturation keeps the sign; no negative zero (-0 and negative underflow give +0).
OS_CODEC uint8_t encode_fnuz(float f, Fmt fmt, bool saturate) {
  const Rounded r = round_to(f, fmt);
  if (r.nan) return 0x80;
  if (r.overflow) return saturate ? static_cast<uint8_t>((r.negative ? 0x80 : 0) | 0x7F) : 0x80;
  if (r.code == 0) return 0;
  return static_cast<uint8_t>((r.negative ? 0x80 : 0) | r.code);
}

OS_CODEC uint8_t encode_e4m3fnuz(float f, bool saturate) { return encode_fnuz(f, e4m3fnuz_fmt(), saturate); }

OS_CODEC uint8_t encode_e5m2(float f, bool saturate) {
  const Rounded r = round_to(f, e5m2_fmt());
  const uint8_t sign = r.negative ? 0x80 : 0;
  // IEEE-like: NaN becomes the canonical quiet NaN S.11111.10 (ml_dtypes),
  // overflow becomes inf unless saturating. Saturation also maps +-inf to
  // +-max, as the Cast table says (it is a clip before the cast).
  if (r.nan) return static_cast<uint8_t>(sign | 0x7E);
  if (r.overflow) return static_cast<uint8_t>(sign | (saturate ? 0x7B : 0x7C));
  return static_cast<uint8_t>(sign | r.code);
}

OS_CODEC uint8_t encode_e5m2fnuz(float f, bool saturate) { return encode_fnuz(f, e5m2fnuz_fmt(), saturate); }

OS_CODEC float decode_e4m3fn(uint8_t b) {
  const bool neg = (b & 0x80) != 0;
  if ((b & 0x7F) == 0x7F) return decoded_nan(neg);
  return with_sign(decode_magnitude(b & 0x7Fu, 3, 7), neg);
}

OS_CODEC float decode_e4m3fnuz(uint8_t b) {
  // 0x80 is NaN; ml_dtypes reads its set top bit as the sign, so it comes
  // back as a negative NaN.
  if (b == 0x80) return decoded_nan(true);
  return with_sign(decode_magnitude(b & 0x7Fu, 3, 8), (b & 0x80) != 0);
}

OS_CODEC float decode_e5m2(uint8_t b) {
  const bool neg = (b & 0x80) != 0;
  if ((b & 0x7C) == 0x7C) {
    if ((b & 0x03) == 0) return with_sign(float_of(kF32Inf), neg);
    return decoded_nan(neg);  // payload dropped, as ml_dtypes does
  }
  return with_sign(decode_magnitude(b & 0x7Fu, 2, 15), neg);
}

OS_CODEC float decode_e5m2fnuz(uint8_t b) {
  if (b == 0x80) return decoded_nan(true);
  return with_sign(decode_magnitude(b & 0x7Fu, 2, 16), (b & 0x80) != 0);
}

// --- MX formats (FP4, FP6): no inf, no NaN --------------------------------------
// ml_dtypes saturates overflow and inf to +-max, and maps NaN to its chosen
// "quiet_NaN", the pattern of -0, then flips that by the input's sign: +NaN
// gives -0 and -NaN gives +0.

OS_CODEC uint8_t encode_mx(float f, Fmt fmt, uint8_t sign_bit) {
  const Rounded r = round_to(f, fmt);
  if (r.nan) return r.negative ? 0 : sign_bit;
  const uint8_t sign = r.negative ? sign_bit : 0;
  if (r.overflow) return static_cast<uint8_t>(sign | fmt.max_code);
  return static_cast<uint8_t>(sign | r.code);
}

OS_CODEC float decode_mx(uint8_t bits, Fmt fmt, uint8_t sign_bit) {
  const uint8_t mask = static_cast<uint8_t>(sign_bit - 1);
  return with_sign(decode_magnitude(bits & mask, fmt.mbits, fmt.bias), (bits & sign_bit) != 0);
}

}  // namespace onnxscope::narrow
