// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear between float32
// and uint8 / int8, per tensor or per axis, in loops built for AVX-512, AVX2
// and the baseline (target_clones). The reference's arithmetic, bit for bit:
// x / scale divided in float (the scale's type), rounded half to even, plus
// the zero point, clamped (NaN gives the zero point); (x - zero point) *
// scale, exact in float as it is in double for 8-bit values. Blocked scales,
// other types and the precision attribute go to the reference.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/quantization/dynamic_quantize.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

bool has_avx512() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f");
  return yes;
}

#define ONNXSCOPE_CLONES ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")

// y[i] = clamp(nearbyint(x[i] / s) + zp, lo, hi); NaN -> zp.
// Rounding half to even by adding and taking away 1.5 * 2^23 (exact for |q| <= 2^22,
// and a quotient past that saturates anyway): the loop vectorises, nearbyint did not.
#define ONNXSCOPE_QUANTIZE(name, T)                                                                    \
  ONNXSCOPE_CLONES void name(const float* x, float s, float zp, float lo, float hi, T* y, int64_t n) { \
    for (int64_t i = 0; i < n; ++i) {                                                                 \
      float q = x[i] / s;                                                                             \
      const bool nan = q != q;                                                                        \
      q = q < -4194304.0f ? -4194304.0f : q;                                                          \
      q = q > 4194304.0f ? 4194304.0f : q;                                                            \
      const float r = (q + 12582912.0f) - 12582912.0f;                                                \
      float v = nan ? zp : r + zp;                                                                    \
      v = v < lo ? lo : v;                                                                            \
      v = v > hi ? hi : v;                                                                            \
      y[i] = static_cast<T>(static_cast<int32_t>(v)); /* via int32: the narrowing vectorises */        \
    }                                                                                                 \
  }
ONNXSCOPE_QUANTIZE(quantize_u8, uint8_t)
ONNXSCOPE_QUANTIZE(quantize_i8, int8_t)
#undef ONNXSCOPE_QUANTIZE

// The same on AVX-512 in intrinsics (GCC's AVX-512 clone of the loop above
// runs 256-bit vectors and a long chain of blends and packs): vroundscaleps
// rounds half to even at any magnitude, vpmov[u]sdb narrows.
__attribute__((target("avx512f"), always_inline)) inline __m512i quantize16(__m512 v, __m512 vs, __m512 vzp, __m512 vlo,
                                                                          __m512 vhi) {
  const __m512 q = _mm512_div_ps(v, vs);
  const __mmask16 nan = _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q);
  __m512 r = _mm512_add_ps(_mm512_roundscale_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vzp);
  r = _mm512_min_ps(vhi, _mm512_max_ps(vlo, r));
  return _mm512_cvtps_epi32(_mm512_mask_mov_ps(r, nan, vzp));
}

template <bool Unsigned>
__attribute__((target("avx512f"))) void quantize_avx512(const float* x, float s, float zp, float lo, float hi,
                                                        void* out, int64_t n) {
  auto* y = static_cast<int8_t*>(out);
  const __m512 vs = _mm512_set1_ps(s), vzp = _mm512_set1_ps(zp), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
#define one(v) quantize16(v, vs, vzp, vlo, vhi)
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i v = one(_mm512_loadu_ps(x + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), Unsigned ? _mm512_cvtusepi32_epi8(v) : _mm512_cvtsepi32_epi8(v));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512i v = one(_mm512_maskz_loadu_ps(m, x + i));
    if (Unsigned) _mm512_mask_cvtusepi32_storeu_epi8(y + i, m, v);
    else _mm512_mask_cvtsepi32_storeu_epi8(y + i, m, v);
  }
#undef one
}

