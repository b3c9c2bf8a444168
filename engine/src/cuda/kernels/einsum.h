// Einsum (float32, up to 3 operands), one thread per output element: the
// sum over the summed labels of the operands' product, each operand read
// through its strides per output dim and per summed dim (core/einsum_plan.h:
// repeated labels' strides added, broadcast dims 0). Products and the sum in
// double, in the reference's order (the last summed dim fastest).
#pragma once

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

struct EinsumKernel {
  static constexpr int kOperands = 3;
  int operands = 0, out_rank = 0, sum_rank = 0;
  int64_t out_dims[kKernelRank] = {}, sum_dims[kKernelRank] = {};
  int64_t out_stride[kOperands][kKernelRank] = {}, sum_stride[kOperands][kKernelRank] = {};
  int64_t sum_count = 1;
  const float* x[kOperands] = {};
  float* y = nullptr;
  OS_HD void operator()(int64_t o) const {
    int64_t base[kOperands] = {};
    for (int64_t d = out_rank - 1, rest = o; d >= 0; --d) {
      const int64_t c = rest % out_dims[d];
      rest /= out_dims[d];
      for (int i = 0; i < operands; ++i) base[i] += c * out_stride[i][d];
    }
    double acc = 0;
    for (int64_t s = 0; s < sum_count; ++s) {
      int64_t off[kOperands] = {};
      for (int i = 0; i < operands; ++i) off[i] = base[i];
      for (int64_t d = sum_rank - 1, rest = s; d >= 0; --d) {
        const int64_t c = rest % sum_dims[d];
        rest /= sum_dims[d];
        for (int i = 0; i < operands; ++i) off[i] += c * sum_stride[i][d];
      }
      double prod = 1;
      for (int i = 0; i < operands; ++i) prod *= static_cast<double>(x[i][off[i]]);
      acc += prod;
    }
    y[o] = static_cast<float>(acc);
  }
};

}  // namespace onnxscope::cuda
