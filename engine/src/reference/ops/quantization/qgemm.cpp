// Reference kernel: com.microsoft QGemm (ONNX Runtime's contrib operator,
// which its QOperator quantizer writes for Gemm: classifier heads).
//
// Inputs A, a_scale, a_zero_point, B, b_scale, b_zero_point, C (optional,
// int32, quantized with scale a_scale * b_scale and zero point 0), y_scale,
// y_zero_point (both present: Y quantized like A; both absent: Y float);
// attributes alpha (1), transA, transB. A is M x K (K x M with transA), B
// K x N (N x K with transB); b_scale and b_zero_point a scalar or one per
// column of Y. C broadcasts to M x N from (), (N), (1, N), (M, 1), (M, N).
//   acc[m][n] = C[m][n] + sum_k (a[m][k] - za) (b[k][n] - zb[n])   exact, in integers
//   Y = acc * (alpha a_scale b_scale[n])                            float output
//   Y = saturate(round_half_even(acc * (alpha a_scale b_scale[n] / y_scale)) + zy)
// with the scale folded in float first, as ONNX Runtime does.
#pragma GCC optimize("fp-contract=off")  // products and sums round as written, in the vector stage too
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <string>
#include <type_traits>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/math/common.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/quantization/integer_product.h"

namespace onnxscope::ref {
namespace {

// The output stage of `count` sums of one row, 8 at a time in AVX-512: C
// (int32: `c` stepping by c_step, or none) plus the sum in double (both
// integers below 2^53: exact), rounded once to float as the scalar int64 ->
// float cast rounds, times the column's scale, then Y (float) or quantized as
// quantize_float does (vrndscaleps to nearest even, + zero point, the same
// clamp). Stops before a block with a NaN (whose cast the scalar loop
// keeps); returns how many it wrote.
template <typename T>
__attribute__((target("avx512f,avx512dq,avx512vl"))) int64_t stage_avx512(const double* sums, int64_t count, const int32_t* c,
                                                                          int64_t c_step, const float* scale, float* yf, T* yq,
                                                                          T zy) {
  const __m256 lo = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::min()));
  const __m256 hi = _mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::max()));
  const __m256 vzy = _mm256_set1_ps(static_cast<float>(zy));
  int64_t k = 0;
  for (; k + 8 <= count; k += 8) {
    __m512d acc = _mm512_loadu_pd(sums + k);
    if (c) {
      const __m256i cv = c_step == 0 ? _mm256_set1_epi32(c[0]) : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + k));
      acc = _mm512_add_pd(acc, _mm512_cvtepi32_pd(cv));
    }
    const __m256 v = _mm256_mul_ps(_mm512_cvtpd_ps(acc), _mm256_loadu_ps(scale + k));
    if (_mm256_cmp_ps_mask(v, v, _CMP_UNORD_Q)) break;
    if (yf) {
      _mm256_storeu_ps(yf + k, v);
      continue;
    }
    const __m256 q = _mm256_add_ps(_mm256_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzy);
    const __m256i r = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(q, lo), hi));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(yq + k), _mm256_cvtepi32_epi8(r));
  }
  return k;
}

// A 1-D or scalar parameter with one value, or one per column of Y.
const Tensor& per_column(const KernelContext& ctx, size_t i, int64_t n, const char* what) {
  const Tensor& t = ctx.input(i);
  if (t.rank() > 1 || (t.element_count() != 1 && static_cast<int64_t>(t.element_count()) != n))
    ctx.fail(std::string(what) + " must be a scalar or have " + std::to_string(n) + " values (one per column of Y), got shape " +
             shape_to_string(t.shape()));
  return t;
}

