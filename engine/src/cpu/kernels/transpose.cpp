// Transpose for every fixed-width element type: axes that stay neighbours
// are merged first, then either whole runs are copied (the innermost axis
// stays innermost: [B,S,H,D] -> [B,H,S,D]) or the last two output axes are
// transposed in cache-sized tiles ([.., S, D] -> [.., D, S]); the outer
// index is split across the thread pool. Packed 4/2/6-bit types and strings
// go to the reference kernel.
#include <cstring>
#include <immintrin.h>
#include <type_traits>
#include <numeric>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

std::vector<int64_t> permutation(const KernelContext& ctx, size_t rank) {
  std::vector<int64_t> perm = ctx.attr_ints("perm", {});
  if (perm.empty()) {
    perm.resize(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  }
  return perm;
}

bool accepts(const KernelContext& ctx) {
  const Value* v = ctx.input_value(0);
  if (!v || !v->is_tensor()) return false;
  const Tensor& x = v->tensor();
  if (x.is_string() || is_packed_dtype(x.dtype())) return false;
  const auto perm = permutation(ctx, x.shape().size());
  if (perm.size() != x.shape().size()) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[static_cast<size_t>(p)]) return false;
    seen[static_cast<size_t>(p)] = true;
  }
  return true;
}

template <typename T>
void tile_transpose(const T* in, T* out, int64_t rows, int64_t cols, int64_t in_row_stride, int64_t in_col_stride) {
  // out[r][c] = in[r * in_row_stride + c * in_col_stride], out is rows x cols, contiguous.
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) out[r * cols + c] = in[r * in_row_stride + c * in_col_stride];
    }
}

// The 4-byte case (float32, int32) where the input's rows are contiguous (a
// 2-D transpose [S, D] -> [D, S]): 8 x 8 blocks transposed in AVX registers
// (unpack, shuffle, permute: bits move, nothing is computed), the edges as
// the plain loop does. Chosen at run time; without AVX2 the template runs.
__attribute__((target("avx2"))) void transpose8x8(const uint32_t* in, int64_t ld_in, uint32_t* out, int64_t ld_out) {
  const float* src = reinterpret_cast<const float*>(in);
  float* dst = reinterpret_cast<float*>(out);
  __m256 r[8];
  for (int64_t i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * ld_in);
  avx2::transpose8(r);
  for (int64_t i = 0; i < 8; ++i) _mm256_storeu_ps(dst + i * ld_out, r[i]);
}

bool has_avx2() { return cpu_has_avx2(); }

// out[r][c] = in[r + c * in_col_stride] (rows x cols, out contiguous) by 8 x 8 blocks within 32 x 32 tiles.
void tile_transpose4(const uint32_t* in, uint32_t* out, int64_t rows, int64_t cols, int64_t in_col_stride) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      int64_t r = r0;
      for (; r + 8 <= r1; r += 8) {
        int64_t c = c0;
        for (; c + 8 <= c1; c += 8) transpose8x8(in + c * in_col_stride + r, in_col_stride, out + r * cols + c, cols);
        for (int64_t rr = r; rr < r + 8; ++rr)
          for (int64_t cc = c; cc < c1; ++cc) out[rr * cols + cc] = in[rr + cc * in_col_stride];
      }
      for (; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) out[r * cols + c] = in[r + c * in_col_stride];
    }
}

