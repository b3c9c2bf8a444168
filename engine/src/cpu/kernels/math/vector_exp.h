// e^x for float32 in branch-free arithmetic the compiler turns into vector
// instructions inside a loop (build the loop with target_clones), for kernels
// whose time is in exponentials (Softmax over an inner axis). Cody-Waite
// reduction x = n ln2 + r with |r| <= ln2 / 2, a degree-6 polynomial for e^r,
// then n added to the exponent bits: within 3.2 ulp of the correctly rounded
// result on [-87.3, 88.7] (every 97th float there checked against double exp); +inf above, 0 below (where e^x is below FLT_MIN,
// under 1.2e-38 away from it), NaN for NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace onnxscope::cpu {

inline float exp_poly(float x) {
  constexpr float kHi = 88.7228317f, kLo = -87.3365479f;
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  const float xc = x < kLo ? kLo : (x > kHi ? kHi : x);  // NaN passes through both
  const float n = std::nearbyint(xc * kLog2e);
  float r = std::fma(-n, kLn2Hi, xc);
  r = std::fma(-n, kLn2Lo, r);
  float p = 1.3981999507e-3f;
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r * r, r + 1.0f);
  // 2^n by the exponent bits (n is in [-126, 128]: split so neither half overflows).
  const int32_t ni = static_cast<int32_t>(n == n ? n : 0.0f);
  const int32_t half = ni / 2;
  uint32_t b1 = static_cast<uint32_t>(half + 127) << 23, b2 = static_cast<uint32_t>(ni - half + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &b1, 4);
  std::memcpy(&s2, &b2, 4);
  float y = p * s1 * s2;
  y = x > kHi ? INFINITY : y;
  y = x < kLo ? 0.0f : y;
  return x != x ? x : y;
}

}  // namespace onnxscope::cpu
