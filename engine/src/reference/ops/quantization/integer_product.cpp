// The exact integer product of two 8-bit operands (integer_product.h).
#include "reference/ops/quantization/integer_product.h"

// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "reference/ops/math/gemm_f64.h"
#include "reference/ops/math/transpose8_avx512.h"

namespace onnxscope::ref {
namespace {

// An 8-bit value at p as an integer.
int64_t byte_at(const uint8_t* p, bool is_signed) { return is_signed ? int64_t{static_cast<int8_t>(*p)} : int64_t{*p}; }

// The plain packer (any CPU, any width): out[(g * K + t) * width + r] =
// M(r0 + g * width + r, t) minus its zero point, in double, zero past `rows`.
void pack_int8_plain(const Int8Matrix& m, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) {
  for (int64_t g = 0; g * width < rows; ++g) {
    const int64_t n = std::min(width, rows - g * width);
    double* panel = out + g * K * width;
    if (m.col == 1) {  // a packed row's elements adjacent (A's rows): each row read in order
      for (int64_t r = 0; r < width; ++r) {
        const int64_t row = r0 + g * width + r, z = r < n ? m.zero->at(row) : 0;
        for (int64_t t = 0; t < K; ++t)
          panel[t * width + r] = r < n ? static_cast<double>(byte_at(m.data + row * m.row + t, m.is_signed) - z) : 0.0;
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

// Eight 8-bit values at p as doubles (exact).
template <bool Signed>
__attribute__((target("avx512f"))) inline __m512d eight_bytes(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return _mm512_cvtepi32_pd(Signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
}

// dst[t * ld + r] = src[r * stride + t] - z[r] for r < 8, t < K: eight rows
// of adjacent bytes (A's rows, or a transposed B's) into a panel, 8 x 8
// blocks widened and transposed in registers (pack_rows's order).
template <bool Signed>
__attribute__((target("avx512f"))) void pack_rows8_int8(const uint8_t* src, int64_t stride, int64_t K, const double* z,
                                                        double* dst, int64_t ld) {
  int64_t t = 0;
  for (; t + 8 <= K; t += 8) {
    __m512d r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm512_sub_pd(eight_bytes<Signed>(src + i * stride + t), _mm512_set1_pd(z[i]));
    math::store_transposed8(r, dst + t * ld, ld);
  }
  for (; t < K; ++t)
    for (int i = 0; i < 8; ++i) {
      const uint8_t b = src[i * stride + t];
      dst[t * ld + i] = static_cast<double>(Signed ? int64_t{static_cast<int8_t>(b)} : int64_t{b}) - z[i];
    }
}

// dst[(g * K + t) * width + r] = src[t * stride + g * width + r] - z[g * width + r]
// for t < K, g < groups, r < width (a multiple of 8): whole groups of
// adjacent bytes (B's columns), each row of src read once, in order.
template <bool Signed>
__attribute__((target("avx512f"))) void widen_int8(const uint8_t* src, int64_t stride, int64_t K, int64_t groups,
                                                   int64_t width, const double* z, double* dst) {
  for (int64_t t = 0; t < K; ++t) {
    const uint8_t* row = src + t * stride;
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t r = 0; r < width; r += 8)
        _mm512_storeu_pd(dst + (g * K + t) * width + r,
                         _mm512_sub_pd(eight_bytes<Signed>(row + g * width + r), _mm512_loadu_pd(z + g * width + r)));
  }
}

template <bool Signed>
void pack_int8_avx512(const Int8Matrix& m, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) {
  const int64_t whole = rows / width;  // groups without padding; the last, partial one goes the plain way
  std::vector<double> z(static_cast<size_t>(whole * width));  // zero points as doubles (8-bit: exact)
  for (int64_t r = 0; r < whole * width; ++r) z[static_cast<size_t>(r)] = static_cast<double>(m.zero->at(r0 + r));
  if (m.col == 1) {  // a packed row's elements adjacent: eight rows at a time
    for (int64_t g = 0; g < whole; ++g)
      for (int64_t s = 0; s < width; s += 8)
        pack_rows8_int8<Signed>(m.data + (r0 + g * width + s) * m.row, m.row, K, z.data() + g * width + s,
                                out + g * K * width + s, width);
  } else {  // m.row == 1: a group's values for one t adjacent
    widen_int8<Signed>(m.data + r0, m.col, K, whole, width, z.data(), out);
  }
  if (whole * width < rows)
    pack_int8_plain(m, r0 + whole * width, rows - whole * width, K, width, out + whole * K * width);
}

// Packer for gemm_packed: out[(g * K + t) * width + r] = M(r0 + g * width + r, t)
// minus its zero point, in double, zero past `rows`; widened in AVX-512
// where the CPU has it and the layout allows (the same doubles either way).
void pack_int8(const void* ctx, int64_t r0, int64_t rows, int64_t K, int64_t width, double* out) {
  const Int8Matrix& m = *static_cast<const Int8Matrix*>(ctx);
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 && width % 8 == 0 && rows >= width && (m.col == 1 || m.row == 1)) {
    if (m.is_signed) return pack_int8_avx512<true>(m, r0, rows, K, width, out);
    return pack_int8_avx512<false>(m, r0, rows, K, width, out);
  }
  pack_int8_plain(m, r0, rows, K, width, out);
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
  // Sums that stay in int32 (K up to about 14000): 16-bit dot products where the CPU has them.
  if (static_cast<double>(K) * da * db < 2147483647.0 && detail::integer_gemm8_vnni(a, bt, M, N, K, sink)) return;
  math::gemm_packed(math::Packer{pack_int8, &a}, math::Packer{pack_int8, &bt}, M, N, K, sink, /*exact_products=*/true);
}

void integer_matmul8(const math::MatMulShape& ms, const uint8_t* a, bool a_signed, const ZeroPoints& za,
                     const uint8_t* b, bool b_signed, const ZeroPoints& zb, const BatchSink& sink) {
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  const uint64_t batches = *checked_element_count(ms.batch);
  const Shape* shapes[] = {&ms.a_batch, &ms.b_batch};
  BroadcastIndex bi(ms.batch, shapes);
  auto one_batch = [&](uint64_t bt, uint64_t a_off, uint64_t b_off) {
    const Int8Matrix am{a + a_off * static_cast<uint64_t>(M * K), K, 1, a_signed, &za};
    // B's columns as the packed rows: column j's element t at j + t * N.
    const Int8Matrix bm{b + b_off * static_cast<uint64_t>(K * N), 1, N, b_signed, &zb};
    integer_gemm8(am, bm, M, N, K, [&](int64_t i, int64_t j0, const double* v, int64_t n) { sink(bt, i, j0, v, n); });
  };
  for_each_product(batches, M * N * std::max<int64_t>(K, 1), bi, one_batch);  // (exact sums: any split gives the same)
}

}  // namespace onnxscope::ref