template <typename TA, typename TB>
void qgemm(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A and B must be 2-D, got " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
  const int64_t KB = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
  if (K != KB) ctx.fail("A's K (" + std::to_string(K) + ") does not match B's (" + std::to_string(KB) + ")");
  const float sa = qlinear_scale(ctx, 1, "a_scale");
  const TA za = qlinear_zero_point<TA>(ctx, 2, a.dtype(), "a_zero_point");
  const Tensor& sb = per_column(ctx, 4, N, "b_scale");
  if (sb.dtype() != DataType::Float) ctx.fail("b_scale must be float");
  const Tensor* zbt = ctx.optional_input(5);
  if (zbt) {
    per_column(ctx, 5, N, "b_zero_point");
    if (zbt->dtype() != b.dtype()) ctx.fail("b_zero_point must be " + std::string(dtype_name(b.dtype())) + " like B");
  }
  const Tensor* c = ctx.optional_input(6);
  if (c) {
    if (c->dtype() != DataType::Int32) ctx.fail("C must be int32, got " + std::string(dtype_name(c->dtype())));
    const Shape& cs = c->shape();
    const bool ok = c->element_count() == 1 || (cs.size() == 1 && cs[0] == N) ||
                    (cs.size() == 2 && (cs[0] == 1 || cs[0] == M) && (cs[1] == 1 || cs[1] == N));
    if (!ok || cs.size() > 2) ctx.fail("C of shape " + shape_to_string(cs) + " does not broadcast to [" + std::to_string(M) + "," + std::to_string(N) + "]");
  }
  const Tensor* ys = ctx.optional_input(7);
  const Tensor* yz = ctx.optional_input(8);
  if ((ys == nullptr) != (yz == nullptr))
    ctx.fail("y_scale and y_zero_point come together: both (Y quantized) or neither (Y float)");
  const float alpha = ctx.attr_float("alpha", 1.0f);
  const float sy = ys ? qlinear_scale(ctx, 7, "y_scale") : 1.0f;
  const DataType yt = yz ? yz->dtype() : DataType::Float;
  if (yz && yt != a.dtype()) ctx.fail("y_zero_point must be " + std::string(dtype_name(a.dtype())) + " like A");
  Tensor& y = ctx.allocate_output(0, yt, {M, N});
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  std::vector<float> scale(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    scale[n] = alpha * sa * sb.data<float>()[sb.element_count() == 1 ? 0 : n];
    if (ys) scale[n] /= sy;
  }
  // The sums of (a - za)(b - zb[n]) over k for every (m, n), exact in
  // integers (integer_product.h: A and B read where they lie, a transposed
  // one through its strides), then C added and the scale applied.
  ZeroPoints zpa, zpb;
  zpa.one = static_cast<int64_t>(za);
  if (zbt && zbt->element_count() == 1) zpb.one = static_cast<int64_t>(zbt->data<TB>()[0]);
  else if (zbt) for (int64_t n = 0; n < N; ++n) zpb.each.push_back(static_cast<int64_t>(zbt->data<TB>()[n]));
  const Int8Matrix am{reinterpret_cast<const uint8_t*>(pa), ta ? 1 : K, ta ? M : 1, std::is_signed_v<TA>, &zpa};
  const Int8Matrix bm{reinterpret_cast<const uint8_t*>(pb), tb ? K : 1, tb ? 1 : N, std::is_signed_v<TB>, &zpb};  // B's columns
  // Y's pointer fetched once (through the buffer per element it was a tenth of a quantized ViT's reference run).
  float* yf = yt == DataType::Float ? y.mutable_data<float>() : nullptr;
  TA* yq = yf ? nullptr : y.mutable_data<TA>();
  const TA zy = yz ? yz->data<TA>()[0] : TA(0);
  // C's element for (m, n) at m * c_row + n * c_col (broadcast dims step 0).
  const int32_t* cv = c ? c->data<int32_t>() : nullptr;
  int64_t c_row = 0, c_col = 0;
  if (c && c->element_count() != 1) {
    const Shape& cs = c->shape();
    if (cs.size() == 1) c_col = 1;
    else c_row = cs[0] == 1 ? 0 : cs[1], c_col = cs[1] == 1 ? 0 : 1;
  }
  static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                             __builtin_cpu_supports("avx512vl");
  integer_gemm8(am, bm, M, N, K, [&](int64_t m, int64_t j0, const double* sums, int64_t count) {
    int64_t k = 0;
    if (avx512 && c_col <= 1)
      k = stage_avx512<TA>(sums, count, cv ? cv + m * c_row + j0 * c_col : nullptr, c_col, scale.data() + j0,
                           yf ? yf + m * N + j0 : nullptr, yq ? yq + m * N + j0 : nullptr, zy);
    for (; k < count; ++k) {
      const int64_t n = j0 + k;
      int64_t acc = cv ? int64_t{cv[m * c_row + n * c_col]} : 0;
      acc += static_cast<int64_t>(sums[k]);
      const float v = static_cast<float>(acc) * scale[static_cast<size_t>(n)];
      if (yf) yf[m * N + n] = v;
      else yq[m * N + n] = quantize_float<TA>(v, zy);
    }
  });
}

}  // namespace

void QGemm(KernelContext& ctx) {
  if (ctx.input_count() < 6 || ctx.input_count() > 9)
    ctx.fail("QGemm takes A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point: got " +
             std::to_string(ctx.input_count()) + " inputs");
  for (size_t i : {0u, 1u, 3u, 4u})
    if (!ctx.optional_input(i)) ctx.fail("input " + std::to_string(i) + " is missing");
  const DataType ta = ctx.input(0).dtype(), tb = ctx.input(3).dtype();
  if (ta == DataType::Uint8 && tb == DataType::Uint8) qgemm<uint8_t, uint8_t>(ctx);
  else if (ta == DataType::Uint8 && tb == DataType::Int8) qgemm<uint8_t, int8_t>(ctx);
  else if (ta == DataType::Int8 && tb == DataType::Int8) qgemm<int8_t, int8_t>(ctx);
  else
    ctx.fail("A and B must be uint8 and uint8 or int8, or int8 and int8, got " + std::string(dtype_name(ta)) + " and " +
             std::string(dtype_name(tb)));
}

}  // namespace onnxscope::ref
