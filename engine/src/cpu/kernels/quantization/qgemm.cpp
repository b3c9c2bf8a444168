// The 8-bit products the oneDNN int8 matmul (matmul_integer.cpp) does not
// take, on Eigen's double GEMM, where the sums of (a - za)(b - zb) are exact
// integers (below 2^53), so every result is the reference's:
//   com.microsoft QGemm (ONNX Runtime's QOperator quantizer writes it for
//     Linear layers: a quantized ViT-B/16 spent 319 of 1155 ms in 13 of them
//     on the reference's kernels): transA/transB, C (int32), per-column
//     b_scale/b_zero_point, Y quantized or float, in QGemm's float arithmetic
//     after the exact sum (reference/ops/quantization/qgemm.cpp);
//   QLinearMatMul with batch dims on both sides (attention's Q K^T and P V in
//     a QOperator ViT or Swin: 600 of those 1155 ms): batches broadcast as
//     numpy's matmul, requantized as the reference does (requantize.h).
// Batches and row blocks split across the thread pool.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // the scale's product rounds before the rounding
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/qgemm.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using DMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

bool int8(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

double value_at(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::Uint8 ? static_cast<double>(t.data<uint8_t>()[i]) : static_cast<double>(t.data<int8_t>()[i]);
}

// rows x cols of `t` from element `at` on (rows read with stride `rs`, columns with `cs`), minus `zero`.
void load(const Tensor& t, int64_t at, int64_t rows, int64_t cols, int64_t rs, int64_t cs, const double* zero_per_col,
          double zero, DMat& m) {
  m.resize(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) m(r, c) = value_at(t, at + r * rs + c * cs) - (zero_per_col ? zero_per_col[c] : zero);
}

// A scalar float (a scale) or int8 of `type` (a zero point, 0 when absent).
std::optional<double> scalar(const Tensor* t, DataType type, bool absent_ok) {
  if (!t) return absent_ok ? std::optional<double>(0.0) : std::nullopt;
  if (t->dtype() != type || t->element_count() != 1) return std::nullopt;
  return type == DataType::Float ? static_cast<double>(t->data<float>()[0]) : value_at(*t, 0);
}

}  // namespace

// --- QGemm -----------------------------------------------------------------------

bool qgemm_accepts(const KernelContext& ctx) {
  if (ctx.input_count() < 6 || ctx.input_count() > 9) return false;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* b = input_at(ctx, 3);
  if (!a || !b || !int8(a->dtype()) || !int8(b->dtype()) || a->rank() != 2 || b->rank() != 2) return false;
  if (a->dtype() == DataType::Int8 && b->dtype() == DataType::Uint8) return false;  // the reference refuses it
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const int64_t M = ta ? a->shape()[1] : a->shape()[0], K = ta ? a->shape()[0] : a->shape()[1];
  const int64_t KB = tb ? b->shape()[1] : b->shape()[0], N = tb ? b->shape()[0] : b->shape()[1];
  if (K != KB) return false;
  auto per_col = [&](const Tensor* t, DataType type) {
    return t && t->dtype() == type && t->rank() <= 1 && (t->element_count() == 1 || t->element_count() == uint64_t(N));
  };
  const Tensor* sa = input_at(ctx, 1);
  if (!sa || sa->dtype() != DataType::Float || sa->element_count() != 1) return false;
  const float sav = sa->data<float>()[0];
  if (!(sav > 0) || !std::isfinite(sav)) return false;
  if (!scalar(input_at(ctx, 2), a->dtype(), true) || !per_col(input_at(ctx, 4), DataType::Float)) return false;
  if (input_at(ctx, 5) && !per_col(input_at(ctx, 5), b->dtype())) return false;
  if (const Tensor* c = input_at(ctx, 6)) {
    const Shape& cs = c->shape();
    if (c->dtype() != DataType::Int32 || cs.size() > 2) return false;
    if (!(c->element_count() == 1 || (cs.size() == 1 && cs[0] == N) ||
          (cs.size() == 2 && (cs[0] == 1 || cs[0] == M) && (cs[1] == 1 || cs[1] == N))))
      return false;
  }
  const Tensor* ys = input_at(ctx, 7);
  const Tensor* yz = input_at(ctx, 8);
  if ((ys == nullptr) != (yz == nullptr)) return false;
  if (ys) {
    if (ys->dtype() != DataType::Float || ys->element_count() != 1 || yz->dtype() != a->dtype() || yz->element_count() != 1)
      return false;
    const float s = ys->data<float>()[0];
    if (!(s > 0) || !std::isfinite(s)) return false;
  }
  return true;
}

std::vector<float> qgemm_column_scales(const KernelContext& ctx, int64_t N) {
  const Tensor& sb = ctx.input(4);
  const Tensor* ys = input_at(ctx, 7);
  const float alpha = ctx.attr_float("alpha", 1.0f), sa = ctx.input(1).data<float>()[0];
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    scale[static_cast<size_t>(n)] = alpha * sa * sb.data<float>()[sb.element_count() == 1 ? 0 : n];  // as the reference folds it, in float
    if (ys) scale[static_cast<size_t>(n)] /= ys->data<float>()[0];
  }
  return scale;
}