void quantize_run(DataType q, const float* x, float s, float zp, float lo, float hi, void* y, int64_t n) {
  if (has_avx512()) {
    if (q == DataType::Uint8) quantize_avx512<true>(x, s, zp, lo, hi, y, n);
    else quantize_avx512<false>(x, s, zp, lo, hi, y, n);
  } else if (q == DataType::Uint8) {
    quantize_u8(x, s, zp, lo, hi, static_cast<uint8_t*>(y), n);
  } else {
    quantize_i8(x, s, zp, lo, hi, static_cast<int8_t*>(y), n);
  }
}

#define ONNXSCOPE_DEQUANTIZE(name, T)                                                      \
  ONNXSCOPE_CLONES void name(const T* x, float s, float zp, float* y, int64_t n) {          \
    for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - zp) * s;             \
  }
ONNXSCOPE_DEQUANTIZE(dequantize_u8, uint8_t)
ONNXSCOPE_DEQUANTIZE(dequantize_i8, int8_t)
#undef ONNXSCOPE_DEQUANTIZE

// The range of x extended to include 0; NaN is skipped (as std::max / std::min
// in the reference). x86's max and min return their second operand when either
// is NaN, so the running value goes second: a NaN element leaves it as it was.
void range_plain(const float* x, int64_t n, float* lo, float* hi) {
  float mn = 0.0f, mx = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    mx = mx < x[i] ? x[i] : mx;
    mn = x[i] < mn ? x[i] : mn;
  }
  *lo = mn;
  *hi = mx;
}

__attribute__((target("avx2"))) void range_avx2(const float* x, int64_t n, float* lo, float* hi) {
  __m256 mn = _mm256_setzero_ps(), mx = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    mx = _mm256_max_ps(v, mx);
    mn = _mm256_min_ps(v, mn);
  }
  alignas(32) float a[8], b[8];
  _mm256_store_ps(a, mn);
  _mm256_store_ps(b, mx);
  float l = 0.0f, h = 0.0f;
  range_plain(a, 8, &l, &h);
  float l2 = 0.0f, h2 = 0.0f;
  range_plain(b, 8, &l2, &h2);
  float l3 = 0.0f, h3 = 0.0f;
  range_plain(x + i, n - i, &l3, &h3);
  *lo = std::min({l, l2, l3});
  *hi = std::max({h, h2, h3});
}

__attribute__((target("avx512f"))) void range_avx512(const float* x, int64_t n, float* lo, float* hi) {
  __m512 mn = _mm512_setzero_ps(), mx = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    mx = _mm512_max_ps(v, mx);
    mn = _mm512_min_ps(v, mn);
  }
  alignas(64) float a[16], b[16];
  _mm512_store_ps(a, mn);
  _mm512_store_ps(b, mx);
  float l = 0.0f, h = 0.0f, l2 = 0.0f, h2 = 0.0f, l3 = 0.0f, h3 = 0.0f;
  range_plain(a, 16, &l, &h);
  range_plain(b, 16, &l2, &h2);
  range_plain(x + i, n - i, &l3, &h3);
  *lo = std::min({l, l2, l3});
  *hi = std::max({h, h2, h3});
}

void range_part(const float* x, int64_t n, float* lo, float* hi) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (has_avx512()) range_avx512(x, n, lo, hi);
  else if (avx2) range_avx2(x, n, lo, hi);
  else range_plain(x, n, lo, hi);
}

// Each thread the range of its part, then the parts' (min and max: the
// result does not depend on how the tensor was cut).
void range_with_zero(const float* x, int64_t n, float* lo, float* hi) {
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(thread_count(), n / 32768));
  std::vector<float> l(static_cast<size_t>(parts), 0.0f), h(static_cast<size_t>(parts), 0.0f);
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const int64_t b = n * p / parts, e = n * (p + 1) / parts;
      range_part(x + b, e - b, &l[static_cast<size_t>(p)], &h[static_cast<size_t>(p)]);
    }
  });
  *lo = *std::min_element(l.begin(), l.end());
  *hi = *std::max_element(h.begin(), h.end());
}
#undef ONNXSCOPE_CLONES

