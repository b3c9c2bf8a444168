// QuantizeLinear's and DequantizeLinear's parameter layout, which the
// reference kernels and the CUDA engine share: per tensor (one scale), per
// axis (a 1-D scale along `axis`) or blocked (the input's shape with dim
// `axis` cut into blocks of `block_size`), and which scale each element
// reads. Problems are thrown as std::invalid_argument with the reason.
#pragma once

#include <cstdint>

#include "onnxscope/tensor.h"

namespace onnxscope::quant {

struct ParamIndex {
  enum Mode { PerTensor, PerAxis, Blocked } mode = PerTensor;
  int64_t axis_dim = 1, inner = 1, block = 1, scale_axis_dim = 1;

  // The scale (and zero point) element of input element i.
  uint64_t operator()(uint64_t i) const {
    if (mode == PerTensor) return 0;
    const uint64_t k = (i / uint64_t(inner)) % uint64_t(axis_dim);
    if (mode == PerAxis) return k;
    const uint64_t outer = i / uint64_t(inner * axis_dim), in = i % uint64_t(inner);
    return (outer * uint64_t(scale_axis_dim) + k / uint64_t(block)) * uint64_t(inner) + in;
  }
};

// x's shape, the scale's and the zero point's (nullptr: none), the axis
// attribute and block_size (0: not blocked).
ParamIndex param_index(const Shape& x, const Shape& scale, const Shape* zero_point, int64_t axis, int64_t block_size);

}  // namespace onnxscope::quant
