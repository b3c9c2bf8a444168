// Helpers of the reference kernels that compute in double (attention,
// recurrent layers, quantization, signal): float-type checks, values widened
// to double and stored back rounded once, a work-size check.
#pragma once

#include <cmath>
#include <string>
#include <cstring>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

namespace real {

// Fails unless `t` has one of the float element types (float, double, float16, bfloat16).
inline void require_float(const KernelContext& ctx, const Tensor& t, const char* what) {
  switch (t.dtype()) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16: return;
    default: ctx.fail(std::string(what) + ": does not support element type " + std::string(dtype_name(t.dtype())));
  }
}

// Fails unless a working buffer of `shape` (derived from input dims) stays
// within the tensor size limit, so bad dims fail cleanly instead of exhausting memory.
inline void check_work(const KernelContext& ctx, const Shape& shape, const char* what) {
  const auto n = checked_element_count(shape);
  if (!n || *n > ctx.max_tensor_bytes() / 8)
    ctx.fail(std::string(what) + " of shape " + shape_to_string(shape) + " exceeds the tensor size limit");
}

// Elements of a float tensor widened to double (the family computes in double).
inline std::vector<double> to_doubles(const KernelContext& ctx, const Tensor& t, const char* what) {
  require_float(ctx, t, what);
  return real_values(t);
}

// Writes doubles into a float output tensor, rounding once per element to its type.
inline void store_doubles(const KernelContext& ctx, Tensor& t, const std::vector<double>& v) {
  dispatch<kFloats>(ctx, t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    std::byte* p = t.mutable_raw();  // fetched once: per element it costs more than the store
    for (uint64_t i = 0; i < t.element_count(); ++i) {
      const S s = from_compute<S>(static_cast<compute_t<S>>(v[i]));
      std::memcpy(p + i * sizeof(S), &s, sizeof(S));
    }
  });
}

// Rounds a double to the precision of a float type (what a value of that type could hold).
inline double round_to(DataType t, double v) {
  switch (t) {
    case DataType::Float: return static_cast<float>(v);
    case DataType::Float16: return half_to_float(float_to_half(static_cast<float>(v)));
    case DataType::BFloat16: return bfloat16_to_float(float_to_bfloat16(static_cast<float>(v)));
    default: return v;
  }
}

inline double sigmoid(double x) {
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}

}  // namespace real

}  // namespace onnxscope::ref
