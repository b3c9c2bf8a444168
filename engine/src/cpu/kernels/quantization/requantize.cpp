// The QLinear operators' requantization of int32 sums over whole runs
// (requantize.h): the same values as requantize() element by element, in a
// loop built for AVX-512, AVX2 and the baseline. std::nearbyint was a libm
// call per element (no SSE4.1 in the baseline build); rounding half to even
// here is adding and taking away 1.5 * 2^52, exact once x is clamped to
// +-2^51 (a product past that saturates to lo or hi either way).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // the product rounds before the rounding trick's add
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in its conversions.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/requantize_avx512.h"

namespace onnxscope::cpu {
namespace {

// requantize() of n sums, a bias (or none) and multiplier per channel
// (PerChannel: one pixel's channels, int32 biases) or one of each (a run,
// the bias a double).
template <typename T, bool PerChannel, typename B>
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void requantize_double(const int32_t* acc, int64_t n, const B* bias, const double* mult, double zp, T* out) {
  constexpr double kBig = 2251799813685248.0;    // 2^51
  constexpr double kRound = 6755399441055744.0;  // 1.5 * 2^52
  constexpr double lo = std::is_signed_v<T> ? -128.0 : 0.0, hi = std::is_signed_v<T> ? 127.0 : 255.0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = PerChannel ? i : 0;
    double x = (static_cast<double>(acc[i]) + (bias ? static_cast<double>(bias[c]) : 0.0)) * mult[c];
    const bool nan = x != x;
    x = x < -kBig ? -kBig : x;
    x = x > kBig ? kBig : x;
    const double r = (x + kRound) - kRound;
    double v = nan ? zp : r + zp;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    out[i] = static_cast<T>(static_cast<int32_t>(v));
  }
}
void requantize_u8(const int32_t* acc, int64_t n, double bias, double mult, double zp, uint8_t* out) {
  requantize_double<uint8_t, false, double>(acc, n, &bias, &mult, zp, out);
}
void requantize_i8(const int32_t* acc, int64_t n, double bias, double mult, double zp, int8_t* out) {
  requantize_double<int8_t, false, double>(acc, n, &bias, &mult, zp, out);
}

// round16_float's arithmetic (requantize_avx512.h) on n sums: a bias (or
// none) and multiplier per channel (PerChannel: one pixel's channels) or one
// of each (a run); false when a product lies within 2^-13 of a half (the
// caller's double path then redoes them). Products clamped to 2^22 first,
// where the rounding trick is exact (larger ones saturate either way).
template <typename T, bool PerChannel>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
bool requantize_float(const int32_t* acc, int64_t n, const int32_t* bias, const float* mult, float zp, T* out) {
  constexpr float kBig = 4194304.0f, kRound = 12582912.0f, kNear = 0.5f - 1.0f / 8192;
  constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
  int near = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = PerChannel ? i : 0;
    const auto s = static_cast<int32_t>(static_cast<uint32_t>(acc[i]) + (bias ? static_cast<uint32_t>(bias[c]) : 0u));
    float p = static_cast<float>(s) * mult[c];
    p = p < -kBig ? -kBig : p;
    p = p > kBig ? kBig : p;
    const float r = (p + kRound) - kRound;
    const float d = p - r;
    near |= (d >= kNear) | (d <= -kNear);
    float q = r + zp;
    q = q < lo ? lo : q;
    q = q > hi ? hi : q;
    out[i] = static_cast<T>(static_cast<int32_t>(q));
  }
  return near == 0;
}

// requantize_float in AVX2 registers, eight values a step (the compiler's
// clone above blended its clamps and narrowed a value at a time: 36% of a
// depthwise QLinearConv's time on the AVX2 path). The same operations in
// the same order on each lane, so the same bytes and the same answer to
// whether any product lies near a half; the values past the last whole
// eight go to the loop above.
__attribute__((target("avx2"))) inline __m256i eight_sums(const int32_t* acc, const int32_t* bias, bool per_channel) {
  const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc));
  if (!bias) return s;
  return _mm256_add_epi32(s, per_channel ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias)) : _mm256_set1_epi32(*bias));
}

