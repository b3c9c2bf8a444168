// The QLinear operators' requantization as the reference computes it, shared
// by QLinearMatMul (matmul_integer.cpp) and QLinearConv (conv_integer.cpp):
// y = saturate(round_half_even(sum * multiplier) + zero_point), the
// multiplier formed in float and applied in double; a NaN multiplier (scales
// of 0 / 0, NaN or inf) gives the zero point, as QuantizeLinear does for NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace onnxscope::cpu {

inline double requantize(double sum, double multiplier, double zero_point, double lo, double hi) {
  const double r = std::nearbyint(sum * multiplier);
  return std::clamp((std::isnan(r) ? 0.0 : r) + zero_point, lo, hi);
}

// Whether round8_bounded may take a multiplier's products: finite and at
// most 2^19 in magnitude (the others go through requantize()'s checks).
inline bool bounded_multiplier(double m) { return m >= -524288.0 && m <= 524288.0; }

// Whether round16_float (requantize_avx512.h) may take a problem: every multiplier a float (and
// bounded), and every sum plus its bias within int32 for sums of `terms`
// products of two values of at most 255 in magnitude.
inline bool float_requantization(const double* mult, int64_t n, const int32_t* bias, int64_t terms) {
  int64_t largest_bias = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!bounded_multiplier(mult[i]) || static_cast<double>(static_cast<float>(mult[i])) != mult[i]) return false;
    if (bias) largest_bias = std::max<int64_t>(largest_bias, bias[i] < 0 ? -int64_t{bias[i]} : int64_t{bias[i]});
  }
  return terms <= (int64_t{1} << 20) && terms * 65025 + largest_bias <= int64_t{2147483647};
}

// requantize() of acc[i] + bias for i < n into out[0, n) (uint8 or int8
// storage), vectorised (requantize.cpp); bias and each acc[i] in int32's range.
// `terms`: the most products of two 8-bit values each sum holds, where the
// caller knows it: without AVX-512, float arithmetic then where it is exact.
void requantize_run(const int32_t* acc, int64_t n, int64_t bias, double multiplier, double zero_point, bool u8,
                    std::byte* out, int64_t terms = 0);

// requantize() of acc[p * M + m] + bias[m] (bias may be null) with
// multiplier mult[m] into out[p * M + m] for p < pixels, m < M: sums laid
// out channels last, as oneDNN's int8 convolutions write them. `mult_f`: the
// multipliers as floats where the caller checked that the float
// requantization is exact for its sums (float_requantization,
// above), else null.
void requantize_channels_last(const int32_t* acc, int64_t pixels, int64_t M, const int32_t* bias, const double* mult,
                              double zero_point, bool u8, std::byte* out, const float* mult_f = nullptr);
// The same over rows `lda` int32 apart in acc and `ldo` bytes apart in out
// (a block of columns of a wider output).
void requantize_channels_last(const int32_t* acc, int64_t lda, int64_t pixels, int64_t M, const int32_t* bias,
                              const double* mult, double zero_point, bool u8, std::byte* out, int64_t ldo,
                              const float* mult_f = nullptr);

// Stores a requantized value into uint8 or int8 storage.
inline void store_int8(std::byte* out, int64_t i, bool u8, double q) {
  if (u8) reinterpret_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(q);
  else reinterpret_cast<int8_t*>(out)[i] = static_cast<int8_t>(q);
}

}  // namespace onnxscope::cpu
