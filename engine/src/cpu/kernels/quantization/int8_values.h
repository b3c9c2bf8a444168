// Small readers the 8-bit kernels share: an 8-bit tensor's element as an
// integer, and an optional input as a tensor.
#pragma once

#include <cstdint>

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

// Element i of a uint8 or int8 tensor.
inline int64_t int8_at(const Tensor& t, uint64_t i = 0) {
  return t.dtype() == DataType::Int8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

// Input i when given and a tensor, else null.
inline const Tensor* input_at(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return v && v->is_tensor() ? &v->tensor() : nullptr;
}

}  // namespace onnxscope::cpu