bool int8_type(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

// Per tensor (one scale) or per axis (a 1-D scale along `axis`): x viewed as
// [outer, channels, inner], each channel reading its own scale and zero point.
struct Layout {
  int64_t outer = 1, channels = 1, inner = 1;
};

std::optional<Layout> layout_of(const KernelContext& ctx, const Tensor& x, const Tensor& scale, const Value* zp,
                                DataType q_type) {
  if (ctx.attr_int("block_size", 0) != 0 || ctx.attr_int("precision", 0) != 0) return std::nullopt;
  if (scale.dtype() != DataType::Float || scale.rank() > 1) return std::nullopt;
  if (zp && (!zp->is_tensor() || zp->tensor().dtype() != q_type ||
             zp->tensor().element_count() != scale.element_count() || zp->tensor().rank() != scale.rank()))
    return std::nullopt;
  Layout l;
  l.inner = static_cast<int64_t>(x.element_count());
  if (scale.rank() == 0 || (scale.element_count() == 1 && x.rank() == 0)) return l;
  const int64_t rank = x.rank(), a = ctx.attr_int("axis", 1);
  if (rank == 0 || a < -rank || a >= rank) return std::nullopt;
  const size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
  if (x.shape()[axis] != static_cast<int64_t>(scale.element_count())) return std::nullopt;
  l.outer = l.inner = 1;
  for (size_t d = 0; d < axis; ++d) l.outer *= x.shape()[d];
  l.channels = x.shape()[axis];
  for (size_t d = axis + 1; d < x.shape().size(); ++d) l.inner *= x.shape()[d];
  return l;
}

// f(first element, channel, count) over runs of one channel, threads splitting
// the flat tensor (per tensor, it is a single run of every element).
template <class F>
void for_each_channel_run(const Layout& l, F f) {
  parallel_for(l.outer * l.channels * l.inner, 32768, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi;) {
      const int64_t b = i / l.inner, len = std::min((b + 1) * l.inner - i, hi - i);
      f(i, b % l.channels, len);
      i += len;
    }
  });
}

float zero_point(const Value* zp, int64_t c) {
  if (!zp) return 0.0f;
  const Tensor& t = zp->tensor();
  return t.dtype() == DataType::Int8 ? t.data<int8_t>()[c] : t.data<uint8_t>()[c];
}

// --- QuantizeLinear -----------------------------------------------------------------

DataType quantized_type(const KernelContext& ctx) {
  const Value* zp = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr;
  if (zp && zp->is_tensor()) return zp->tensor().dtype();
  const int64_t od = ctx.attr_int("output_dtype", 0);
  return od == 0 ? DataType::Uint8 : static_cast<DataType>(od);
}

bool quantize_accepts(const KernelContext& ctx) {
  if (ctx.input_count() < 2 || ctx.input_count() > 3 || !ctx.input_value(0) || !ctx.input_value(1)) return false;
  const Value* x = ctx.input_value(0);
  const Value* s = ctx.input_value(1);
  if (!x->is_tensor() || !s->is_tensor() || x->tensor().dtype() != DataType::Float) return false;
  const DataType q = quantized_type(ctx);
  const int64_t od = ctx.attr_int("output_dtype", 0);
  if (!int8_type(q) || (od != 0 && od != static_cast<int64_t>(q))) return false;
  if (ctx.opset_version() < 13 && s->tensor().rank() > 0) return false;  // per axis from 13
  return layout_of(ctx, x->tensor(), s->tensor(), ctx.input_count() > 2 ? ctx.input_value(2) : nullptr, q).has_value();
}

void QuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Value* zp = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr;
  const DataType q = quantized_type(ctx);
  const Layout l = *layout_of(ctx, x, scale, zp, q);
  Tensor& y = uninitialized_output(ctx, 0, q, x.shape());
  const float lo = q == DataType::Uint8 ? 0.0f : -128.0f, hi = q == DataType::Uint8 ? 255.0f : 127.0f;
  const float* in = x.data<float>();
  const float* s = scale.data<float>();
  std::byte* out = y.mutable_raw();
  for_each_channel_run(l, [&](int64_t i, int64_t c, int64_t len) {
    quantize_run(q, in + i, s[c], zero_point(zp, c), lo, hi, out + i, len);
  });
}

