// Integer products and dynamic quantization: MatMulInteger, QLinearMatMul,
// ConvInteger, QLinearConv (int8/uint8 codes, zero points subtracted, sums
// in int64 like the reference's, one output element per item) and the two
// steps DynamicQuantizeLinear takes before QuantizeKernel (a min/max over
// chunks, then the scale and zero point from the partial results).
#pragma once

#include <cmath>

#include "cuda/kernels/elementwise.h"

namespace onnxscope::cuda {

// An int8 or uint8 code read as an integer.
OS_HD int64_t code8(const uint8_t* p, bool is_signed, int64_t i) {
  return is_signed ? static_cast<int64_t>(static_cast<int8_t>(p[i])) : static_cast<int64_t>(p[i]);
}

// An int8/uint8 input with its zero point (of the same type): none
// (nullptr), one value (zp_step 0) or one per row or channel (zp_step 1).
struct CodeOperand {
  const uint8_t* data;
  bool is_signed;
  const uint8_t* zp;
  int64_t zp_step;
  OS_HD int64_t at(int64_t i, int64_t zp_index) const {
    return code8(data, is_signed, i) - (zp ? code8(zp, is_signed, zp_index * zp_step) : 0);
  }
};

// Where an integer sum goes: int32 as it is (wrapping, like the reference's
// cast), or requantized to int8/uint8 as the reference requantizes:
// clamp(rint(sum * multiplier) + y_zp), the multiplier formed in float as
// float(in_scale * w_scale[c] / y_scale) (w_scale_step 0: one scale), the
// scales float32, or float16/bfloat16 (QLinearMatMul 21) widened first.
struct IntSumOutput {
  int32_t* y32;              // nullptr: requantize into y8
  uint8_t* y8;
  bool y_signed;
  ElemType scale_type;       // Float, Float16 or BFloat16
  const void *in_scale, *w_scale, *y_scale;
  int64_t w_scale_step;
  const uint8_t* y_zp;
  const int32_t* bias;       // QLinearConv's, per channel; nullptr: none
  OS_HD float scale(const void* p, int64_t i) const {
    if (scale_type == ElemType::Float) return static_cast<const float*>(p)[i];
    const uint16_t b = static_cast<const uint16_t*>(p)[i];
    return scale_type == ElemType::Float16 ? half_to_float(b) : bfloat16_to_float(b);
  }
  OS_HD void store(int64_t i, int64_t sum, int64_t channel) const {
    if (bias) sum += bias[channel];
    if (y32) {
      y32[i] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
      return;
    }
    const float mult = scale(in_scale, 0) * scale(w_scale, channel * w_scale_step) / scale(y_scale, 0);
    const double r = rint(static_cast<double>(sum) * static_cast<double>(mult));
    // A NaN multiplier (scales of 0 / 0, NaN or inf) gives the zero point, as the reference.
    double q = (r != r ? 0.0 : r) + static_cast<double>(code8(y_zp, y_signed, 0));
    const double lo = y_signed ? -128.0 : 0.0, hi = y_signed ? 127.0 : 255.0;
    q = q < lo ? lo : q > hi ? hi : q;
    y8[i] = y_signed ? static_cast<uint8_t>(static_cast<int8_t>(q)) : static_cast<uint8_t>(q);
  }
};

// y[b, r, c] = sum_t (a[b, r, t] - a_zp[r]) * (b[b, t, c] - b_zp[c]) with
// numpy's batch broadcasting (batch: dims and strides in elements); the
// requantizing output's channel is the column (scales are per tensor).
struct IntMatMulKernel {
  int64_t m, n, k;
  BroadcastIndex batch;
  CodeOperand a, b;
  IntSumOutput out;
  OS_HD void operator()(int64_t i) const {
    const int64_t col = i % n, row = (i / n) % m;
    int64_t off[2];
    batch.offsets(i / (m * n), 2, off);
    const int64_t a0 = off[0] + row * k, b0 = off[1] + col;
    int64_t sum = 0;
    for (int64_t t = 0; t < k; ++t) sum += a.at(a0 + t, row) * b.at(b0 + t * n, col);
    out.store(i, sum, 0);
  }
};

// y[n, m, *o] = sum over c in m's group and kernel positions kk of
// (x[n, g * cg + c, o * stride - pad + kk * dilation] - x_zp) * (w[m, c, kk] - w_zp[m]),
// padded positions contributing nothing (x padded with its zero point).
struct IntConvKernel {
  int rank;
  int64_t channels, maps, cg, mg;  // C, M, C / group, M / group
  int64_t in[3], in_stride[3], kernel[3], out[3], stride[3], dilation[3], pad[3];
  int64_t in_size, kernel_size, out_size;  // products of in, kernel, out
  CodeOperand x, w;
  IntSumOutput y;
  OS_HD void operator()(int64_t i) const {
    int64_t o[3] = {0, 0, 0};
    int64_t rest = i % out_size;
    for (int d = rank - 1; d >= 0; --d) {
      o[d] = rest % out[d];
      rest /= out[d];
    }
    const int64_t map = (i / out_size) % maps, batch = i / (out_size * maps);
    const int64_t group = map / mg;
    int64_t sum = 0;
    for (int64_t kk = 0; kk < kernel_size; ++kk) {
      int64_t pos = 0, krest = kk;
      bool inside = true;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t kd = krest % kernel[d];
        krest /= kernel[d];
        const int64_t p = o[d] * stride[d] - pad[d] + kd * dilation[d];
        inside = inside && p >= 0 && p < in[d];
        pos += p * in_stride[d];
      }
      if (!inside) continue;
      for (int64_t c = 0; c < cg; ++c)
        sum += x.at((batch * channels + group * cg + c) * in_size + pos, 0) * w.at((map * cg + c) * kernel_size + kk, map);
    }
    y.store(i, sum, map);
  }
};

