/* com.test::OddBool: a bool output whose true bytes are 7 and 255, not 1, as
 * a careless plugin might write them: x > 0 gives 7, x < 0 gives 255, 0 gives
 * 0. The host must hand the rest of the run 0s and 1s. One float input, one
 * bool output of its shape. */
#include <stdint.h>

#include "onnxscope/plugin_abi.h"

static int odd_bool_shape(onnxscope_shape_call* call) {
  call->outputs[0] = call->inputs[0];
  call->outputs[0].dtype = ONNXSCOPE_DTYPE_BOOL;
  return ONNXSCOPE_OK;
}

static int odd_bool(onnxscope_kernel_call* call) {
  const float* x = (const float*)call->inputs[0].data;
  uint8_t* y = (uint8_t*)call->outputs[0].data;
  for (uint64_t i = 0; i < call->inputs[0].element_count; ++i) y[i] = x[i] > 0 ? 7 : x[i] < 0 ? 255 : 0;
  return ONNXSCOPE_OK;
}

static const onnxscope_kernel_desc kKernels[] = {
    {"com.test", "OddBool", 1, 0, 1, 1, 1, 1, "bool bytes 7 and 255 for true", odd_bool, NULL, odd_bool_shape, NULL},
};
static const onnxscope_plugin_info kInfo = {ONNXSCOPE_PLUGIN_ABI_VERSION, "test_odd_bool", "1", "odd bool bytes", 1,
                                            kKernels};

ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* onnxscope_plugin_entry(void) { return &kInfo; }