template <typename T>
void transpose_typed(const std::byte* in_raw, std::byte* out_raw, const Shape& out_dims, const Shape& in_strides) {
  const T* in = reinterpret_cast<const T*>(in_raw);
  T* out = reinterpret_cast<T*>(out_raw);
  const size_t rank = out_dims.size();
  // Outer index over every output axis but the last two: after merging there
  // are at least two (one axis left is a contiguous copy, done by the
  // caller). A run copy (the innermost axis stays innermost) copies a band of
  // runs at one input stride per task; the offset of its outer index is
  // worked out once per task, not once per run.
  const bool run_copy = in_strides[rank - 1] == 1;
  constexpr size_t inner_axes = 2;
  int64_t outer = 1;
  for (size_t d = 0; d + inner_axes < rank; ++d) outer *= out_dims[d];
  const int64_t cols = out_dims[rank - 1];
  const int64_t rows = out_dims[rank - 2];
  const int64_t block = rows * cols;
  // Tasks are (outer index, band of up to 32 rows), so threads share a single
  // outer index too ([1,C,H,W] -> [1,H,W,C] is one [C, HW] transpose).
  constexpr int64_t kBand = 32;
  const int64_t bands = (rows + kBand - 1) / kBand;
  const int64_t band_elems = std::min(rows, kBand) * cols;
  parallel_for(outer * bands, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, band_elems)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / bands, r0 = (t % bands) * kBand, nr = std::min(kBand, rows - r0);
      // Input offset of this outer index.
      int64_t rem = o, off = 0;
      for (size_t d = rank - inner_axes; d-- > 0;) {
        off += (rem % out_dims[d]) * in_strides[d];
        rem /= out_dims[d];
      }
      const T* src = in + off + r0 * in_strides[rank - 2];
      T* dst = out + o * block + r0 * cols;
      if (run_copy) {
        for (int64_t r = 0; r < nr; ++r)
          std::memcpy(dst + r * cols, src + r * in_strides[rank - 2], static_cast<size_t>(cols) * sizeof(T));
        continue;
      }
      if (std::is_same_v<T, uint32_t> && in_strides[rank - 2] == 1 && has_avx2())
        tile_transpose4(reinterpret_cast<const uint32_t*>(src), reinterpret_cast<uint32_t*>(dst), nr, cols,
                        in_strides[rank - 1]);
      else
        tile_transpose(src, dst, nr, cols, in_strides[rank - 2], in_strides[rank - 1]);
    }
  });
}

void Transpose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t rank = x.shape().size();
  const auto perm = permutation(ctx, rank);
  Shape out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[i] = x.shape()[static_cast<size_t>(perm[i])];
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), out_shape);
  if (x.element_count() == 0) return;
  if (rank == 0) {
    std::memcpy(y.mutable_raw(), x.raw(), *storage_bytes(x.dtype(), 1));
    return;
  }
  // Input strides, then merge output axes whose input axes are adjacent and in order.
  Shape in_strides(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) in_strides[d] = in_strides[d + 1] * x.shape()[d + 1];
  Shape dims, strides;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t n = out_shape[i], s = in_strides[static_cast<size_t>(perm[i])];
    if (n == 1) continue;  // unit axes do not move anything
    if (!dims.empty() && strides.back() == s * n) {
      dims.back() *= n;
      strides.back() = s;
    } else {
      dims.push_back(n);
      strides.push_back(s);
    }
  }
  // One axis left (the others all of size 1) has input stride 1: nothing moves.
  if (dims.size() <= 1) {
    std::memcpy(y.mutable_raw(), x.raw(), *storage_bytes(x.dtype(), x.element_count()));
    return;
  }
  switch (*storage_bytes(x.dtype(), 1)) {
    case 1: transpose_typed<uint8_t>(x.raw(), y.mutable_raw(), dims, strides); break;
    case 2: transpose_typed<uint16_t>(x.raw(), y.mutable_raw(), dims, strides); break;
    case 4: transpose_typed<uint32_t>(x.raw(), y.mutable_raw(), dims, strides); break;
    case 8: transpose_typed<uint64_t>(x.raw(), y.mutable_raw(), dims, strides); break;
    case 16: {
      struct Pair { uint64_t a, b; };
      transpose_typed<Pair>(x.raw(), y.mutable_raw(), dims, strides);
      break;
    }
    default: ctx.fail("Transpose: unexpected element size");
  }
}

}  // namespace

void register_transpose_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Transpose", 1, INT_MAX, "cpu-copy", Transpose, accepts});
}

}  // namespace onnxscope::cpu
