// Example plugin: com.example::FastGelu, an operator that models also define
// as a model-local ONNX function (fast_gelu.onnx carries the function). With
// the plugin an engine runs this kernel; without it, the function expansion.
// `onnxscope diff --plugin ... --plugin-engines cpu` puts the two side by side.
//
//   Y = 0.5 * X * (1 + tanh(sqrt(2/pi) * (X + 0.044715 * X^3)))
//
// Written in C++; only the C ABI of onnxscope/plugin_abi.h crosses the boundary.
#include <cmath>
#include <cstdio>

#include "onnxscope/plugin_abi.h"

namespace {

int fast_gelu_infer(onnxscope_shape_call* call) {
  const onnxscope_type& x = call->inputs[0];
  if (x.dtype != ONNXSCOPE_DTYPE_UNDEFINED && x.dtype != ONNXSCOPE_DTYPE_FLOAT) {
    std::snprintf(call->error, call->error_size, "X must be a float tensor (got dtype %d)", static_cast<int>(x.dtype));
    return ONNXSCOPE_ERROR;
  }
  call->outputs[0] = x;  // same shape, float
  call->outputs[0].dtype = ONNXSCOPE_DTYPE_FLOAT;
  return ONNXSCOPE_OK;
}

int fast_gelu_cpu(onnxscope_kernel_call* call) {
  const auto* x = static_cast<const float*>(call->inputs[0].data);
  auto* y = static_cast<float*>(call->outputs[0].data);
  constexpr float k = 0.7978845608028654f;  // sqrt(2/pi)
  for (uint64_t i = 0; i < call->inputs[0].element_count; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
  return ONNXSCOPE_OK;
}

const onnxscope_kernel_desc kKernels[] = {
    {"com.example", "FastGelu", 1, 0, 1, 1, 1, 1, "GELU, tanh approximation, one fused loop", fast_gelu_cpu, nullptr,
     fast_gelu_infer, nullptr},
};

const onnxscope_plugin_info kInfo = {ONNXSCOPE_PLUGIN_ABI_VERSION, "example_fast_gelu", "1.0",
                                     "com.example::FastGelu, a kernel for an op models also define as a function",
                                     sizeof kKernels / sizeof kKernels[0], kKernels};

}  // namespace

const onnxscope_plugin_info* onnxscope_plugin_entry(void) { return &kInfo; }
