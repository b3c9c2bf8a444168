// Reference kernel: com.microsoft MatMulNBits (ONNX Runtime's contrib
// operator for weight-only quantized LLMs: its MatMul4BitsQuantizer and
// onnxruntime-genai's model builder write it).
//
//   Y[..., n] = sum_k A[..., k] W[n][k] (+ bias[n])
//   W[n][k]  = (q[n][k] - zero_point[n][b]) * scales[n][b],  b = k / block_size (or g_idx[k])
//
// Attributes K, N, bits (2 to 8), block_size (a power of two, at least 16).
// B is uint8 (N, k_blocks, blob_size), k_blocks = ceil(K / block_size),
// blob_size = block_size * bits / 8: each block's values packed as one
// little-endian bit stream (4 bits: element 2j in byte j's low nibble, 2j+1
// in its high one). scales: N * k_blocks values of A's type. zero_points:
// absent (2^(bits-1)), uint8 packed the same way per row of N (ceil(k_blocks
// * bits / 8) bytes), or unpacked in A's type (N * k_blocks). g_idx
// (deprecated, act-order): int32 [K], the block of each k, for its scale and
// zero point (ONNX Runtime 1.31 drops packed zero points when g_idx is given;
// this kernel applies them, as the operator's formula says). The weights are
// dequantized in float as ONNX Runtime's, the products summed in double and
// rounded once (ONNX Runtime with accuracy_level 4 first quantizes A to
// int8: its results then differ from these by that rounding).
#include <cmath>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {
namespace {

// Value i of a little-endian stream of `bits`-bit fields starting at p.
uint32_t unpack(const uint8_t* p, uint64_t i, int64_t bits) {
  const uint64_t bit = i * static_cast<uint64_t>(bits);
  uint32_t v = 0;
  for (int64_t b = 0; b < bits; ++b) {
    const uint64_t at = bit + static_cast<uint64_t>(b);
    v |= static_cast<uint32_t>((p[at / 8] >> (at % 8)) & 1u) << b;
  }
  return v;
}

}  // namespace

