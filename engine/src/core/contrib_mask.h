// The mask formats of ONNX Runtime's com.microsoft Attention (mask_index)
// and MultiHeadAttention (key_padding_mask), which the reference kernels
// and the CPU engine's share: the mask as an additive (B, S, T) bias, 0
// where a key is kept, `filter` (mask_filter_value) where it is masked.
//   (B)          right padding: keys at and after mask[b] are masked
//   (2B)         left and right padding: keys before mask[B+b] too
//   (B, T)       raw key padding, 0 masked, anything above 0 kept
//   (B, 1) or (1, 1) with T > 1: a dummy mask that masks nothing
//   (B, S, T)    raw, per query
// Other shapes throw std::invalid_argument naming the shape.
#pragma once

#include <cstdint>
#include <vector>

#include "onnxscope/tensor.h"

namespace onnxscope::contrib_mask {

std::vector<double> key_mask_bias(const Shape& mask_shape, const std::vector<int64_t>& mask, int64_t B, int64_t S,
                                  int64_t T, double filter, const char* what);

}  // namespace onnxscope::contrib_mask
