/* A plugin that registers com.example::RMSNorm, which the example_rms_norm
 * plugin registers too: loading both is a duplicate registration. */
#include "onnxscope/plugin_abi.h"

static int dup_infer(onnxscope_shape_call* call) {
  (void)call;
  return ONNXSCOPE_OK;
}
static int dup_cpu(onnxscope_kernel_call* call) {
  (void)call;
  return ONNXSCOPE_OK;
}

static const onnxscope_kernel_desc kKernels[] = {
    {"com.example", "RMSNorm", 1, 0, 2, 2, 1, 1, "a second RMSNorm", dup_cpu, NULL, dup_infer, NULL},
};
static const onnxscope_plugin_info kInfo = {ONNXSCOPE_PLUGIN_ABI_VERSION, "test_dup_rms_norm", "0", "", 1, kKernels};

ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* onnxscope_plugin_entry(void) { return &kInfo; }
