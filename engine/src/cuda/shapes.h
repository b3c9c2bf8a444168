// Shape arithmetic the CUDA engine's kernels need on the host before they
// launch: numpy broadcasting (with per-input strides for the kernel), the
// output shapes of Reshape / Squeeze / Unsqueeze / Flatten, and how a MatMul
// maps onto one strided-batched GEMM. Plain C++ (no CUDA), so it is tested
// in every build.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "onnxscope/tensor.h"

namespace onnxscope::cuda {

constexpr int kMaxRank = 8;

// Element strides of a and b for each output dimension (0 where broadcast),
// right-aligned to the output's rank; passed by value to the kernel.
struct Broadcast {
  int rank = 0;
  int64_t count = 0;
  std::array<int64_t, kMaxRank> out{}, a_stride{}, b_stride{};
};

// nullopt when the shapes do not broadcast or the rank exceeds kMaxRank.
std::optional<Broadcast> broadcast(const Shape& a, const Shape& b);
Shape broadcast_shape(const Broadcast& b);

// Each throws std::invalid_argument with the reason on a bad request.
Shape reshape_shape(const Shape& in, std::span<const int64_t> target, bool allowzero);
Shape squeeze_shape(const Shape& in, std::span<const int64_t> axes);  // empty: every 1
Shape unsqueeze_shape(const Shape& in, std::span<const int64_t> axes);
Shape flatten_shape(const Shape& in, int64_t axis);

// C[b] = A[b] x B[b] for b < batch, row-major, A [M,K], B [K,N]; a stride of
// 0 reuses one matrix for every batch.
struct MatMulPlan {
  int64_t batch = 1, m = 0, k = 0, n = 0;
  int64_t a_stride = 0, b_stride = 0;
  Shape out;
};
// nullopt for shapes one strided-batched GEMM cannot do (1-D operands, or
// batch dims that broadcast other than "all of A against one B").
std::optional<MatMulPlan> matmul_plan(const Shape& a, const Shape& b);

}  // namespace onnxscope::cuda

namespace onnxscope::cuda {

// numpy broadcasting of up to 4 inputs, for a kernel: the output shape, and
// dims and per-input strides with dims of 1 dropped and neighbours merged
// where every input either spans both or repeats over both (so a same-shape
// Add is one dim, a bias add two).
struct BroadcastPlan {
  Shape out;
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  std::array<std::array<int64_t, kMaxRank>, 4> strides{};
};
// nullopt when the shapes do not broadcast or more than kMaxRank dims remain.
std::optional<BroadcastPlan> broadcast_plan(std::span<const Shape> inputs);

}  // namespace onnxscope::cuda
