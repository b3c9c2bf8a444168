// Reference kernel: DynamicQuantizeLinear.
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
#include "reference/ops/real_values.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// uint8 quantization with a scale and zero point derived from the data range
// (extended to include 0). Computed in float, as the spec's formulas are.
void DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float) ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  const uint64_t n = x.element_count();
  float maxx = 0.0f, minx = 0.0f;
  for (uint64_t i = 0; i < n; ++i) {
    const float v = load<float>(x, i);
    maxx = std::max(maxx, v);
    minx = std::min(minx, v);
  }
  const float qmin = 0.0f, qmax = 255.0f;
  const float scale = (maxx == minx ? 1.0f : (maxx - minx)) / (qmax - qmin);
  const float initial_zp = qmin - minx / scale;
  float zp = std::nearbyint(std::clamp(initial_zp, qmin, qmax));
  if (std::isnan(zp)) zp = 0.0f;  // an infinite range (-inf / inf); numpy's uint8 cast gives 0 too
  Tensor& y = ctx.allocate_output(0, DataType::Uint8, x.shape());
  for (uint64_t i = 0; i < n; ++i) {
    const float q = std::nearbyint(load<float>(x, i) / scale) + zp;
    store<uint8_t>(y, i, uint8_t(std::isnan(q) ? zp : std::clamp(q, qmin, qmax)));
  }
  store<float>(ctx.allocate_output(1, DataType::Float, {}), 0, scale);
  store<uint8_t>(ctx.allocate_output(2, DataType::Uint8, {}), 0, uint8_t(zp));
}

}  // namespace onnxscope::ref
