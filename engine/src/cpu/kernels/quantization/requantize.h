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

// requantize() of acc[i] + bias for i < n into out[0, n) (uint8 or int8
// storage), vectorised (requantize.cpp); bias and each acc[i] in int32's range.
void requantize_run(const int32_t* acc, int64_t n, int64_t bias, double multiplier, double zero_point, bool u8,
                    std::byte* out);

// requantize() of acc[p * M + m] + bias[m] (bias may be null) with
// multiplier mult[m] into out[p * M + m] for p < pixels, m < M: sums laid
// out channels last, as oneDNN's int8 convolutions write them. `terms`: the
// products in each sum when known (each of two 8-bit values minus their zero
// points), which lets the float requantization run where it is exact
// (requantize_avx512.h); 0: unknown.
void requantize_channels_last(const int32_t* acc, int64_t pixels, int64_t M, const int32_t* bias, const double* mult,
                              double zero_point, bool u8, std::byte* out, int64_t terms = 0);
// The same over rows `lda` int32 apart in acc and `ldo` bytes apart in out
// (a block of columns of a wider output).
void requantize_channels_last(const int32_t* acc, int64_t lda, int64_t pixels, int64_t M, const int32_t* bias,
                              const double* mult, double zero_point, bool u8, std::byte* out, int64_t ldo,
                              int64_t terms = 0);

// Stores a requantized value into uint8 or int8 storage.
inline void store_int8(std::byte* out, int64_t i, bool u8, double q) {
  if (u8) reinterpret_cast<uint8_t*>(out)[i] = static_cast<uint8_t>(q);
  else reinterpret_cast<int8_t*>(out)[i] = static_cast<int8_t>(q);
}

}  // namespace onnxscope::cpu
