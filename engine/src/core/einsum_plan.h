// Einsum's labels, sizes and strides, which the reference kernel and the
// CUDA engine share: the equation's terms with their ellipses expanded
// (ellipsis dims broadcast, size 1 stretching), the output labels (explicit,
// or the implicit ones: the ellipsis, then the labels used once, in ASCII
// order), the labels summed over, and for each operand the element stride
// each output and summed dim moves it by (a repeated label's strides add, a
// broadcast dim's is 0). Problems are thrown as std::invalid_argument.
#pragma once

#include <string>
#include <vector>

#include "onnxscope/tensor.h"

namespace onnxscope::einsum {

struct Plan {
  Shape out_shape, sum_shape;
  std::vector<std::vector<int64_t>> out_stride, sum_stride;  // [operand][dim]
};

// `equation` without spaces; one shape per operand.
Plan plan(const std::string& equation, const std::vector<Shape>& inputs);

}  // namespace onnxscope::einsum