void MatMulNBits(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& scales = ctx.input(2);
  const Tensor* zp = ctx.optional_input(3);
  const Tensor* g_idx = ctx.optional_input(4);
  const Tensor* bias = ctx.optional_input(5);
  for (const char* name : {"K", "N", "bits", "block_size"})
    if (!ctx.has_attr(name)) ctx.fail(std::string("required attribute '") + name + "' is missing");
  const int64_t K = ctx.attr_int("K", 0), N = ctx.attr_int("N", 0), bits = ctx.attr_int("bits", 0);
  const int64_t block = ctx.attr_int("block_size", 0);
  if (bits < 2 || bits > 8) ctx.fail("bits must be 2 to 8, got " + std::to_string(bits));
  if (block < 16 || (block & (block - 1)) != 0)
    ctx.fail("block_size must be a power of two of at least 16, got " + std::to_string(block));
  if (K <= 0 || N <= 0) ctx.fail("K and N must be positive, got K " + std::to_string(K) + " and N " + std::to_string(N));
  real::require_float(ctx, a, "A");
  if (a.rank() < 1 || a.shape().back() != K)
    ctx.fail("A's last dimension must be K = " + std::to_string(K) + ", got shape " + shape_to_string(a.shape()));
  const int64_t blocks = (K + block - 1) / block, blob = block * bits / 8;
  if (b.dtype() != DataType::Uint8) ctx.fail("B must be uint8, got " + std::string(dtype_name(b.dtype())));
  if (b.shape() != Shape{N, blocks, blob})
    ctx.fail("B must have shape [" + std::to_string(N) + "," + std::to_string(blocks) + "," + std::to_string(blob) +
             "] (N, k_blocks, blob_size) for K " + std::to_string(K) + ", block_size " + std::to_string(block) +
             " and " + std::to_string(bits) + " bits, got " + shape_to_string(b.shape()));
  if (scales.dtype() != a.dtype()) ctx.fail("scales must have A's element type");
  if (static_cast<int64_t>(scales.element_count()) != N * blocks)
    ctx.fail("scales must have N * k_blocks = " + std::to_string(N * blocks) + " values, got shape " +
             shape_to_string(scales.shape()));
  const bool packed_zp = zp && zp->dtype() == DataType::Uint8;
  const int64_t zp_row = packed_zp ? (blocks * bits + 7) / 8 : blocks;
  if (zp) {
    if (!packed_zp && zp->dtype() != a.dtype())
      ctx.fail("zero_points must be uint8 (packed) or A's element type, got " + std::string(dtype_name(zp->dtype())));
    if (static_cast<int64_t>(zp->element_count()) != N * zp_row)
      ctx.fail("zero_points must have " + std::to_string(N * zp_row) + " values (" + std::to_string(N) + " rows of " +
               std::to_string(zp_row) + (packed_zp ? " packed bytes" : "") + "), got shape " + shape_to_string(zp->shape()));
  }
  if (g_idx) {
    if (g_idx->dtype() != DataType::Int32 || static_cast<int64_t>(g_idx->element_count()) != K)
      ctx.fail("g_idx must be int32 with K = " + std::to_string(K) + " values, got " +
               std::string(dtype_name(g_idx->dtype())) + " " + shape_to_string(g_idx->shape()));
    for (int64_t k = 0; k < K; ++k) {
      const int32_t v = g_idx->data<int32_t>()[k];
      if (v < 0 || v >= blocks)
        ctx.fail("g_idx[" + std::to_string(k) + "] = " + std::to_string(v) + " is not a block of [0, " +
                 std::to_string(blocks) + ")");
    }
  }
  if (bias && (bias->dtype() != a.dtype() || bias->rank() != 1 || bias->shape()[0] != N))
    ctx.fail("bias must be [" + std::to_string(N) + "] of A's element type, got " + shape_to_string(bias->shape()));

  // The dequantized weights, N x K floats, as ONNX Runtime computes them.
  real::check_work(ctx, {N, K}, "the dequantized weights");
  const std::vector<double> sc = real_values(scales);
  const std::vector<double> zf = zp && !packed_zp ? real_values(*zp) : std::vector<double>{};
  const double default_zp = static_cast<double>(1 << (bits - 1));
  std::vector<float> w(static_cast<size_t>(N * K));
  const uint8_t* bq = b.data<uint8_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t blk = g_idx ? g_idx->data<int32_t>()[k] : k / block;
      // The value of k sits in its own block's blob (g_idx picks only the scale and zero point).
      const uint32_t q = unpack(bq + (n * blocks + k / block) * blob, static_cast<uint64_t>(k % block), bits);
      double z = default_zp;
      if (packed_zp) z = unpack(zp->data<uint8_t>() + n * zp_row, static_cast<uint64_t>(blk), bits);
      else if (zp) z = zf[static_cast<size_t>(n * blocks + blk)];
      const float s = static_cast<float>(sc[static_cast<size_t>(n * blocks + blk)]);
      w[static_cast<size_t>(n * K + k)] = (static_cast<float>(q) - static_cast<float>(z)) * s;
    }
  Shape out = a.shape();
  out.back() = N;
  Tensor& y = ctx.allocate_output(0, a.dtype(), out);
  const uint64_t rows = a.element_count() / static_cast<uint64_t>(K);
  const std::vector<double> av = real_values(a);
  const std::vector<double> bv = bias ? real_values(*bias) : std::vector<double>{};
  std::vector<double> yv(static_cast<size_t>(rows * static_cast<uint64_t>(N)));
  for (uint64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n) {
      double s = bias ? bv[static_cast<size_t>(n)] : 0.0;
      const double* ar = av.data() + r * static_cast<uint64_t>(K);
      const float* wr = w.data() + n * K;
      for (int64_t k = 0; k < K; ++k) s += ar[k] * static_cast<double>(wr[k]);
      yv[r * static_cast<uint64_t>(N) + static_cast<uint64_t>(n)] = s;
    }
  real::store_doubles(ctx, y, yv);
}

}  // namespace onnxscope::ref
