// Small parameter inputs the CPU kernels read in `accepts` (a Clip bound, a
// Pow exponent, a quantization scale, Slice starts, Pad pads): their values,
// or nullopt when the input is not of the form the kernel takes, so that the
// kernel declines and the reference names the problem.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "onnxscope/value.h"

namespace onnxscope::cpu {

// A one-element float32 tensor's value.
inline std::optional<float> scalar_float(const Value* v) {
  if (!v || !v->is_tensor() || v->tensor().dtype() != DataType::Float || v->tensor().element_count() != 1)
    return std::nullopt;
  return v->tensor().data<float>()[0];
}

// A 1-D (or scalar) int32 / int64 tensor's values.
inline std::optional<std::vector<int64_t>> int_list(const Value* v) {
  if (!v || !v->is_tensor() || v->tensor().rank() > 1) return std::nullopt;
  const Tensor& t = v->tensor();
  if (t.dtype() == DataType::Int64) return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.element_count());
  if (t.dtype() == DataType::Int32) return std::vector<int64_t>(t.data<int32_t>(), t.data<int32_t>() + t.element_count());
  return std::nullopt;
}

}  // namespace onnxscope::cpu
