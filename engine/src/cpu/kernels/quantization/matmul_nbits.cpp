// com.microsoft MatMulNBits (int4 and int8 weight-only quantized MatMul, as
// ONNX Runtime's MatMul4BitsQuantizer and onnxruntime-genai write it for
// LLMs) on float32: the weights stay packed; each thread dequantizes a tile
// of columns, W[n][k] = (q - zero_point) * scale in float as the reference
// does, into a K-contiguous buffer, then multiplies: a dot product per
// column for one row of A (a decoding step reads the packed weights once),
// an Eigen product of the rows of A with the tile otherwise. Takes bits 4 or
// 8, zero points absent or packed uint8, no g_idx; the rest goes to the
// reference kernel.
#include <Eigen/Core>
#include <algorithm>
#include <vector>

#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Problem {
  int64_t K = 0, N = 0, bits = 0, block = 0, k_blocks = 0, blob = 0, zp_row = 0, rows = 0;
  bool zp = false, bias = false;
};

// The problem, or K == 0 when this kernel does not take it.
Problem problem_of(const KernelContext& ctx) {
  Problem p;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* b = input_at(ctx, 1);
  const Tensor* scales = input_at(ctx, 2);
  const Tensor* zp = input_at(ctx, 3);
  const Tensor* bias = input_at(ctx, 5);
  const int64_t K = ctx.attr_int("K", 0), N = ctx.attr_int("N", 0), bits = ctx.attr_int("bits", 0);
  const int64_t block = ctx.attr_int("block_size", 0);
  if (!a || !b || !scales || input_at(ctx, 4) || a->dtype() != DataType::Float || b->dtype() != DataType::Uint8 ||
      scales->dtype() != DataType::Float || a->rank() < 1 || a->shape().back() != K || K <= 0 || N <= 0 ||
      (bits != 4 && bits != 8) || block < 16 || (block & (block - 1)) != 0)
    return p;
  const int64_t k_blocks = (K + block - 1) / block, blob = block * bits / 8;
  if (b->shape() != Shape{N, k_blocks, blob} || static_cast<int64_t>(scales->element_count()) != N * k_blocks) return p;
  const int64_t zp_row = (k_blocks * bits + 7) / 8;
  if (zp && (zp->dtype() != DataType::Uint8 || static_cast<int64_t>(zp->element_count()) != N * zp_row)) return p;
  if (bias && (bias->dtype() != DataType::Float || bias->element_count() != static_cast<uint64_t>(N))) return p;
  p.K = K, p.N = N, p.bits = bits, p.block = block, p.k_blocks = k_blocks, p.blob = blob, p.zp_row = zp_row;
  p.zp = zp != nullptr, p.bias = bias != nullptr;
  p.rows = static_cast<int64_t>(a->element_count()) / K;
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).K > 0; }

// Column n's K weights, dequantized into w.
void dequantize_column(const Problem& p, const uint8_t* q, const float* scales, const uint8_t* zps, int64_t n, float* w) {
  const int64_t default_zp = int64_t{1} << (p.bits - 1);
  for (int64_t blk = 0; blk < p.k_blocks; ++blk) {
    const float scale = scales[n * p.k_blocks + blk];
    int64_t zp = default_zp;
    if (zps) {
      const uint8_t byte = zps[n * p.zp_row + (p.bits == 4 ? blk / 2 : blk)];
      zp = p.bits == 4 ? (blk % 2 ? byte >> 4 : byte & 0x0F) : byte;
    }
    const uint8_t* src = q + (n * p.k_blocks + blk) * p.blob;
    const int64_t k0 = blk * p.block, count = std::min(p.block, p.K - k0);
    float* dst = w + k0;
    if (p.bits == 4) {
      for (int64_t j = 0; j < count; ++j) {
        const uint8_t byte = src[j / 2];
        dst[j] = static_cast<float>(static_cast<int64_t>(j % 2 ? byte >> 4 : byte & 0x0F) - zp) * scale;
      }
    } else {
      for (int64_t j = 0; j < count; ++j) dst[j] = static_cast<float>(static_cast<int64_t>(src[j]) - zp) * scale;
    }
  }
}

void MatMulNBitsKernel(KernelContext& ctx) {
  const Problem p = problem_of(ctx);
  if (p.K == 0) ctx.fail("problem not supported by the CPU MatMulNBits");
  const Tensor& a = ctx.input(0);
  Shape out_shape = a.shape();
  out_shape.back() = p.N;
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, out_shape);
  const float* A = a.data<float>();
  const uint8_t* q = ctx.input(1).data<uint8_t>();
  const float* scales = ctx.input(2).data<float>();
  const uint8_t* zps = p.zp ? ctx.input(3).data<uint8_t>() : nullptr;
  const float* bias = p.bias ? ctx.input(5).data<float>() : nullptr;
  float* Y = y.mutable_data<float>();
  const int64_t tile = p.rows == 1 ? 8 : 64;  // columns per task
  const int64_t tiles = (p.N + tile - 1) / tile;
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  parallel_for(tiles, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> w(static_cast<size_t>(tile * p.K));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = t * tile, nb = std::min(tile, p.N - n0);
      for (int64_t j = 0; j < nb; ++j) dequantize_column(p, q, scales, zps, n0 + j, w.data() + j * p.K);
      Eigen::Map<const RowMat> W(w.data(), nb, p.K);
      Eigen::Map<const RowMat> Am(A, p.rows, p.K);
      Eigen::Map<RowMat, 0, Eigen::OuterStride<>> C(Y + n0, p.rows, nb, Eigen::OuterStride<>(p.N));
      if (p.rows == 1) C.row(0).noalias() = W * Am.row(0).transpose();
      else C.noalias() = Am * W.transpose();
      if (bias)
        for (int64_t r = 0; r < p.rows; ++r)
          for (int64_t j = 0; j < nb; ++j) Y[r * p.N + n0 + j] += bias[n0 + j];
    }
  });
}

}  // namespace

void register_matmul_nbits_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "MatMulNBits", 1, INT_MAX, "cpu-eigen", MatMulNBitsKernel, accepts});
}

}  // namespace onnxscope::cpu
