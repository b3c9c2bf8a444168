// Cast between the common numeric types (float32, float64, float16, the
// 8- to 64-bit integers, bool), one vectorisable loop per pair, split across
// the thread pool; float16 through F16C when the CPU has it (checked at run
// time). The rules are the reference's (reference/ops/tensor/cast.cpp, numpy's
// astype): float -> integer truncates toward zero and keeps the low bits
// (NaN gives 0; out of 64-bit range, INT64_MIN's bits), integer -> integer
// keeps the low bits, anything -> bool is "nonzero" (NaN is true), float16
// rounds to nearest even. Strings, FP8, packed and complex types go to the
// reference.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized (as in clamp.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <cpuid.h>
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>

#include "core/target_clones.h"
#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/cast_i64_avx2.h"
#include "cpu/thread_pool.h"
#include "onnxscope/float_formats.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kGrain = 32768;

struct Bool {};  // bool storage: one byte, nonzero is true
struct Half {};  // float16 storage: IEEE binary16 bits

// An integer's two's complement bits from a float (the reference's int_bits).
inline uint64_t float_int_bits(double d) {
  if (d != d) return 0;
  if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) return static_cast<uint64_t>(static_cast<int64_t>(d));
  if (d >= 0 && d < 18446744073709551616.0) return static_cast<uint64_t>(d);
  return uint64_t{1} << 63;
}

template <class D, class S>
inline D convert(S v) {
  if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    // In 32 bits when the value fits: the loop then vectorises (cvttps2dq).
    if constexpr (sizeof(D) <= 4 && std::is_same_v<S, float>) {
      if (v > -2147483648.0f && v < 2147483648.0f) return static_cast<D>(static_cast<int32_t>(v));
    }
    return static_cast<D>(float_int_bits(static_cast<double>(v)));
  } else if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
    return static_cast<D>(static_cast<uint64_t>(v));
  } else {
    return static_cast<D>(v);
  }
}

template <class D, class S>
void cast_loop(const void* src, void* dst, int64_t n) {
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<S, Bool>) {
      const auto* s = static_cast<const uint8_t*>(src);
      if constexpr (std::is_same_v<D, Bool>) {
        auto* d = static_cast<uint8_t*>(dst);
        for (int64_t i = b; i < e; ++i) d[i] = s[i] != 0;
      } else {
        auto* d = static_cast<D*>(dst);
        for (int64_t i = b; i < e; ++i) d[i] = static_cast<D>(s[i] != 0);
      }
    } else {
      const auto* s = static_cast<const S*>(src);
      if constexpr (std::is_same_v<D, Bool>) {
        auto* d = static_cast<uint8_t*>(dst);
        for (int64_t i = b; i < e; ++i) d[i] = s[i] != S(0);
      } else {
        auto* d = static_cast<D*>(dst);
        for (int64_t i = b; i < e; ++i) d[i] = convert<D>(s[i]);
      }
    }
  });
}

// --- the common pairs, built for AVX-512 / AVX2 too ------------------------------
// (clang cannot clone templates: one plain function per pair.)

#define ONNXSCOPE_CLONES ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
#define ONNXSCOPE_CAST(name, S, D, expr)                                        \
  ONNXSCOPE_CLONES void name(const S* s, D* d, int64_t n) {                     \
    for (int64_t i = 0; i < n; ++i) d[i] = expr;                                \
  }
ONNXSCOPE_CAST(f32_to_bool, float, uint8_t, s[i] != 0.0f)  // NaN is true
ONNXSCOPE_CAST(bool_to_f32, uint8_t, float, s[i] != 0 ? 1.0f : 0.0f)
ONNXSCOPE_CAST(i32_to_i64, int32_t, int64_t, s[i])
ONNXSCOPE_CAST(i64_to_i32, int64_t, int32_t, static_cast<int32_t>(static_cast<uint32_t>(s[i])))
ONNXSCOPE_CAST(i64_to_f32, int64_t, float, static_cast<float>(s[i]))
ONNXSCOPE_CAST(u8_to_f32, uint8_t, float, static_cast<float>(s[i]))
#undef ONNXSCOPE_CAST

// float -> int64 for the values inside its range (a select without branches);
// true when some element was not (NaN, or past 2^63), for the caller to redo.
// The float-to-int64 vector conversion is AVX512DQ's (vcvttps2qq), which
// target_clones' "avx512f" does not include: a build of its own for it.
#define ONNXSCOPE_F32_TO_I64(attr, name)                                     \
  attr bool name(const float* s, int64_t* d, int64_t n) {                    \
    bool outside = false;                                                    \
    for (int64_t i = 0; i < n; ++i) {                                        \
      const float v = s[i];                                                  \
      const bool in = v > -9223372036854775808.0f && v < 9223372036854775808.0f; \
      d[i] = static_cast<int64_t>(in ? v : 0.0f);                            \
      outside |= !in;                                                        \
    }                                                                        \
    return outside;                                                          \
  }