QGemmOutput::QGemmOutput(KernelContext& ctx, int64_t M, int64_t N) : N_(N), scale_(qgemm_column_scales(ctx, N)) {
  const Tensor* yz = input_at(ctx, 8);
  c_ = input_at(ctx, 6);
  const DataType yt = yz ? yz->dtype() : DataType::Float;
  float_out_ = yt == DataType::Float;
  u8_ = yt == DataType::Uint8;
  if (yz) zero_point_ = static_cast<float>(value_at(*yz, 0));
  y_ = uninitialized_output(ctx, 0, yt, {M, N}).mutable_raw();
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f") && ONNXSCOPE_CPU_AVX512("avx512vl");
  vector_ = avx512 && std::all_of(scale_.begin(), scale_.end(), [](float v) { return std::isfinite(v); });
}

void QGemmOutput::store(int64_t m, int64_t n, double s) const {
  if (c_) {
    const Shape& cs = c_->shape();
    int64_t at = 0;
    if (c_->element_count() != 1) at = cs.size() == 1 ? n : (cs[0] == 1 ? 0 : m) * cs[1] + (cs[1] == 1 ? 0 : n);
    s += c_->data<int32_t>()[at];
  }
  const float v = static_cast<float>(s) * scale_[static_cast<size_t>(n)];
  if (float_out_) {
    reinterpret_cast<float*>(y_)[m * N_ + n] = v;
    return;
  }
  const double lo = u8_ ? 0 : -128, hi = u8_ ? 255 : 127;
  store_int8(y_, m * N_ + n, u8_, std::clamp<double>(std::nearbyint(v) + zero_point_, lo, hi));
}

namespace {

// Row m's columns [0, n8) (a multiple of 8) as store() makes them: the sum
// plus C in double, to float, times the column's scale in float; float Y
// stored, else rounded half to even, plus the zero point, saturated.
template <typename T>
__attribute__((target("avx512f,avx512vl"))) void row_avx512(const int32_t* sums, const int32_t* c, int64_t c_step,
                                                           const float* scale, float zero_point, int64_t n8, T* y) {
  const __m256 zp = _mm256_set1_ps(zero_point);
  for (int64_t n = 0; n < n8; n += 8) {
    __m512d s = _mm512_cvtepi32_pd(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums + n)));
    if (c) {
      const __m256i cv = c_step ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + n)) : _mm256_set1_epi32(c[0]);
      s = _mm512_add_pd(s, _mm512_cvtepi32_pd(cv));  // exact: two int32 values
    }
    const __m256 v = _mm256_mul_ps(_mm512_cvtpd_ps(s), _mm256_loadu_ps(scale + n));
    if constexpr (std::is_same_v<T, float>) {
      _mm256_storeu_ps(y + n, v);
    } else {
      constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
      const __m256 r = _mm256_add_ps(_mm256_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zp);
      const __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(lo)), _mm256_set1_ps(hi)));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(y + n), _mm256_cvtepi32_epi8(q));  // in range: exact
    }
  }
}

}  // namespace

void QGemmOutput::store_row(int64_t m, const int32_t* sums) const {
  const int64_t n8 = vector_ ? N_ / 8 * 8 : 0;
  if (n8) {
    const int32_t* c = nullptr;
    int64_t c_step = 0;
    if (c_) {
      const Shape& cs = c_->shape();
      c = c_->data<int32_t>();
      if (c_->element_count() != 1) {
        c_step = cs.size() == 1 || cs[1] != 1 ? 1 : 0;
        if (cs.size() == 2) c += (cs[0] == 1 ? 0 : m) * cs[1];
      }
    }
    const float* scale = scale_.data();
    if (float_out_) row_avx512(sums, c, c_step, scale, zero_point_, n8, reinterpret_cast<float*>(y_) + m * N_);
    else if (u8_) row_avx512(sums, c, c_step, scale, zero_point_, n8, reinterpret_cast<uint8_t*>(y_) + m * N_);
    else row_avx512(sums, c, c_step, scale, zero_point_, n8, reinterpret_cast<int8_t*>(y_) + m * N_);
  }
  for (int64_t n = n8; n < N_; ++n) store(m, n, static_cast<double>(sums[n]));
}

namespace {

void QGemmKernel(KernelContext& ctx) {
  if (!qgemm_accepts(ctx)) ctx.fail("problem not supported by the CPU QGemm");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
  const int64_t N = tb ? b.shape()[0] : b.shape()[1];
  const double za = *scalar(input_at(ctx, 2), a.dtype(), true);
  const Tensor* zb = input_at(ctx, 5);
  std::vector<double> zbs(static_cast<size_t>(N), 0.0);
  if (zb)
    for (int64_t n = 0; n < N; ++n) zbs[static_cast<size_t>(n)] = value_at(*zb, zb->element_count() == 1 ? 0 : n);
  DMat B;
  load(b, 0, K, N, tb ? 1 : N, tb ? K : 1, zbs.data(), 0, B);
  const QGemmOutput y(ctx, M, N);
  const int64_t block = std::max<int64_t>(1, 65536 / std::max<int64_t>(K * 4, 1));
  parallel_for(M, block, [&](int64_t m0, int64_t m1) {
    DMat A, acc;
    load(a, ta ? m0 : m0 * K, m1 - m0, K, ta ? 1 : K, ta ? M : 1, nullptr, za, A);
    acc.noalias() = A * B;
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t n = 0; n < N; ++n) y.store(m, n, acc(m - m0, n));
  });
}

