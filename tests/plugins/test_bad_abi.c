/* A plugin built for another ABI version: the host must refuse it before it
 * reads anything past abi_version. */
#include "onnxscope/plugin_abi.h"

static const onnxscope_plugin_info kInfo = {ONNXSCOPE_PLUGIN_ABI_VERSION + 41u, "test_bad_abi", "0", "", 0, NULL};

ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* onnxscope_plugin_entry(void) { return &kInfo; }