// DynamicQuantizeLinear's range, step 1: row r holds the minimum and maximum
// of elements [r * chunk, (r + 1) * chunk), both starting from 0 (the range
// always holds 0) and NaN skipped, as the reference's std::min/std::max do.
struct MinMaxPartialKernel {
  static constexpr bool kRows = true;
  int64_t n, chunk;
  const float* x;
  float* partial;  // [rows, 2]: min, max
  template <class L>
  OS_HD void operator()(int64_t r, const L& lanes) const {
    const int64_t end = (r + 1) * chunk < n ? (r + 1) * chunk : n;
    float lo = 0.f, hi = 0.f;
    for (int64_t j = r * chunk + lanes.lane(); j < end; j += lanes.count()) {
      lo = fminf(lo, x[j]);  // fminf/fmaxf return the other operand for a NaN
      hi = fmaxf(hi, x[j]);
    }
    lo = lanes.min(lo);
    hi = lanes.max(hi);
    if (lanes.lane() == 0) {
      partial[2 * r] = lo;
      partial[2 * r + 1] = hi;
    }
  }
};

// Step 2 (one row): the range from the partial results, then the scale and
// zero point as the spec's formulas compute them in float, for uint8:
// scale = (max - min, or 1 when equal) / 255, zero point =
// rint(clamp(-min / scale, 0, 255)); a NaN zero point (an infinite range) is 0.
struct DynamicQuantParamsKernel {
  static constexpr bool kRows = true;
  int64_t parts;
  const float* partial;
  float* scale;
  uint8_t* zero_point;
  template <class L>
  OS_HD void operator()(int64_t, const L& lanes) const {
    float lo = 0.f, hi = 0.f;
    for (int64_t j = lanes.lane(); j < parts; j += lanes.count()) {
      lo = fminf(lo, partial[2 * j]);
      hi = fmaxf(hi, partial[2 * j + 1]);
    }
    lo = lanes.min(lo);
    hi = lanes.max(hi);
    if (lanes.lane() != 0) return;
    const float s = (hi == lo ? 1.f : hi - lo) / 255.f;
    float z = 0.f - lo / s;
    z = z < 0.f ? 0.f : z > 255.f ? 255.f : z;  // a NaN stays NaN
    z = rintf(z);
    scale[0] = s;
    zero_point[0] = z != z ? 0 : static_cast<uint8_t>(z);
  }
};

}  // namespace onnxscope::cuda
