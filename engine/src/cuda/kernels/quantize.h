// QuantizeLinear and DequantizeLinear on float32 values and integer codes
// (int8, uint8, int16, uint16; int32 codes for dequantization), one item
// per element, each reading its scale and zero point through QuantIndex:
// per tensor, per axis or blocked (core/quant_plan.h decides which on the
// host). Computed as the reference computes: the quotient in float32, its
// rounding (half to even) and the zero point's sum in double, clamped to the
// code's range; a dequantized value in double, stored as float32.
#pragma once

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

// An integer code (or zero point) as a double.
OS_HD double code_value(ElemType t, const void* p, int64_t i) {
  const CastValue v = cast_load(t, p, i);
  return v.kind == 1 ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

// y = saturate(round(x / scale) + zero_point); NaN quantizes to the zero point.
struct QuantizeKernel {
  QuantIndex at;
  const float* x;
  const float* scale;
  const void* zero_point;  // of the code's type; nullptr: 0
  ElemType code;
  double lo, hi;           // the code's range
  void* y;
  OS_HD void operator()(int64_t i) const {
    const int64_t s = at(i);
    const float q = x[i] / scale[s];
    double v = (q != q ? 0.0 : static_cast<double>(rintf(q))) + (zero_point ? code_value(code, zero_point, s) : 0.0);
    v = v < lo ? lo : v > hi ? hi : v;
    cast_store(code, y, i, CastValue{v, 0, 0, 0});
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
