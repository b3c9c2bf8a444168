// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear between float32
// and uint8 / int8, per tensor or per axis, in loops built for AVX-512, AVX2
// and the baseline (target_clones). The reference's arithmetic, bit for bit:
// x / scale divided in float (the scale's type), rounded half to even, plus
// the zero point, clamped (NaN gives the zero point); (x - zero point) *
// scale, exact in float as it is in double for 8-bit values. Blocked scales,
// other types and the precision attribute go to the reference.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

#define ONNXSCOPE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

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

void range_with_zero(const float* x, int64_t n, float* lo, float* hi) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) range_avx2(x, n, lo, hi);
  else range_plain(x, n, lo, hi);
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
  parallel_for(l.outer * l.channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(l.inner, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c = b % l.channels;
      if (q == DataType::Uint8)
        quantize_u8(in + b * l.inner, s[c], zero_point(zp, c), lo, hi, y.mutable_data<uint8_t>() + b * l.inner, l.inner);
      else
        quantize_i8(in + b * l.inner, s[c], zero_point(zp, c), lo, hi, y.mutable_data<int8_t>() + b * l.inner, l.inner);
    }
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
  parallel_for(l.outer * l.channels, std::max<int64_t>(1, 32768 / std::max<int64_t>(l.inner, 1)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t c = b % l.channels;
      if (x.dtype() == DataType::Uint8)
        dequantize_u8(x.data<uint8_t>() + b * l.inner, s[c], zero_point(zp, c), out + b * l.inner, l.inner);
      else
        dequantize_i8(x.data<int8_t>() + b * l.inner, s[c], zero_point(zp, c), out + b * l.inner, l.inner);
    }
  });
}

// --- DynamicQuantizeLinear --------------------------------------------------------------

bool dynamic_accepts(const KernelContext& ctx) {
  return ctx.input_count() == 1 && ctx.input_value(0) && ctx.input_value(0)->is_tensor() &&
         ctx.input_value(0)->tensor().dtype() == DataType::Float;
}

void DynamicQuantizeLinear(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = static_cast<int64_t>(x.element_count());
  const float* in = x.data<float>();
  float minx = 0.0f, maxx = 0.0f;
  range_with_zero(in, n, &minx, &maxx);
  const float scale = (maxx == minx ? 1.0f : (maxx - minx)) / 255.0f;
  const float initial_zp = 0.0f - minx / scale;
  float zp = std::nearbyint(std::clamp(initial_zp, 0.0f, 255.0f));
  if (std::isnan(zp)) zp = 0.0f;
  Tensor& y = uninitialized_output(ctx, 0, DataType::Uint8, x.shape());
  uint8_t* out = y.mutable_data<uint8_t>();
  parallel_for(n, 32768, [&](int64_t b, int64_t e) { quantize_u8(in + b, scale, zp, 0.0f, 255.0f, out + b, e - b); });
  uninitialized_output(ctx, 1, DataType::Float, {}).mutable_data<float>()[0] = scale;
  uninitialized_output(ctx, 2, DataType::Uint8, {}).mutable_data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace

void register_quantize_linear_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "QuantizeLinear", 10, INT_MAX, "cpu-simd", QuantizeLinear, quantize_accepts});
  r.add(KernelDef{"", "DequantizeLinear", 10, INT_MAX, "cpu-simd", DequantizeLinear, dequantize_accepts});
  r.add(KernelDef{"", "DynamicQuantizeLinear", 11, INT_MAX, "cpu-simd", DynamicQuantizeLinear, dynamic_accepts});
}

}  // namespace onnxscope::cpu
