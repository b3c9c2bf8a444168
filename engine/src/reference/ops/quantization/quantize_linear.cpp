// Reference kernel: QuantizeLinear.
//
// Quantization covers per-tensor, per-axis and blocked parameters and every
// quantized type of every version. Transforms and windows are computed in
// double and rounded once to the output type.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/mel_weights.h"
#include "core/quant_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/real_values.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// Saturation range of the integer quantized types.
void int_range(DataType t, double& lo, double& hi) {
  switch (t) {
    case DataType::Int8: lo = -128; hi = 127; break;
    case DataType::Uint8: lo = 0; hi = 255; break;
    case DataType::Int16: lo = -32768; hi = 32767; break;
    case DataType::Uint16: lo = 0; hi = 65535; break;
    case DataType::Int4: lo = -8; hi = 7; break;
    case DataType::Uint4: lo = 0; hi = 15; break;
    case DataType::Int2: lo = -2; hi = 1; break;
    case DataType::Uint2: lo = 0; hi = 3; break;
    default: lo = hi = 0;
  }
}

template <typename S>
void put_at(std::byte* d, uint64_t i, S v) {
  std::memcpy(d + i * sizeof(S), &v, sizeof(S));
}

// Stores element i of a quantized output of type t at d (the output's bytes,
// taken once: a Tensor's mutable_raw per element was most of the kernel's
// time): `v` is an in-range integer for the integer types, the real value to
// encode for the float types.
void store_quantized(std::byte* d, DataType t, uint64_t i, double v, bool saturate) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DataType::Int8: put_at<int8_t>(d, i, int8_t(v)); break;
    case DataType::Uint8: put_at<uint8_t>(d, i, uint8_t(v)); break;
    case DataType::Int16: put_at<int16_t>(d, i, int16_t(v)); break;
    case DataType::Uint16: put_at<uint16_t>(d, i, uint16_t(v)); break;
    case DataType::Int4: case DataType::Int2:
      set_packed_element_bits(t, d, i, uint8_t(int8_t(v)));
      break;
    case DataType::Uint4: case DataType::Uint2: set_packed_element_bits(t, d, i, uint8_t(v)); break;
    case DataType::Float8E4M3FN: put_at<uint8_t>(d, i, float_to_float8e4m3fn(f, saturate)); break;
    case DataType::Float8E4M3FNUZ: put_at<uint8_t>(d, i, float_to_float8e4m3fnuz(f, saturate)); break;
    case DataType::Float8E5M2: put_at<uint8_t>(d, i, float_to_float8e5m2(f, saturate)); break;
    case DataType::Float8E5M2FNUZ: put_at<uint8_t>(d, i, float_to_float8e5m2fnuz(f, saturate)); break;
    // FP4/FP6 have no infinity: they always saturate.
    case DataType::Float4E2M1: set_packed_element_bits(t, d, i, float_to_float4e2m1(f)); break;
    case DataType::Float6E2M3: set_packed_element_bits(t, d, i, float_to_float6e2m3(f)); break;
    case DataType::Float6E3M2: set_packed_element_bits(t, d, i, float_to_float6e3m2(f)); break;
    default: break;
  }
}

// Rounds to the precision a division in type t would have (int32 divides in double, like numpy).
double round_precision(DataType t, double v) {
  switch (t) {
    case DataType::Float: case DataType::Float8E8M0: return static_cast<float>(v);
    case DataType::Float16: case DataType::BFloat16: return real::round_to(t, v);
    default: return v;
  }
}

// The common case in float, element by element as the spec writes it:
// float x, float per-tensor or per-axis scale, float precision, 8-bit y.
// The same bits as the double loop below: a float quotient computed in
// double and rounded to float is float's own correctly rounded quotient
// (double has more than twice float's precision), rounding half to even
// and adding the zero point give the same integer in either, and a sum that
// float would round lies outside [lo, hi] and saturates alike. Threaded
// (each output alone: the split changes nothing).
template <typename Q>
void quantize_float8bit(const float* x, const float* scale, const std::vector<double>& zs, const quant::ParamIndex& qi,
                        uint64_t n, Q* y) {
  constexpr float lo = std::is_signed_v<Q> ? -128.0f : 0.0f, hi = std::is_signed_v<Q> ? 127.0f : 255.0f;
  for_quant_runs(qi, n, [&](uint64_t i0, uint64_t i1, uint64_t k) {
    const float s = scale[k], z = static_cast<float>(zs[k]);
    for (uint64_t i = i0; i < i1; ++i) {
      const float q = x[i] / s;
      const float v = std::isnan(q) ? z : std::nearbyint(q) + z;  // NaN quantizes to the zero point
      y[i] = static_cast<Q>(std::clamp(v, lo, hi));
    }
  });
}

}  // namespace