template <typename T, bool PerChannel>
__attribute__((target("avx2"))) bool requantize_float_avx2(const int32_t* acc, int64_t n, const int32_t* bias,
                                                           const float* mult, float zp, T* out) {
  const __m256 big = _mm256_set1_ps(4194304.0f), neg_big = _mm256_set1_ps(-4194304.0f);
  const __m256 round = _mm256_set1_ps(12582912.0f), near_hi = _mm256_set1_ps(0.5f - 1.0f / 8192);
  const __m256 near_lo = _mm256_set1_ps(-(0.5f - 1.0f / 8192)), z = _mm256_set1_ps(zp);
  const __m256 lo = _mm256_set1_ps(std::is_signed_v<T> ? -128.0f : 0.0f), hi = _mm256_set1_ps(std::is_signed_v<T> ? 127.0f : 255.0f);
  const __m256 m1 = _mm256_set1_ps(*mult);
  __m256 near = _mm256_setzero_ps();
  auto one = [&](int64_t i) {
    const __m256 m = PerChannel ? _mm256_loadu_ps(mult + i) : m1;
    __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(eight_sums(acc + i, bias ? bias + (PerChannel ? i : 0) : nullptr, PerChannel)), m);
    p = _mm256_min_ps(_mm256_max_ps(p, neg_big), big);  // p is a number: the scalar selects' order does not matter
    const __m256 r = _mm256_sub_ps(_mm256_add_ps(p, round), round);
    const __m256 d = _mm256_sub_ps(p, r);
    near = _mm256_or_ps(near, _mm256_or_ps(_mm256_cmp_ps(d, near_hi, _CMP_GE_OQ), _mm256_cmp_ps(d, near_lo, _CMP_LE_OQ)));
    return _mm256_cvttps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, z), lo), hi));
  };
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // four vectors narrowed to 32 bytes (all within T's range: no saturation)
    const __m256i a = _mm256_packs_epi32(one(i), one(i + 8)), b = _mm256_packs_epi32(one(i + 16), one(i + 24));
    const __m256i v = std::is_signed_v<T> ? _mm256_packs_epi16(a, b) : _mm256_packus_epi16(a, b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  for (; i + 8 <= n; i += 8) {
    alignas(32) int32_t q[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(q), one(i));
    for (int k = 0; k < 8; ++k) out[i + k] = static_cast<T>(q[k]);
  }
  bool ok = _mm256_movemask_ps(near) == 0;
  if (i < n) ok = requantize_float<T, PerChannel>(acc + i, n - i, bias ? bias + (PerChannel ? i : 0) : nullptr,
                                                  mult + (PerChannel ? i : 0), zp, out + i) && ok;
  return ok;
}

// requantize_float, in AVX2 registers where the CPU has them.
template <typename T, bool PerChannel>
bool requantize_float_any(const int32_t* acc, int64_t n, const int32_t* bias, const float* mult, float zp, T* out) {
  if (cpu_has_avx2()) return requantize_float_avx2<T, PerChannel>(acc, n, bias, mult, zp, out);
  return requantize_float<T, PerChannel>(acc, n, bias, mult, zp, out);
}

// Eight sums a + b (b: one value or per lane) times the multiplier m,
// rounded and saturated (a function, not a lambda: clang does not give a
// lambda its enclosing function's target).
template <typename T>
__attribute__((target("avx512f"), always_inline)) inline __m256i eight(const int32_t* a, __m512d b, __m512d m, __m512d z) {
  return round8<T>(_mm512_mul_pd(_mm512_add_pd(widen8(a), b), m), z);
}

// The same for a finite multiplier, sixteen values a step in AVX-512
// (requantize_avx512.h; the compiler's clone above kept to 256-bit vectors
// and blends: 1.4 ns a value, a third of a QOperator MobileNetV2's time).
template <typename T>
__attribute__((target("avx512f"))) void requantize_avx512(const int32_t* acc, int64_t n, double bias, double mult, double zp,
                                                         T* out) {
  const __m512d b = _mm512_set1_pd(bias), m = _mm512_set1_pd(mult), z = _mm512_set1_pd(zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16(out + i, eight<T>(acc + i, b, m, z), eight<T>(acc + i + 8, b, m, z));
  if (i < n) {
    if constexpr (std::is_signed_v<T>) requantize_i8(acc + i, n - i, bias, mult, zp, reinterpret_cast<int8_t*>(out + i));
    else requantize_u8(acc + i, n - i, bias, mult, zp, reinterpret_cast<uint8_t*>(out + i));
  }
}

bool has_avx512() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f");
  return yes;
}

