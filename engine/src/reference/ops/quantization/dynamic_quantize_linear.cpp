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
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {

// uint8 quantization with a scale and zero point derived from the data range
// (extended to include 0). Computed in float, as the spec's formulas are.
void DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Float) ctx.fail("x: does not support element type " + std::string(dtype_name(x.dtype())));
  const uint64_t n = x.element_count();
  const DynamicQuant q = dynamic_quant_params(x.data<float>(), n);
  Tensor& y = ctx.allocate_output(0, DataType::Uint8, x.shape());
  const float* const px = x.data<float>();
  uint8_t* const py = y.mutable_data<uint8_t>();  // fetched once: per element they are calls through the buffers
  for_chunks(n, [&](uint64_t lo, uint64_t hi) {  // each output alone
    for (uint64_t i = lo; i < hi; ++i) py[i] = dynamic_quantize(px[i], q);
  });
  store<float>(ctx.allocate_output(1, DataType::Float, {}), 0, q.scale);
  store<uint8_t>(ctx.allocate_output(2, DataType::Uint8, {}), 0, uint8_t(q.zero_point));
}

}  // namespace onnxscope::ref
