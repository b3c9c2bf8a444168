// Conversions between float32 and the narrow floating-point formats ONNX
// defines, bit-exact with the onnx 1.23.2 Python reference (which delegates to
// numpy for float16 and to ml_dtypes for the others; see float_formats.cpp for
// the places where that behaviour is surprising).
//
// Every encoder takes a float and returns the raw bit pattern in the low bits
// of the result; every decoder takes the raw pattern and returns a float32,
// which is exact for all of these formats.
#pragma once

#include <cstdint>

namespace onnxscope {

// IEEE binary16. Round to nearest even, overflow to +-inf. NaN keeps its sign
// and the top 10 payload bits (numpy); a payload that would vanish becomes 1.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);

// bfloat16. Round to nearest even, overflow to +-inf; every NaN becomes the
// quiet NaN 0x7FC0 carrying the input's sign (0xFFC0 for a negative NaN).
uint16_t float_to_bfloat16(float f);
float bfloat16_to_float(uint16_t b);

// FP8. Round to nearest even. saturate follows the Cast operator's tables:
// true: out-of-range values and +-inf become +-max finite, NaN stays NaN;
// false: out of range becomes +-inf (E5M2) or NaN (the others).
// FN: NaN is S.1111.111, no inf. FNUZ: NaN is 0x80, no inf, no -0 (-0 -> 0).
uint8_t float_to_float8e4m3fn(float f, bool saturate = true);
float float8e4m3fn_to_float(uint8_t bits);
uint8_t float_to_float8e4m3fnuz(float f, bool saturate = true);
float float8e4m3fnuz_to_float(uint8_t bits);
uint8_t float_to_float8e5m2(float f, bool saturate = true);
float float8e5m2_to_float(uint8_t bits);
uint8_t float_to_float8e5m2fnuz(float f, bool saturate = true);
float float8e5m2fnuz_to_float(uint8_t bits);

// E8M0 (unsigned power of two, 2^(bits-127), 0xFF is NaN). Rounding modes of
// the Cast attribute round_mode; Up is its default.
enum class E8M0Round { Up, Down, Nearest };
uint8_t float_to_float8e8m0(float f, bool saturate = true,
                            E8M0Round round_mode = E8M0Round::Up);
float float8e8m0_to_float(uint8_t bits);

// OCP MX FP4 / FP6: no inf, no NaN. Result in the low 4 / 6 bits; decoders
// ignore the bits above. onnx ignores saturate for these (always saturates),
// and so do we: the parameter exists for symmetry with FP8.
uint8_t float_to_float4e2m1(float f, bool saturate = true);
float float4e2m1_to_float(uint8_t bits);
uint8_t float_to_float6e2m3(float f, bool saturate = true);
float float6e2m3_to_float(uint8_t bits);
uint8_t float_to_float6e3m2(float f, bool saturate = true);
float float6e3m2_to_float(uint8_t bits);

// Two's-complement sign extension of the low 4 / 2 bits.
int8_t sign_extend_int4(uint8_t nibble);
int8_t sign_extend_int2(uint8_t bits);

}  // namespace onnxscope
