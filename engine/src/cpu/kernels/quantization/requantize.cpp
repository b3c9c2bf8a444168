// The QLinear operators' requantization of int32 sums over whole runs
// (requantize.h): the same values as requantize() element by element, in a
// loop built for AVX-512, AVX2 and the baseline. std::nearbyint was a libm
// call per element (no SSE4.1 in the baseline build); rounding half to even
// here is adding and taking away 1.5 * 2^52, exact once x is clamped to
// +-2^51 (a product past that saturates to lo or hi either way).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // the product rounds before the rounding trick's add
#endif
#include <cstddef>
#include <cstdint>

#include "cpu/kernels/quantization/requantize.h"

namespace onnxscope::cpu {
namespace {

#define ONNXSCOPE_REQUANTIZE(name, T, LO, HI)                                                               \
  __attribute__((target_clones("avx512f", "avx2", "default"))) void name(const int32_t* acc, int64_t n, double bias, \
                                                                        double mult, double zp, T* out) {   \
    constexpr double kBig = 2251799813685248.0;    /* 2^51 */                                               \
    constexpr double kRound = 6755399441055744.0;  /* 1.5 * 2^52 */                                         \
    for (int64_t i = 0; i < n; ++i) {                                                                       \
      double x = (static_cast<double>(acc[i]) + bias) * mult;                                               \
      const bool nan = x != x;                                                                              \
      x = x < -kBig ? -kBig : x;                                                                            \
      x = x > kBig ? kBig : x;                                                                              \
      const double r = (x + kRound) - kRound;                                                               \
      double v = nan ? zp : r + zp;                                                                         \
      v = v < LO ? LO : v;                                                                                  \
      v = v > HI ? HI : v;                                                                                  \
      out[i] = static_cast<T>(static_cast<int32_t>(v));                                                    \
    }                                                                                                       \
  }
ONNXSCOPE_REQUANTIZE(requantize_u8, uint8_t, 0.0, 255.0)
ONNXSCOPE_REQUANTIZE(requantize_i8, int8_t, -128.0, 127.0)
#undef ONNXSCOPE_REQUANTIZE

}  // namespace

void requantize_run(const int32_t* acc, int64_t n, int64_t bias, double multiplier, double zero_point, bool u8,
                    std::byte* out) {
  // acc + bias is exact in double (both under 2^31 in magnitude), as the reference's int64 sum widened.
  if (u8) requantize_u8(acc, n, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<uint8_t*>(out));
  else requantize_i8(acc, n, static_cast<double>(bias), multiplier, zero_point, reinterpret_cast<int8_t*>(out));
}

}  // namespace onnxscope::cpu
