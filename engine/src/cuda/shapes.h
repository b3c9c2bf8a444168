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
#include <vector>

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

// A strided copy (Transpose, Slice, Concat, Expand, ...: y[out_base + sum
// c_d out_stride_d] = x[in_base + sum c_d in_stride_d]) made cheaper for the
// kernel, moving the same bytes: dims of 1 dropped; neighbours merged where
// both sides run on across them (or repeat over both); and where the
// innermost dim is contiguous on both sides, its elements moved in units of
// up to 16 bytes, as far as its size, the other strides, the bases and the
// two addresses allow. Fewer index divisions per byte, wider accesses.
struct CopyPlan {
  std::vector<int64_t> dims, in_stride, out_stride;  // in units
  int64_t in_base = 0, out_base = 0;                 // in units
  int unit = 1;                                      // bytes: 1, 2, 4, 8 or 16
};
// `width`: the element's bytes (1, 2, 4 or 8); x, y: the addresses copied from and to.
CopyPlan plan_copy(std::span<const int64_t> dims, std::span<const int64_t> in_stride, std::span<const int64_t> out_stride,
                   int64_t in_base, int64_t out_base, int width, uintptr_t x, uintptr_t y);

}  // namespace onnxscope::cuda
