// QuantizeLinear and DequantizeLinear on float32 values and their codes:
// int8, uint8, int16, uint16, the packed int4, uint4, int2, uint2, the
// float8 formats and the packed float4e2m1 (int32 codes for dequantization
// too); one item per element (per byte of packed codes), each reading its
// scale and zero point through QuantIndex: per tensor, per axis or blocked
// (core/quant_plan.h decides which on the host). Computed as the reference
// computes: the quotient in float32; for integer codes its rounding (half
// to even) and the zero point's sum in double, clamped to the code's range;
// for float codes the sum rounded to float32, then encoded as the host
// encodes it (core/narrow_float_codec.h, saturating or not); a dequantized
// value in double, stored as float32.
#pragma once

#include "core/narrow_float_codec.h"
#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

// core/quant_plan.h's ParamIndex, carried by value.
struct QuantIndex {
  int mode = 0;  // 0 per tensor, 1 per axis, 2 blocked
  int64_t axis_dim = 1, inner = 1, block = 1, scale_axis_dim = 1;
  OS_HD int64_t operator()(int64_t i) const {
    if (mode == 0) return 0;
    const int64_t k = (i / inner) % axis_dim;
    if (mode == 1) return k;
    const int64_t outer = i / (inner * axis_dim), in = i % inner;
    return (outer * scale_axis_dim + k / block) * inner + in;
  }
};

// A code (or zero point) as a double.
OS_HD double code_value(ElemType t, const void* p, int64_t i) {
  if (const int w = packed_bits(t)) {
    const int per = 8 / w;
    const uint32_t v = (static_cast<const uint8_t*>(p)[i / per] >> ((i % per) * w)) & ((1u << w) - 1u);
    if (static_cast<int>(t) == kE2M1) return decode_float_code(t, v);
    const bool is_signed = static_cast<int>(t) == kInt4 || static_cast<int>(t) == kInt2;
    return is_signed && v >= (1u << (w - 1)) ? static_cast<double>(v) - static_cast<double>(1u << w) : static_cast<double>(v);
  }
  if (float_code(t)) return decode_float_code(t, static_cast<const uint8_t*>(p)[i]);
  const CastValue v = cast_load(t, p, i);
  return v.kind == 1 ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

// Integer codes: y = saturate(round(x / scale) + zero_point), NaN to the
// zero point. Float codes: y = encode(x / scale + zero_point). Packed codes
// run one item per byte of y (its elements, the unused bits of the last
// byte 0), others one per element.
struct QuantizeKernel {
  QuantIndex at;
  const float* x;
  const float* scale;
  const void* zero_point;  // of the code's type; nullptr: 0
  ElemType code;
  double lo, hi;           // an integer code's range
  bool saturate;           // float codes: out of range to +-max (else inf or NaN)
  int64_t n;               // elements
  void* y;
  int narrow = 0;  // the division's precision: float16 (1) or bfloat16 (2) rounds x, the scale and the quotient to it
  OS_HD double value(int64_t i) const {
    const int64_t s = at(i);
    const float q = round_to_narrow(round_to_narrow(x[i], narrow) / round_to_narrow(scale[s], narrow), narrow);
    const double z = zero_point ? code_value(code, zero_point, s) : 0.0;
    if (float_code(code)) return static_cast<double>(q) + z;
    const double v = (q != q ? 0.0 : static_cast<double>(rintf(q))) + z;
    return v < lo ? lo : v > hi ? hi : v;
  }
  OS_HD uint32_t bits(int64_t i) const {
    const double v = value(i);
    return float_code(code) ? encode_float_code(code, static_cast<float>(v), saturate) : static_cast<uint32_t>(static_cast<int64_t>(v));
  }
  OS_HD void operator()(int64_t i) const {
    if (const int w = packed_bits(code)) {
      const int per = 8 / w;
      uint32_t byte = 0;
      for (int j = 0; j < per && i * per + j < n; ++j) byte |= (bits(i * per + j) & ((1u << w) - 1u)) << (j * w);
      static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(byte);
      return;
    }
    if (float_code(code)) {
      static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(bits(i));
      return;
    }
    cast_store(code, y, i, CastValue{value(i), 0, 0, 0});
  }
};

// y = (x - zero_point) * scale.
struct DequantizeKernel {
  QuantIndex at;
  const void* x;
  ElemType code;
  const float* scale;
  const void* zero_point;  // of x's type; nullptr: 0
  float* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t s = at(i);
    const double z = zero_point ? code_value(code, zero_point, s) : 0.0;
    y[i] = static_cast<float>((code_value(code, x, i) - z) * static_cast<double>(scale[s]));
  }
};

}  // namespace onnxscope::cuda
