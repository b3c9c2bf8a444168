// The exact integer product of two 8-bit operands (integer_product.h).
#include "reference/ops/quantization/integer_product.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "reference/ops/math/gemm_f64.h"

namespace onnxscope::ref {
namespace {

// An 8-bit value at p as an integer.
int64_t byte_at(const uint8_t* p, bool is_signed) { return is_signed ? int64_t{static_cast<int8_t>(*p)} : int64_t{*p}; }

// Packer for gemm_packed: out[(g * K + t) * width + r] = M(r0 + g * width + r, t)
// minus its zero point, in double, zero past `rows`.
void pack_int8(const void* ctx, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) {
  const Int8Matrix& m = *static_cast<const Int8Matrix*>(ctx);
  for (int64_t g = 0; g * width < rows; ++g) {
    const int64_t n = std::min(width, rows - g * width);
    double* panel = out + g * K * width;
    if (m.col == 1) {  // a packed row's elements adjacent (A's rows): each row read in order
      for (int64_t r = 0; r < width; ++r) {
        if (r >= n) {
          for (int64_t t = 0; t < K; ++t) panel[t * width + r] = 0.0;
          continue;
        }
        const int64_t row = r0 + g * width + r, z = m.zero->at(row);
        const uint8_t* src = m.data + row * m.row;
        if (m.is_signed)
          for (int64_t t = 0; t < K; ++t) panel[t * width + r] = static_cast<double>(int64_t{static_cast<int8_t>(src[t])} - z);
        else
          for (int64_t t = 0; t < K; ++t) panel[t * width + r] = static_cast<double>(int64_t{src[t]} - z);
      }
      continue;
    }
    // Packed rows adjacent for each t (B's columns): `width` bytes a step.
    for (int64_t t = 0; t < K; ++t) {
      double* o = panel + t * width;
      for (int64_t r = 0; r < width; ++r) {
        if (r >= n) {
          o[r] = 0.0;
          continue;
        }
        const int64_t row = r0 + g * width + r;
        o[r] = static_cast<double>(byte_at(m.data + row * m.row + t * m.col, m.is_signed) - m.zero->at(row));
      }
    }
  }
}

}  // namespace

ZeroPoints zero_points_of(const KernelContext& ctx, const Tensor* zp, const Shape& s, bool along_rows, const char* what) {
  ZeroPoints z;
  if (!zp || zp->element_count() == 0) return z;
  if (zp->element_count() == 1) {
    z.one = zp->element_as_int64(0);
    return z;
  }
  if (s.size() < 2) ctx.fail(std::string(what) + " must be a scalar for a 1-D input");
  const int64_t n = along_rows ? s[s.size() - 2] : s.back();
  if (static_cast<int64_t>(zp->element_count()) != n)
    ctx.fail(std::string(what) + " must be a scalar or have " + std::to_string(n) + " values, got " + shape_to_string(zp->shape()));
  z.each.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) z.each[static_cast<size_t>(i)] = zp->element_as_int64(static_cast<uint64_t>(i));
  return z;
}

void integer_gemm8(const Int8Matrix& a, const Int8Matrix& bt, int64_t M, int64_t N, int64_t K, const math::RowSink& sink) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {  // empty sums
    std::vector<double> zeros(static_cast<size_t>(N), 0.0);
    for (int64_t i = 0; i < M; ++i) sink(i, 0, zeros.data(), N);
    return;
  }
  // Differences of 8-bit values and 8-bit zero points: at most 383 (uint8
  // against an int8 zero point), so exact in double up to any K below
  // 2^53 / 383^2, about 6e10.
  auto largest = [](const ZeroPoints& z) {
    int64_t m = std::abs(z.one);
    for (int64_t v : z.each) m = std::max(m, std::abs(v));
    return m;
  };
  const double da = 255.0 + static_cast<double>(largest(*a.zero)), db = 255.0 + static_cast<double>(largest(*bt.zero));
  if (!(static_cast<double>(K) * da * db < 9007199254740992.0))
    throw std::runtime_error("the integer sums would pass 2^53 (K " + std::to_string(K) + ")");
  math::gemm_packed(math::Packer{pack_int8, &a}, math::Packer{pack_int8, &bt}, M, N, K, sink, /*exact_products=*/true);
}

void integer_matmul8(const math::MatMulShape& ms, const uint8_t* a, bool a_signed, const ZeroPoints& za,
                     const uint8_t* b, bool b_signed, const ZeroPoints& zb, const BatchSink& sink) {
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  const uint64_t batches = *checked_element_count(ms.batch);
  const Shape* shapes[] = {&ms.a_batch, &ms.b_batch};
  BroadcastIndex bi(ms.batch, shapes);
  for (uint64_t bt = 0; bt < batches; ++bt, bi.next()) {
    const Int8Matrix am{a + bi.offsets()[0] * static_cast<uint64_t>(M * K), K, 1, a_signed, &za};
    // B's columns as the packed rows: column j's element t at j + t * N.
    const Int8Matrix bm{b + bi.offsets()[1] * static_cast<uint64_t>(K * N), 1, N, b_signed, &zb};
    integer_gemm8(am, bm, M, N, K, [&](int64_t i, int64_t j0, const double* v, int64_t n) { sink(bt, i, j0, v, n); });
  }
}

}  // namespace onnxscope::ref