ONNXSCOPE_F32_TO_I64(ONNXSCOPE_CLONES, f32_to_i64_cloned)
ONNXSCOPE_F32_TO_I64(static, f32_to_i64_tail)
#undef ONNXSCOPE_F32_TO_I64

__attribute__((target("avx512f,avx512dq"))) bool f32_to_i64_dq(const float* s, int64_t* d, int64_t n) {
  const __m512 lo = _mm512_set1_ps(-9223372036854775808.0f), hi = _mm512_set1_ps(9223372036854775808.0f);
  __mmask16 in_all = 0xFFFF;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(s + i);
    const __mmask16 in = _mm512_cmp_ps_mask(v, lo, _CMP_GT_OQ) & _mm512_cmp_ps_mask(v, hi, _CMP_LT_OQ);
    in_all &= in;
    const __m512 z = _mm512_maskz_mov_ps(in, v);  // outside (NaN too): 0, redone by the caller
    _mm512_storeu_si512(d + i, _mm512_cvttps_epi64(_mm512_castps512_ps256(z)));
    _mm512_storeu_si512(d + i + 8, _mm512_cvttps_epi64(_mm512_extractf32x8_ps(z, 1)));
  }
  const bool tail_outside = f32_to_i64_tail(s + i, d + i, n - i);
  return in_all != 0xFFFF || tail_outside;
}

// int64 -> float rounds to nearest even, as the scalar conversion does; the
// vector form is AVX512DQ's too (vcvtqq2ps): without it GCC converts one
// element at a time.
__attribute__((target("avx512f,avx512dq"))) void i64_to_f32_dq(const int64_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm256_storeu_ps(d + i, _mm512_cvtepi64_ps(_mm512_loadu_si512(s + i)));
    _mm256_storeu_ps(d + i + 8, _mm512_cvtepi64_ps(_mm512_loadu_si512(s + i + 8)));
  }
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}
#undef ONNXSCOPE_CLONES

bool has_avx512dq() {
  static const bool dq = [] {  // cpuid leaf 7: EBX bit 16 AVX512F, bit 17 AVX512DQ
    unsigned a = 0, b = 0, c = 0, dx = 0;
    return !cpu_isa_capped_to_avx2() && __get_cpuid_count(7, 0, &a, &b, &c, &dx) && (b & (1u << 16)) && (b & (1u << 17));
  }();
  return dq;
}

bool f32_to_i64_in_range(const float* s, int64_t* d, int64_t n) {
  return has_avx512dq() ? f32_to_i64_dq(s, d, n) : f32_to_i64_cloned(s, d, n);
}

// A pair with a loop of its own above; false for the generic path.
bool fast_pair(DataType from, DataType to, const void* src, void* dst, int64_t n) {
  auto run = [&](auto fn, auto s_tag, auto d_tag) {
    using S = decltype(s_tag);
    using D = decltype(d_tag);
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) { fn(static_cast<const S*>(src) + b, static_cast<D*>(dst) + b, e - b); });
    return true;
  };
  if (from == DataType::Float && to == DataType::Bool) return run(f32_to_bool, float{}, uint8_t{});
  if (from == DataType::Bool && to == DataType::Float) return run(bool_to_f32, uint8_t{}, float{});
  if (from == DataType::Int32 && to == DataType::Int64) return run(i32_to_i64, int32_t{}, int64_t{});
  if (from == DataType::Int64 && to == DataType::Int32) return run(i64_to_i32, int64_t{}, int32_t{});
  if (from == DataType::Int64 && to == DataType::Float) {
    if (has_avx512dq()) return run(i64_to_f32_dq, int64_t{}, float{});
    static const bool avx2 = __builtin_cpu_supports("avx2");
    if (avx2) return run(avx2::i64_to_f32, int64_t{}, float{});
    return run(i64_to_f32, int64_t{}, float{});
  }
  if (from == DataType::Uint8 && to == DataType::Float) return run(u8_to_f32, uint8_t{}, float{});
  if (from == DataType::Float && to == DataType::Int64) {
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
      const float* sp = static_cast<const float*>(src) + b;
      int64_t* dp = static_cast<int64_t*>(dst) + b;
      if (f32_to_i64_in_range(sp, dp, e - b))
        for (int64_t i = 0; i < e - b; ++i) dp[i] = static_cast<int64_t>(float_int_bits(static_cast<double>(sp[i])));
    });
    return true;
  }
  return false;
}

