// The exact integer product of two 8-bit operands minus their zero points,
// shared by MatMulInteger, QLinearMatMul, QGemm, MatMulIntegerToFloat and
// DynamicQuantizeMatMul (quantization/integer_product.cpp):
//   sum[i, j] = sum over t of (A(i, t) - za) * (B(t, j) - zb)
// The operands are read where they lie, a block at a time, through the
// double product of math/gemm_f64.h: every difference is at most 383 in
// magnitude, so every partial sum is an integer below 2^53 for any K a
// tensor can have, and the double sums are the integer ones exactly, in any
// blocking and at any thread count. No widened copy of A or B is made (an
// int64 copy was eight times an 8-bit weight).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/math/gemm_f64.h"

namespace onnxscope::ref {

// A zero point: one value, or one per row of A / per column of B.
struct ZeroPoints {
  int64_t one = 0;
  std::vector<int64_t> each;  // empty: `one` for all
  int64_t at(int64_t r) const { return each.empty() ? one : each[static_cast<size_t>(r)]; }
};
// `zp` (or none: 0) for an operand of shape `s`: a scalar, or (rank 2 and
// more) one value per row (`along_rows`, A's) or per column (B's); else the
// node fails naming `what`.
ZeroPoints zero_points_of(const KernelContext& ctx, const Tensor* zp, const Shape& s, bool along_rows, const char* what);

// An 8-bit matrix minus its zero points: element (r, t) is the byte at
// data + r * row + t * col (int8 where `is_signed`, else uint8) minus
// zero.at(r) (zero points per packed row: A's rows, B's columns).
struct Int8Matrix {
  const uint8_t* data = nullptr;
  int64_t row = 0, col = 0;
  bool is_signed = false;
  const ZeroPoints* zero = nullptr;
};

// sum(i, j) = sum over t < K of A(i, t) * Bt(j, t) for i < M, j < N, to
// `sink` (exact integers in double; rows of results, from the pool's threads).
void integer_gemm8(const Int8Matrix& a, const Int8Matrix& bt, int64_t M, int64_t N, int64_t K, const math::RowSink& sink);

namespace detail {
// integer_gemm8 on AVX-512 VNNI's 16-bit dot products in int32
// (integer_product_vnni.cpp), for a caller that has checked every partial
// sum stays below 2^31; false where the CPU lacks VNNI (nothing computed).
bool integer_gemm8_vnni(const Int8Matrix& a, const Int8Matrix& bt, int64_t M, int64_t N, int64_t K, const math::RowSink& sink);
// Whether it may run (default: yes); off, every product takes the double
// product, so tests can hold both paths to the same sums on any CPU.
void set_vnni_products(bool on);
}  // namespace detail

// Receives the sums of batch `batch` of numpy matmul's output:
// sum(i, j0 + k) = v[k] for k < n.
using BatchSink = std::function<void(uint64_t batch, int64_t i, int64_t j0, const double* v, int64_t n)>;

// (A - za) @ (B - zb) with numpy matmul's shapes (ms = math::matmul_shape of
// A's and B's shapes; 1-D operands as rows / columns, batch dims broadcast),
// A and B 8-bit bytes of those shapes, za per row of A's matrices or one,
// zb per column of B's or one.
void integer_matmul8(const math::MatMulShape& ms, const uint8_t* a, bool a_signed, const ZeroPoints& za,
                     const uint8_t* b, bool b_signed, const ZeroPoints& zb, const BatchSink& sink);

}  // namespace onnxscope::ref