// --- DequantizeLinear ----------------------------------------------------------------

bool dequantize_accepts(const KernelContext& ctx) {
  if (ctx.input_count() < 2 || ctx.input_count() > 3 || !ctx.input_value(0) || !ctx.input_value(1)) return false;
  const Value* x = ctx.input_value(0);
  const Value* s = ctx.input_value(1);
  if (!x->is_tensor() || !s->is_tensor() || !int8_type(x->tensor().dtype())) return false;
  const int64_t od = ctx.attr_int("output_dtype", 0);
  if (od != 0 && od != static_cast<int64_t>(DataType::Float)) return false;
  if (ctx.opset_version() < 13 && s->tensor().rank() > 0) return false;
  return layout_of(ctx, x->tensor(), s->tensor(), ctx.input_count() > 2 ? ctx.input_value(2) : nullptr,
                   x->tensor().dtype()).has_value();
}

void DequantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Value* zp = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr;
  const Layout l = *layout_of(ctx, x, scale, zp, x.dtype());
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* s = scale.data<float>();
  float* out = y.mutable_data<float>();
  for_each_channel_run(l, [&](int64_t i, int64_t c, int64_t len) {
    if (x.dtype() == DataType::Uint8)
      dequantize_u8(x.data<uint8_t>() + i, s[c], zero_point(zp, c), out + i, len);
    else
      dequantize_i8(x.data<int8_t>() + i, s[c], zero_point(zp, c), out + i, len);
  });
}

// --- DynamicQuantizeLinear --------------------------------------------------------------

bool dynamic_accepts(const KernelContext& ctx) {
  return ctx.input_count() == 1 && ctx.input_value(0) && ctx.input_value(0)->is_tensor() &&
         ctx.input_value(0)->tensor().dtype() == DataType::Float;
}

void DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Uint8, x.shape());
  const DynamicQuantParams q =
      dynamic_quantize_uint8(x.data<float>(), static_cast<int64_t>(x.element_count()), y.mutable_data<uint8_t>());
  uninitialized_output(ctx, 1, DataType::Float, {}).mutable_data<float>()[0] = q.scale;
  uninitialized_output(ctx, 2, DataType::Uint8, {}).mutable_data<uint8_t>()[0] = static_cast<uint8_t>(q.zero_point);
}

}  // namespace

DynamicQuantParams dynamic_quantize_uint8(const float* in, int64_t n, uint8_t* out) {
  float minx = 0.0f, maxx = 0.0f;
  range_with_zero(in, n, &minx, &maxx);
  DynamicQuantParams q;
  q.scale = (maxx == minx ? 1.0f : (maxx - minx)) / 255.0f;
  const float initial_zp = 0.0f - minx / q.scale;
  q.zero_point = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
  if (std::isnan(q.zero_point)) q.zero_point = 0.0f;
  const float scale = q.scale, zp = q.zero_point;
  parallel_for(n, 32768, [&](int64_t b, int64_t e) { quantize_run(DataType::Uint8, in + b, scale, zp, 0.0f, 255.0f, out + b, e - b); });
  return q;
}

void register_quantize_linear_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "QuantizeLinear", 10, INT_MAX, "cpu-simd", QuantizeLinear, quantize_accepts});
  r.add(KernelDef{"", "DequantizeLinear", 10, INT_MAX, "cpu-simd", DequantizeLinear, dequantize_accepts});
  r.add(KernelDef{"", "DynamicQuantizeLinear", 11, INT_MAX, "cpu-simd", DynamicQuantizeLinear, dynamic_accepts});
}

}  // namespace onnxscope::cpu