// requantize_channels_last with finite multipliers, sixteen channels a step
// (the same operations as requantize_avx512, a bias and multiplier per lane).
// With mult_f (round16_float's conditions hold: float multipliers, sums
// plus biases within int32), sixteen channels in float first.
template <typename T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void channels_last_avx512(const int32_t* acc, int64_t lda, int64_t pixels,
                                                                              int64_t M, const int32_t* bias, const double* mult,
                                                                              double zp, T* out, int64_t ldo, const float* mult_f) {
  constexpr double lo_v = std::is_signed_v<T> ? -128.0 : 0.0, hi_v = std::is_signed_v<T> ? 127.0 : 255.0;
  const __m512d z = _mm512_set1_pd(zp);
  for (int64_t px = 0; px < pixels; ++px) {
    const int32_t* a = acc + px * lda;
    T* o = out + px * ldo;
    int64_t m = 0;
    for (; m + 16 <= M; m += 16) {
      if (mult_f) {
        const __m512i s = _mm512_loadu_si512(a + m);
        __m128i v;
        if (round16_float<T>(bias ? _mm512_add_epi32(s, _mm512_loadu_si512(bias + m)) : s, _mm512_loadu_ps(mult_f + m),
                             static_cast<float>(zp), v)) {
          _mm_storeu_si128(reinterpret_cast<__m128i*>(o + m), v);
          continue;
        }
      }
      const __m512d b0 = bias ? widen8(bias + m) : _mm512_setzero_pd(), b1 = bias ? widen8(bias + m + 8) : _mm512_setzero_pd();
      store16(o + m, eight<T>(a + m, b0, _mm512_loadu_pd(mult + m), z), eight<T>(a + m + 8, b1, _mm512_loadu_pd(mult + m + 8), z));
    }
    for (; m < M; ++m)
      o[m] = static_cast<T>(static_cast<int32_t>(requantize(static_cast<double>(a[m]) + (bias ? bias[m] : 0), mult[m], zp, lo_v, hi_v)));
  }
}

}  // namespace

void requantize_channels_last(const int32_t* acc, int64_t pixels, int64_t M, const int32_t* bias, const double* mult,
                              double zero_point, bool u8, std::byte* out, const float* mult_f) {
  requantize_channels_last(acc, M, pixels, M, bias, mult, zero_point, u8, out, M, mult_f);
}

void requantize_channels_last(const int32_t* acc, int64_t lda, int64_t pixels, int64_t M, const int32_t* bias,
                              const double* mult, double zero_point, bool u8, std::byte* out, int64_t ldo,
                              const float* mult_f) {
  bool finite = true;
  for (int64_t m = 0; m < M; ++m) finite = finite && std::isfinite(mult[m]);
  if (has_avx512() && finite) {
    static const bool bw_vl = ONNXSCOPE_CPU_AVX512("avx512bw") && ONNXSCOPE_CPU_AVX512("avx512vl");
    const float* mf = bw_vl ? mult_f : nullptr;
    if (u8) return channels_last_avx512(acc, lda, pixels, M, bias, mult, zero_point, reinterpret_cast<uint8_t*>(out), ldo, mf);
    return channels_last_avx512(acc, lda, pixels, M, bias, mult, zero_point, reinterpret_cast<int8_t*>(out), ldo, mf);
  }
  for (int64_t px = 0; px < pixels; ++px) {
    if (mult_f) {
      const auto zf = static_cast<float>(zero_point);
      if (u8 ? requantize_float_any<uint8_t, true>(acc + px * lda, M, bias, mult_f, zf, reinterpret_cast<uint8_t*>(out) + px * ldo)
             : requantize_float_any<int8_t, true>(acc + px * lda, M, bias, mult_f, zf, reinterpret_cast<int8_t*>(out) + px * ldo))
        continue;
    }
    if (u8) requantize_double<uint8_t, true>(acc + px * lda, M, bias, mult, zero_point, reinterpret_cast<uint8_t*>(out) + px * ldo);
    else requantize_double<int8_t, true>(acc + px * lda, M, bias, mult, zero_point, reinterpret_cast<int8_t*>(out) + px * ldo);
  }
}


void requantize_run(const int32_t* acc, int64_t n, int64_t bias, double multiplier, double zero_point, bool u8,
                    std::byte* out, int64_t terms) {
  // acc + bias is exact in double (both under 2^31 in magnitude), as the reference's int64 sum widened.
  if (!has_avx512() && terms > 0 && bias >= INT32_MIN && bias <= INT32_MAX) {
    const auto b = static_cast<int32_t>(bias);
    if (float_requantization(&multiplier, 1, &b, terms)) {
      // Blocks of 32: one near a half sends its block alone to the double path.
      const auto m = static_cast<float>(multiplier), z = static_cast<float>(zero_point);
      for (int64_t i = 0; i < n; i += 32) {
        const int64_t k = std::min<int64_t>(32, n - i);
        if (u8 ? !requantize_float_any<uint8_t, false>(acc + i, k, &b, &m, z, reinterpret_cast<uint8_t*>(out) + i)
               : !requantize_float_any<int8_t, false>(acc + i, k, &b, &m, z, reinterpret_cast<int8_t*>(out) + i)) {
          if (u8) requantize_u8(acc + i, k, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<uint8_t*>(out) + i);
          else requantize_i8(acc + i, k, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<int8_t*>(out) + i);
        }
      }
      return;
    }
  }
  if (has_avx512() && std::isfinite(multiplier)) {
    if (u8) return requantize_avx512(acc, n, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<uint8_t*>(out));
    return requantize_avx512(acc, n, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<int8_t*>(out));
  }
  if (u8) requantize_u8(acc, n, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<uint8_t*>(out));
  else requantize_i8(acc, n, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<int8_t*>(out));
}

}  // namespace onnxscope::cpu
