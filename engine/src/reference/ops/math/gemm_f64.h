// The reference's matrix product on floats: y(i, j) = sum over t < K of
// A(i, t) * B(t, j), each product and each partial sum rounded in double and
// the sum taken in order t = 0, 1, ..., K - 1 (never a fused multiply-add),
// exactly as the plain triple loop computes it. The blocking, the vector
// width and the threads only decide which results are computed together, so
// every result is the same bits on any machine at any thread count.
//
// A and B are read in their storage type S through element strides (so a
// transposed operand is a stride, not a copy); blocks of them are widened to
// double as they are packed, never whole tensors. Used by MatMul, Gemm
// (math/matmul.cpp, math/gemm.cpp) and the convolutions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <functional>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/thread_scratch.h"
#include "reference/ops/math/vector_isa.h"

namespace onnxscope::ref::math {

// Element (r, c) of a matrix of storage type S at data + (r * row + c * col) elements.
struct Operand {
  const std::byte* data = nullptr;
  int64_t row = 0, col = 0;
};

// Receives results: y(i, j0 + k) = v[k] for k < n.
using RowSink = std::function<void(int64_t i, int64_t j0, const double* v, int64_t n)>;

// Packs rows [r0, r0 + rows) of a matrix (the rows of A, or the columns of
// B) in groups of `width` as out[(g * K + t) * width + r] = row g * width + r,
// element t, in double, zero past `rows`. `ctx` is the packer's own data.
struct Packer {
  void (*fn)(const void* ctx, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) = nullptr;
  const void* ctx = nullptr;
};

// y = A B, A's rows and B's columns given by their packers (K elements each).
// `exact_products`: every packed value is a float (or narrower) widened, so
// each product of two has at most 48 significant bits and is exact in
// double; then acc + a * b rounds once either way, and a fused multiply-add
// gives the same bits at twice the rate.
void gemm_packed(const Packer& a, const Packer& b, int64_t M, int64_t N, int64_t K, const RowSink& sink,
                 bool exact_products = false);

// B packed once, into `storage` (by the thread pool), for many products
// with it (a recurrent layer's W^T, used by every thread's blocks of
// steps): the same sums as gemm_packed.
class PackedB {
 public:
  PackedB(const Packer& b, int64_t N, int64_t K, ScratchVector<double>& storage);
  // out[i * ldo + j] = (A B)(i, j) for i < M, j < N (B's panels shared out
  // to the threads when the product is large enough).
  void multiply(const Packer& a, int64_t M, double* out, int64_t ldo, bool exact_products) const;

 private:
  int64_t n_ = 0, k_ = 0;
  VectorIsa isa_;  // the tile the panels were packed for
  const ScratchVector<double>* panels_;
};

// Whether products of two values of storage type S are exact in double.
template <typename S>
constexpr bool exact_double_products = std::is_same_v<compute_t<S>, float>;

namespace detail {
// dst[(g * K + t) * width + k] = src[t * stride + g * width + k] widened to
// double, for t < K, g < groups, k < width: `groups` panels of adjacent
// floats, read row by row (each row of src once, in order: a B of 9 MB read
// panel by panel instead was one cache line per 4 KB page, the product's
// slowest part), vectorised where the CPU allows.
void widen(const float* src, int64_t stride, double* dst, int64_t K, int64_t groups, int64_t width);
// dst[t * width + r] = src[r * stride + t] widened, for r < width, t < K:
// `width` rows of adjacent floats (A's rows) into a tile's panel, blocks
// transposed in registers (an element at a time it was 4% of a decoder's
// reference run). False where the CPU has no vector form for that width
// (the caller packs them itself).
bool pack_rows(const float* src, int64_t stride, int64_t K, int64_t width, double* dst);

template <typename S>
void pack_strided(const void* ctx, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) {
  const Operand& m = *static_cast<const Operand*>(ctx);
  const auto elem = static_cast<int64_t>(sizeof(S));
  int64_t g0 = 0;
  if constexpr (std::is_same_v<S, float>) {
    if (m.row == 1 && rows >= width) {  // a group's elements t are `width` adjacent floats (B's columns)
      g0 = rows / width;
      widen(reinterpret_cast<const float*>(m.data + r0 * elem), m.col, out, K, g0, width);
    }
  }
  for (int64_t g = g0; g * width < rows; ++g) {
    const int64_t n = std::min(width, rows - g * width);  // rows of this group
    if constexpr (std::is_same_v<S, float>) {
      if (m.col == 1 && n == width &&
          pack_rows(reinterpret_cast<const float*>(m.data) + (r0 + g * width) * m.row, m.row, K, width, out + g * K * width))
        continue;
    }
    if (m.col == 1) {  // each row's elements t adjacent (A's rows): read row by row, in order
      for (int64_t r = 0; r < width; ++r) {
        const std::byte* src = m.data + (r0 + g * width + r) * m.row * elem;
        for (int64_t t = 0; t < K; ++t) {
          double v = 0.0;
          if (r < n) {
            S e;
            std::memcpy(&e, src + t * elem, sizeof(S));
            v = static_cast<double>(to_compute(e));
          }
          out[(g * K + t) * width + r] = v;
        }
      }
      continue;
    }
    for (int64_t t = 0; t < K; ++t) {
      double* o = out + (g * K + t) * width;
      for (int64_t r = 0; r < width; ++r) {
        if (r >= n) {
          o[r] = 0.0;
          continue;
        }
        S v;
        std::memcpy(&v, m.data + ((r0 + g * width + r) * m.row + t * m.col) * elem, sizeof(S));
        o[r] = static_cast<double>(to_compute(v));
      }
    }
  }
}
}  // namespace detail

// A float product of a few rows (M <= 4, or M <= 8 with B of at most 2^20
// values) by a B whose rows are contiguous,
// without packing: the sums of 4 rows by 32 columns stay in registers while
// t runs in order, each of B's rows read once for the 4 (a Scan body's
// [1, 64] x [64, 64], a decoder's one token: a tile of 6 rows wasted 5 and
// packing B cost as much as the products).
// False, and nothing done, where it does not apply (no AVX2 either).
bool gemm_few_rows_f32(const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, const RowSink& sink);

// y = A B for A [M, K] and B [K, N] of storage type S (a float type).
template <typename S>
void gemm_f64(const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, const RowSink& sink) {
  if constexpr (std::is_same_v<S, float>)
    if (gemm_few_rows_f32(a, b, M, N, K, sink)) return;
  const Operand bt{b.data, b.col, b.row};  // B's columns are packed like A's rows: B^T(j, t) = B(t, j)
  gemm_packed(Packer{&detail::pack_strided<S>, &a}, Packer{&detail::pack_strided<S>, &bt}, M, N, K, sink,
              exact_double_products<S>);
}

}  // namespace onnxscope::ref::math
