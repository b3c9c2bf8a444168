// The CUDA engine's own kernels (kernels/*.cu), as plain launch functions on
// a stream. Included by nvcc and by the host compiler: no CUDA C++ here.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace onnxscope::cuda {

enum class UnaryOp : int { Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Neg, Abs, Erf };
enum class BinaryOp : int { Add, Sub, Mul, Div };

// cuda/shapes.h's Broadcast as plain arrays (what a kernel argument can be).
struct BroadcastArgs {
  int rank = 0;
  int64_t count = 0;
  int64_t out[8] = {}, a_stride[8] = {}, b_stride[8] = {};
};

// y[i] = op(x[i]) for i < n (float32).
cudaError_t launch_unary(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream);
// y[i] = op(a[...], b[...]) over the broadcast (float32).
cudaError_t launch_binary(BinaryOp op, const float* a, const float* b, float* y, const BroadcastArgs& bc,
                          cudaStream_t stream);

}  // namespace onnxscope::cuda
