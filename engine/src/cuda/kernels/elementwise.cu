// Elementwise float32 kernels: grid-stride loops, one output element per
// iteration; broadcasting by per-dimension strides (0 where a dim repeats).
#include "cuda/kernels/kernels.h"

namespace onnxscope::cuda {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 ? b : 65535);  // grid-stride loops cover the rest
}

__device__ float unary(UnaryOp op, float x) {
  switch (op) {
    case UnaryOp::Relu: return x < 0.f ? 0.f : x;  // NaN stays NaN, like max(x, 0) in the reference
    case UnaryOp::Sigmoid: return 1.f / (1.f + expf(-x));
    case UnaryOp::Tanh: return tanhf(x);
    case UnaryOp::Exp: return expf(x);
    case UnaryOp::Log: return logf(x);
    case UnaryOp::Sqrt: return sqrtf(x);
    case UnaryOp::Neg: return -x;
    case UnaryOp::Abs: return fabsf(x);
    case UnaryOp::Erf: return erff(x);
  }
  return x;
}

__device__ float binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
  }
  return a;
}

__global__ void unary_kernel(UnaryOp op, const float* x, float* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) y[i] = unary(op, x[i]);
}

__global__ void binary_kernel(BinaryOp op, const float* a, const float* b, float* y, BroadcastArgs bc) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < bc.count; i += step) {
    int64_t rest = i, oa = 0, ob = 0;
    for (int d = bc.rank - 1; d >= 0; --d) {
      const int64_t c = rest % bc.out[d];
      rest /= bc.out[d];
      oa += c * bc.a_stride[d];
      ob += c * bc.b_stride[d];
    }
    y[i] = binary(op, a[oa], b[ob]);
  }
}

}  // namespace

cudaError_t launch_unary(UnaryOp op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  unary_kernel<<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n);
  return cudaGetLastError();
}

cudaError_t launch_binary(BinaryOp op, const float* a, const float* b, float* y, const BroadcastArgs& bc,
                          cudaStream_t stream) {
  if (bc.count <= 0) return cudaSuccess;
  binary_kernel<<<blocks_for(bc.count), kThreads, 0, stream>>>(op, a, b, y, bc);
  return cudaGetLastError();
}

}  // namespace onnxscope::cuda
