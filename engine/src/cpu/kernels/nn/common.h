// Helpers shared by the CPU engine's own nn kernels.
#pragma once

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

// Conv's inputs as the plain float32 kernels take them: X and W present, an
// optional bias, every given input a float32 tensor.
inline bool float_conv_inputs(const KernelContext& ctx) {
  if (ctx.input_count() < 2 || ctx.input_count() > 3) return false;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Value* v = ctx.input_value(i);
    if (i < 2 && !v) return false;
    if (v && (!v->is_tensor() || v->tensor().dtype() != DataType::Float)) return false;
  }
  return true;
}

}  // namespace onnxscope::cpu