// --- float16 ------------------------------------------------------------------

__attribute__((target("avx,f16c"))) void half_to_float_f16c(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) d[i] = half_to_float(s[i]);
}

__attribute__((target("avx,f16c"))) void float_to_half_f16c(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(s + i);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // NaN: the reference's bits (its payload rule), not the instruction's.
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
      for (int64_t k = i; k < i + 8; ++k)
        if (std::isnan(s[k])) d[k] = float_to_half(s[k]);
  }
  for (; i < n; ++i) d[i] = float_to_half(s[i]);
}

// The same on AVX-512, 16 at a time.
__attribute__((target("avx512f"))) void half_to_float_avx512(const uint16_t* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(d + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  half_to_float_f16c(s + i, d + i, n - i);
}

__attribute__((target("avx512f"))) void float_to_half_avx512(const float* s, uint16_t* d, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(s + i);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q))  // NaN: the reference's bits, as above
      for (int64_t k = i; k < i + 16; ++k)
        if (std::isnan(s[k])) d[k] = float_to_half(s[k]);
  }
  float_to_half_f16c(s + i, d + i, n - i);
}

// --- dispatch -----------------------------------------------------------------

// Calls f(tag) with the storage type of t, or returns false for a type left to the reference.
template <class F>
bool with_type(DataType t, F&& f) {
  switch (t) {
    case DataType::Float: f(float{}); return true;
    case DataType::Double: f(double{}); return true;
    case DataType::Int8: f(int8_t{}); return true;
    case DataType::Int16: f(int16_t{}); return true;
    case DataType::Int32: f(int32_t{}); return true;
    case DataType::Int64: f(int64_t{}); return true;
    case DataType::Uint8: f(uint8_t{}); return true;
    case DataType::Uint16: f(uint16_t{}); return true;
    case DataType::Uint32: f(uint32_t{}); return true;
    case DataType::Uint64: f(uint64_t{}); return true;
    case DataType::Bool: f(Bool{}); return true;
    default: return false;
  }
}

bool plain(DataType t) { return with_type(t, [](auto) {}); }

std::optional<DataType> target(const KernelContext& ctx) {
  const Attribute* a = ctx.attr("to");
  if (!a || a->type != AttrType::Int) return std::nullopt;
  const DataType to = static_cast<DataType>(a->i);
  return to;
}

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const std::optional<DataType> to = target(ctx);
  if (!to) return false;
  const DataType from = ctx.input_value(0)->tensor().dtype();
  if ((from == DataType::Float && *to == DataType::Float16) || (from == DataType::Float16 && *to == DataType::Float))
    return true;
  return plain(from) && plain(*to);
}

void Cast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType to = *target(ctx);
  Tensor& y = uninitialized_output(ctx, 0, to, x.shape());
  const int64_t n = static_cast<int64_t>(x.element_count());
  if (n == 0) return;
  if (x.dtype() == DataType::Float16 || to == DataType::Float16) {
    half_cast(x.raw(), y.mutable_raw(), n, to == DataType::Float16);
    return;
  }
  if (fast_pair(x.dtype(), to, x.raw(), y.mutable_raw(), n)) return;
  with_type(x.dtype(), [&](auto s) {
    with_type(to, [&](auto d) { cast_loop<decltype(d), decltype(s)>(x.raw(), y.mutable_raw(), n); });
  });
}

}  // namespace

void half_to_float_run(const uint16_t* s, float* d, int64_t n) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (avx512) half_to_float_avx512(s, d, n);
  else if (cpu_has_f16c()) half_to_float_f16c(s, d, n);
  else for (int64_t i = 0; i < n; ++i) d[i] = half_to_float(s[i]);
}

void float_to_half_run(const float* s, uint16_t* d, int64_t n) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (avx512) float_to_half_avx512(s, d, n);
  else if (cpu_has_f16c()) float_to_half_f16c(s, d, n);
  else for (int64_t i = 0; i < n; ++i) d[i] = float_to_half(s[i]);
}

void half_cast(const void* src, void* dst, int64_t n, bool to_half) {
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    if (to_half) float_to_half_run(static_cast<const float*>(src) + b, static_cast<uint16_t*>(dst) + b, e - b);
    else half_to_float_run(static_cast<const uint16_t*>(src) + b, static_cast<float*>(dst) + b, e - b);
  });
}

void register_cast_kernels(KernelRegistry& r) {
  // Cast-6 on: `to` is an int (Cast-1 had a string).
  r.add(KernelDef{"", "Cast", 6, INT_MAX, "cpu-copy", Cast, accepts});
}

}  // namespace onnxscope::cpu
