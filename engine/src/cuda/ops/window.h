// The geometry Conv and the pools share: kernel, strides, dilations and
// pads from the attributes (auto_pad included), and the output size.
#pragma once

#include <string>
#include <vector>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

struct Window {
  int rank = 0;  // spatial dims
  std::vector<int64_t> in, kernel, stride, dilation, pad_begin, pad_end, out;
};

// x_shape [N, C, *spatial]; kernel from `kernel` (Conv: the weights' spatial
// dims) or the kernel_shape attribute. ceil_mode for pools. Fails through
// the context on a bad attribute or an empty output.
Window window_of(const OpContext& c, const Shape& x_shape, std::vector<int64_t> kernel, bool ceil_mode);

// The placement rule they share: input 0 of rank 3 to 5 (1 to 3 spatial dims).
std::optional<std::string> refuse_spatial_rank(const Graph& g, const Node& n);

}  // namespace onnxscope::cuda
