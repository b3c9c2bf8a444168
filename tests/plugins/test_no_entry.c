/* A shared library that is not an onnxscope plugin: no entry point. */
#include "onnxscope/plugin_abi.h"

ONNXSCOPE_PLUGIN_EXPORT int not_an_onnxscope_plugin(void);
ONNXSCOPE_PLUGIN_EXPORT int not_an_onnxscope_plugin(void) { return 42; }
