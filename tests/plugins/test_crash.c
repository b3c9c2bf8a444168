/* Kernels that fail the way real kernels do, for the isolated engine's tests:
 * com.test::Crash dereferences a null pointer, com.test::Abort aborts after
 * printing a message, com.test::Spin never returns. Each has one input and
 * one output of the input's type and shape. */
#include <stdio.h>
#include <stdlib.h>

#include "onnxscope/plugin_abi.h"

static int same_as_input(onnxscope_shape_call* call) {
  call->outputs[0] = call->inputs[0];
  return ONNXSCOPE_OK;
}

static int crash(onnxscope_kernel_call* call) {
  volatile int* nowhere = (volatile int*)(call->user_data);
  *nowhere = 42;
  return ONNXSCOPE_OK;
}

static int abort_kernel(onnxscope_kernel_call* call) {
  (void)call;
  fprintf(stderr, "test_crash: Abort kernel giving up\n");
  fflush(stderr);
  abort();
}

static int spin(onnxscope_kernel_call* call) {
  (void)call;
  volatile unsigned long n = 0;
  for (;;) ++n;
  return ONNXSCOPE_OK;
}

static const onnxscope_kernel_desc kKernels[] = {
    {"com.test", "Crash", 1, 0, 1, 1, 1, 1, "writes through a null pointer", crash, NULL, same_as_input, NULL},
    {"com.test", "Abort", 1, 0, 1, 1, 1, 1, "calls abort()", abort_kernel, NULL, same_as_input, NULL},
    {"com.test", "Spin", 1, 0, 1, 1, 1, 1, "never returns", spin, NULL, same_as_input, NULL},
};
static const onnxscope_plugin_info kInfo = {ONNXSCOPE_PLUGIN_ABI_VERSION, "test_crash", "1", "kernels that crash", 3,
                                            kKernels};

ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* onnxscope_plugin_entry(void) { return &kInfo; }
