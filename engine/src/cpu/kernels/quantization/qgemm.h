// com.microsoft QGemm's checks and its output stage, shared by the oneDNN
// int8 form (matmul_integer.cpp) and the Eigen form (qgemm.cpp): both
// compute the exact integer sums of (a - za)(b - zb), then y as the
// reference does (reference/ops/quantization/qgemm.cpp): s + C (int32),
// times alpha * a_scale * b_scale[col] (/ y_scale) folded in float, then
// quantized (round half to even, + y_zero_point, saturated) or float.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

// The inputs and attributes both forms take (8-bit A and B of rank 2, the
// scales and zero points QGemm allows, C int32 broadcast to [M, N]).
bool qgemm_accepts(const KernelContext& ctx);

// A QLinearMatMul with per-tensor parameters: batches broadcast as numpy's
// matmul (B with batch dims: attention's products in a QOperator
// transformer; B of rank 2: its linear layers); nullopt for anything else.
struct Batched {
  Shape out;
  int64_t M = 0, K = 0, N = 0, batches = 0;
  std::vector<int64_t> a_off, b_off;  // per output batch, the element offset of its A and B matrices
};
std::optional<Batched> qlinear_matmul_batches(const KernelContext& ctx);

// alpha * a_scale * b_scale[n] (/ y_scale) per column, folded in float as the reference does.
std::vector<float> qgemm_column_scales(const KernelContext& ctx, int64_t N);

// Y of the node, allocated by the constructor, and the stage that writes it.
class QGemmOutput {
 public:
  QGemmOutput(KernelContext& ctx, int64_t M, int64_t N);
  // y[m, n] from the exact sum of the products.
  void store(int64_t m, int64_t n, double sum) const;
  // y[m, 0..N) from row m's exact int32 sums: store()'s arithmetic, eight
  // columns at a time in AVX-512 where the scales are finite (a quantized
  // ConvNeXt-T's [3136, 96] x [96, 384] products spent most of their 4.9 ms
  // in store() one element at a time).
  void store_row(int64_t m, const int32_t* sums) const;

 private:
  int64_t N_ = 0;
  std::vector<float> scale_;
  const Tensor* c_ = nullptr;
  bool float_out_ = true, u8_ = false;
  float zero_point_ = 0;
  std::byte* y_ = nullptr;
  bool vector_ = false;  // store_row's AVX-512 loop applies
};

}  // namespace onnxscope::cpu
