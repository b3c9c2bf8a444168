// com.microsoft QLinearAdd and QLinearMul (ONNX Runtime's QOperator
// quantizer writes them for residual Adds, Hardswish and squeeze-excitation
// gates: 126 of them in a quantized ConvNeXt-T, two thirds of its time on
// the reference's kernels) on uint8 or int8: the output as broadcast rows
// (broadcast.h) split across the thread pool, each row a tight loop in the
// reference's float arithmetic, so the bytes are the reference's:
//   QLinearAdd: c = (a - za) (sa / sc) + (b - zb) (sb / sc)
//   QLinearMul: c = (a - za) (b - zb) (sa sb / sc)
//   C = saturate(round_half_even(c) + zc)
// Per-tensor parameters only; anything else goes to the reference kernel,
// which names the problem.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // qa * ra + qb * rb rounds twice, as the reference's: no FMA
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in its conversions.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/broadcast.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Params {
  float ra = 0, rb = 0, rab = 0;
  float za = 0, zb = 0, zc = 0;
  BroadcastRows rows;
};

std::optional<Params> params_of(const KernelContext& ctx) {
  if (ctx.input_count() < 7 || ctx.input_count() > 8) return std::nullopt;
  const Tensor* a = input_at(ctx, 0);
  const Tensor* b = input_at(ctx, 3);
  if (!a || !b || (a->dtype() != DataType::Uint8 && a->dtype() != DataType::Int8) || b->dtype() != a->dtype())
    return std::nullopt;
  auto scale = [&](size_t i) -> std::optional<float> {
    const Tensor* t = input_at(ctx, i);
    if (!t || t->dtype() != DataType::Float || t->element_count() != 1) return std::nullopt;
    const float v = t->data<float>()[0];
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;  // the reference refuses it, naming the scale
    return v;
  };
  auto zero = [&](size_t i) -> std::optional<float> {
    const Tensor* t = input_at(ctx, i);
    if (!t) return 0.0f;
    if (t->dtype() != a->dtype() || t->element_count() != 1) return std::nullopt;
    return static_cast<float>(t->element_as_int64(0));
  };
  const auto sa = scale(1), sb = scale(4), sc = scale(6);
  const auto za = zero(2), zb = zero(5), zc = zero(7);
  if (!sa || !sb || !sc || !za || !zb || !zc) return std::nullopt;
  auto rows = broadcast_rows({&a->shape(), &b->shape()});
  if (!rows) return std::nullopt;
  Params p;
  p.ra = *sa / *sc, p.rb = *sb / *sc, p.rab = *sa * *sb / *sc;
  p.za = *za, p.zb = *zb, p.zc = *zc;
  p.rows = std::move(*rows);
  return p;
}

bool accepts(const KernelContext& ctx) { return params_of(ctx).has_value(); }

template <typename T, bool Mul>
inline T one(T a, T b, const Params& p) {
  constexpr float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const float qa = static_cast<float>(a) - p.za, qb = static_cast<float>(b) - p.zb;
  const float v = Mul ? qa * qb * p.rab : qa * p.ra + qb * p.rb;
  const float q = std::nearbyint(v) + p.zc;
  return static_cast<T>(q < lo ? lo : q > hi ? hi : q);
}

template <typename T, bool Mul>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void row_plain(const T* a, int64_t sa, const T* b, int64_t sb, T* c, int64_t n, const Params& p) {
  for (int64_t i = 0; i < n; ++i) c[i] = one<T, Mul>(a[i * sa], b[i * sb], p);
}

// Sixteen values at once with one()'s operations in its order (no fused
// multiply-add; the rounding is nearbyint's, half to even), for operands of
// the same shape (a residual Add) or one of them a single value along the
// row (AScalar / BScalar: the 0.5 and 1 of a GELU written out, a quantized
// ConvNeXt-T's 36 such QLinearAdds and QLinearMuls on [1, 56, 56, 384] took
// 1.3 ns a value on the plain loop): the compiler's own vectorisation of
// one() went through 16-bit packs, 2.8x slower than this.
template <typename T>
__attribute__((target("avx512f"))) inline __m512 widen16(const T* x) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  return _mm512_cvtepi32_ps(std::is_signed_v<T> ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v));
}

template <typename T, bool Mul, bool AScalar, bool BScalar>
__attribute__((target("avx512f"))) void row_avx512(const T* a, const T* b, T* c, int64_t n, const Params& p) {
  const __m512 za = _mm512_set1_ps(p.za), zb = _mm512_set1_ps(p.zb), zc = _mm512_set1_ps(p.zc);
  const __m512 ra = _mm512_set1_ps(p.ra), rb = _mm512_set1_ps(p.rb), rab = _mm512_set1_ps(p.rab);
  const __m512 lo = _mm512_set1_ps(std::numeric_limits<T>::min()), hi = _mm512_set1_ps(std::numeric_limits<T>::max());
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 qa = AScalar ? _mm512_set1_ps(static_cast<float>(a[0]) - p.za) : _mm512_sub_ps(widen16(a + i), za);
    const __m512 qb = BScalar ? _mm512_set1_ps(static_cast<float>(b[0]) - p.zb) : _mm512_sub_ps(widen16(b + i), zb);
    const __m512 v = Mul ? _mm512_mul_ps(_mm512_mul_ps(qa, qb), rab) : _mm512_add_ps(_mm512_mul_ps(qa, ra), _mm512_mul_ps(qb, rb));
    const __m512 q = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), zc);
    const __m512i r = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(q, lo), hi));  // integral already: exact
    const __m128i packed = std::is_signed_v<T> ? _mm512_cvtsepi32_epi8(r) : _mm512_cvtusepi32_epi8(r);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c + i), packed);
  }
  for (; i < n; ++i) c[i] = one<T, Mul>(a[AScalar ? 0 : i], b[BScalar ? 0 : i], p);
}

template <typename T, bool Mul>
void row(const T* a, int64_t sa, const T* b, int64_t sb, T* c, int64_t n, const Params& p) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (avx512 && sa == 1 && sb == 1) return row_avx512<T, Mul, false, false>(a, b, c, n, p);
  if (avx512 && sa == 0 && sb == 1) return row_avx512<T, Mul, true, false>(a, b, c, n, p);
  if (avx512 && sa == 1 && sb == 0) return row_avx512<T, Mul, false, true>(a, b, c, n, p);
  row_plain<T, Mul>(a, sa, b, sb, c, n, p);
}

template <bool Mul>
void QLinearBinary(KernelContext& ctx) {
  const std::optional<Params> p = params_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU QLinearAdd/QLinearMul");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  Tensor& c = uninitialized_output(ctx, 0, a.dtype(), p->rows.out);
  const BroadcastRows& r = p->rows;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.mutable_data<T>();
    parallel_for(r.rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(r.inner, 1)), [&](int64_t r0, int64_t r1) {
      r.for_each_row(r0, r1, [&](int64_t i, const std::array<int64_t, BroadcastRows::kMax>& off) {
        row<T, Mul>(pa + off[0], r.step[0], pb + off[1], r.step[1], pc + i * r.inner, r.inner, *p);
      });
    });
  };
  if (a.dtype() == DataType::Uint8) run(uint8_t{});
  else run(int8_t{});
}

}  // namespace

void register_qlinear_binary_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "QLinearAdd", 1, INT_MAX, "cpu-simd", QLinearBinary<false>, accepts});
  r.add(KernelDef{"com.microsoft", "QLinearMul", 1, INT_MAX, "cpu-simd", QLinearBinary<true>, accepts});
}

}  // namespace onnxscope::cpu