// --- QLinearMatMul with batches ----------------------------------------------------

}  // namespace

std::optional<Batched> qlinear_matmul_batches(const KernelContext& ctx) {
  if (ctx.input_count() != 8) return std::nullopt;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* b = input_at(ctx, 3);
  const Tensor* yz = input_at(ctx, 7);
  if (!a || !b || !yz || !int8(a->dtype()) || !int8(b->dtype()) || !int8(yz->dtype()) || a->rank() < 2 || b->rank() < 2)
    return std::nullopt;
  if (!scalar(input_at(ctx, 1), DataType::Float, false) || !scalar(input_at(ctx, 4), DataType::Float, false) ||
      !scalar(input_at(ctx, 6), DataType::Float, false) || !scalar(input_at(ctx, 2), a->dtype(), false) ||
      !scalar(input_at(ctx, 5), b->dtype(), false) || yz->element_count() != 1)
    return std::nullopt;
  const Shape& as = a->shape();
  const Shape& bs = b->shape();
  Batched p;
  p.M = as[as.size() - 2], p.K = as.back(), p.N = bs.back();
  if (bs[bs.size() - 2] != p.K) return std::nullopt;
  // numpy's matmul: the batch dims broadcast.
  const size_t ra = as.size() - 2, rb = bs.size() - 2, r = std::max(ra, rb);
  Shape batch(r, 1);
  for (size_t d = 0; d < r; ++d) {
    const int64_t x = d < r - ra ? 1 : as[d - (r - ra)], y = d < r - rb ? 1 : bs[d - (r - rb)];
    if (x != y && x != 1 && y != 1) return std::nullopt;
    batch[d] = std::max(x, y);
  }
  p.batches = 1;
  for (int64_t d : batch) p.batches *= d;
  p.a_off.resize(static_cast<size_t>(p.batches));
  p.b_off.resize(static_cast<size_t>(p.batches));
  for (int64_t i = 0; i < p.batches; ++i) {
    int64_t rest = i, ao = 0, bo = 0, astride = p.M * p.K, bstride = p.K * p.N;
    for (size_t d = r; d-- > 0;) {
      const int64_t idx = rest % batch[d];
      rest /= batch[d];
      const int64_t x = d < r - ra ? 1 : as[d - (r - ra)], y = d < r - rb ? 1 : bs[d - (r - rb)];
      if (x != 1) ao += idx * astride;
      if (y != 1) bo += idx * bstride;
      astride *= x, bstride *= y;
    }
    p.a_off[static_cast<size_t>(i)] = ao, p.b_off[static_cast<size_t>(i)] = bo;
  }
  p.out = batch;
  p.out.push_back(p.M);
  p.out.push_back(p.N);
  return p;
}

namespace {

bool accepts_batched(const KernelContext& ctx) { return qlinear_matmul_batches(ctx).has_value(); }

void QLinearMatMulBatched(KernelContext& ctx) {
  const std::optional<Batched> p = qlinear_matmul_batches(ctx);
  if (!p) ctx.fail("problem not supported by the CPU batched QLinearMatMul");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& yz = ctx.input(7);
  const float sa = ctx.input(1).data<float>()[0], sb = ctx.input(4).data<float>()[0], sy = ctx.input(6).data<float>()[0];
  const double mult = static_cast<float>(sa * sb / sy);  // formed in float, as the reference does
  const double za = value_at(ctx.input(2), 0), zb = value_at(ctx.input(5), 0), zy = value_at(yz, 0);
  const bool u8 = yz.dtype() == DataType::Uint8;
  const double lo = u8 ? 0 : -128, hi = u8 ? 255 : 127;
  Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), p->out);
  std::byte* out = y.mutable_raw();
  parallel_for(p->batches, 1, [&](int64_t b0, int64_t b1) {
    DMat A, B, C;
    for (int64_t i = b0; i < b1; ++i) {
      load(a, p->a_off[static_cast<size_t>(i)], p->M, p->K, p->K, 1, nullptr, za, A);
      load(b, p->b_off[static_cast<size_t>(i)], p->K, p->N, p->N, 1, nullptr, zb, B);
      C.noalias() = A * B;
      const int64_t base = i * p->M * p->N;
      for (int64_t e = 0; e < p->M * p->N; ++e) store_int8(out, base + e, u8, requantize(C.data()[e], mult, zy, lo, hi));
    }
  });
}

}  // namespace

void register_qgemm_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QGemm", 1, INT_MAX, "cpu-eigen", QGemmKernel, qgemm_accepts});
  r.add(KernelDef{"", "QLinearMatMul", 10, INT_MAX, "cpu-eigen", QLinearMatMulBatched, accepts_batched});
}

}  // namespace onnxscope::cpu
