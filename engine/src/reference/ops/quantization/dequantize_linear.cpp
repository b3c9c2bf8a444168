// Reference kernel: DequantizeLinear.
//
// Quantization covers per-tensor, per-axis and blocked parameters and every
// quantized type of every version. Transforms and windows are computed in
// double and rounded once to the output type.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <stdexcept>
#include <string>
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

// The common case in float: 8-bit x, float per-tensor or per-axis scale,
// float y. (x - zp) is exact in float (9 bits), and float's product is the
// correctly rounded one, which the double product (exact) rounded once to
// float is too: the same bits. Threaded (each output alone).
template <typename Q>
void dequantize_8bit_float(const Q* x, const float* scale, const std::vector<double>& zs, const quant::ParamIndex& qi,
                           uint64_t n, float* y) {
  for_quant_runs(qi, n, [&](uint64_t i0, uint64_t i1, uint64_t k) {
    const float s = scale[k], z = static_cast<float>(zs[k]);
    for (uint64_t i = i0; i < i1; ++i) y[i] = (static_cast<float>(x[i]) - z) * s;
  });
}

}  // namespace

// y = (x - x_zero_point) * x_scale
void DequantizeLinear(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  if (!is_quant_int(x.dtype()) && !is_quant_float(x.dtype()) && x.dtype() != DataType::Int32)
    ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  if (zp && zp->dtype() != x.dtype())
    ctx.fail("x_zero_point type " + std::string(dtype_name(zp->dtype())) + " differs from x's " +
             std::string(dtype_name(x.dtype())));
  switch (scale.dtype()) {
    case DataType::Float: case DataType::Float16: case DataType::BFloat16: case DataType::Float8E8M0: break;
    default: ctx.fail("x_scale: does not support element type " + std::string(dtype_name(scale.dtype())));
  }
  if (opset < 21 && scale.rank() > 1) ctx.fail("x_scale must be a scalar or 1-D before opset 21");
  DataType out_t = scale.dtype();
  if (const int64_t od = ctx.attr_int("output_dtype", 0); od != 0) {
    if (!is_known_dtype(int32_t(od))) ctx.fail("unknown output_dtype " + std::to_string(od));
    out_t = DataType(od);
  }
  if (out_t != DataType::Float && out_t != DataType::Float16 && out_t != DataType::BFloat16)
    ctx.fail("cannot dequantize to " + std::string(dtype_name(out_t)) + " (set output_dtype)");
  const quant::ParamIndex qi =
      quant_param_index(ctx, x.shape(), scale, zp, ctx.attr_int("axis", 1), ctx.attr_int("block_size", 0));
  if ((x.dtype() == DataType::Uint8 || x.dtype() == DataType::Int8) && scale.dtype() == DataType::Float &&
      out_t == DataType::Float && qi.mode != quant::ParamIndex::Blocked) {
    const std::vector<double> zs = zp ? real_values(*zp) : std::vector<double>(scale.element_count(), 0.0);
    float* y = ctx.allocate_output(0, out_t, x.shape()).mutable_data<float>();
    if (x.dtype() == DataType::Uint8) dequantize_8bit_float(x.data<uint8_t>(), scale.data<float>(), zs, qi, x.element_count(), y);
    else dequantize_8bit_float(x.data<int8_t>(), scale.data<float>(), zs, qi, x.element_count(), y);
    return;
  }
  const std::vector<double> xs = real_values(x), ss = real_values(scale);
  const std::vector<double> zs = zp ? real_values(*zp) : std::vector<double>(ss.size(), 0.0);
  std::vector<double> ys(xs.size());
  for (uint64_t i = 0; i < xs.size(); ++i) {
    const uint64_t s = qi(i);
    ys[i] = (xs[i] - zs[s]) * ss[s];  // exact in double for every quantized type
  }
  real::store_doubles(ctx, ctx.allocate_output(0, out_t, x.shape()), ys);
}

}  // namespace onnxscope::ref