// y = saturate(round(x / y_scale) + y_zero_point)
void QuantizeLinear(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  switch (x.dtype()) {
    case DataType::Float: case DataType::Float16: case DataType::BFloat16: case DataType::Int32: break;
    default: ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  }
  switch (scale.dtype()) {
    case DataType::Float: case DataType::Float16: case DataType::BFloat16: case DataType::Int32: case DataType::Float8E8M0: break;
    default: ctx.fail("y_scale: does not support element type " + std::string(dtype_name(scale.dtype())));
  }
  if (opset < 21 && scale.rank() > 1) ctx.fail("y_scale must be a scalar or 1-D before opset 21");
  const int64_t output_dtype = ctx.attr_int("output_dtype", 0);
  DataType out_t = DataType::Uint8;
  if (zp) {
    out_t = zp->dtype();
    if (output_dtype != 0 && output_dtype != int64_t(out_t))
      ctx.fail("output_dtype " + std::to_string(output_dtype) + " differs from y_zero_point's type " +
               std::string(dtype_name(out_t)));
  } else if (output_dtype != 0) {
    if (!is_known_dtype(int32_t(output_dtype))) ctx.fail("unknown output_dtype " + std::to_string(output_dtype));
    out_t = DataType(output_dtype);
  }
  if (!is_quant_int(out_t) && !is_quant_float(out_t))
    ctx.fail("cannot quantize to " + std::string(dtype_name(out_t)));
  const bool saturate = ctx.attr_int("saturate", 1) != 0;
  const int64_t block_size = ctx.attr_int("block_size", 0);
  const quant::ParamIndex qi = quant_param_index(ctx, x.shape(), scale, zp, ctx.attr_int("axis", 1), block_size);
  // The division runs in the precision attribute's type, else in y_scale's type.
  DataType prec = scale.dtype();
  if (const int64_t p = ctx.attr_int("precision", 0); p != 0) {
    if (p != int64_t(DataType::Float) && p != int64_t(DataType::Float16) && p != int64_t(DataType::BFloat16) &&
        p != int64_t(DataType::Double) && p != int64_t(DataType::Int32))
      ctx.fail("unsupported precision " + std::to_string(p));
    prec = DataType(p);
  }

  if (x.dtype() == DataType::Float && scale.dtype() == DataType::Float && prec == DataType::Float &&
      (out_t == DataType::Uint8 || out_t == DataType::Int8) && qi.mode != quant::ParamIndex::Blocked) {
    const std::vector<double> zs = zp ? real_values(*zp) : std::vector<double>(scale.element_count(), 0.0);
    Tensor& y = ctx.allocate_output(0, out_t, x.shape());
    if (out_t == DataType::Uint8)
      quantize_float8bit(x.data<float>(), scale.data<float>(), zs, qi, x.element_count(), y.mutable_data<uint8_t>());
    else
      quantize_float8bit(x.data<float>(), scale.data<float>(), zs, qi, x.element_count(), y.mutable_data<int8_t>());
    return;
  }
  const std::vector<double> xs = real_values(x), ss = real_values(scale);
  const std::vector<double> zs = zp ? real_values(*zp) : std::vector<double>(ss.size(), 0.0);
  Tensor& y = ctx.allocate_output(0, out_t, x.shape());
  double lo = 0, hi = 0;
  int_range(out_t, lo, hi);
  std::byte* d = y.mutable_raw();
  for (uint64_t i = 0; i < xs.size(); ++i) {
    const uint64_t s = qi(i);
    const double q = round_precision(prec, round_precision(prec, xs[i]) / round_precision(prec, ss[s]));
    if (is_quant_int(out_t)) {
      // Round half to even; NaN quantizes to the zero point.
      const double r = std::isnan(q) ? 0.0 : std::nearbyint(q);
      store_quantized(d, out_t, i, std::clamp(r + zs[s], lo, hi), saturate);
    } else {
      store_quantized(d, out_t, i, q + zs[s], saturate);
    }
  }
}

}  // namespace onnxscope::ref
