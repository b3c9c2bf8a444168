// e^x (and log x and tanh x, at the end) for float32 in branch-free arithmetic the
// compiler turns into vector instructions inside a loop (build the loop with
// target_clones), for kernels whose time is in exponentials (Softmax over an
// inner axis). Cody-Waite reduction x = n ln2 + r with |r| <= ln2 / 2, a
// degree-6 polynomial for e^r, then n added to the exponent bits: within 3.2
// ulp of the correctly rounded result on [-87.3, 88.7] (every 97th float
// there checked against double exp); +inf above, 0 below (where e^x is below
// FLT_MIN, under 1.2e-38 away from it), NaN for NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace onnxscope::cpu {

// Subnormal: results below FLT_MIN as the right subnormal (down to e^-103.97,
// below half the smallest one: 0), not 0; the two halves of 2^n stay normal.
template <bool Subnormal = false>
inline float exp_poly(float x) {
  constexpr float kHi = 88.7228317f, kLo = Subnormal ? -103.972077f : -87.3365479f;
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
  // 2^n by the exponent bits (n is in [-150, 128]: split so neither half leaves the normal range).
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

// log(x) for float32 in the same branch-free style: the steps of
// vector_math_avx512.h's log (x = m 2^e, m in [sqrt(1/2), sqrt(2)), Cephes'
// polynomial for log1p(m - 1), e ln2 in two parts), with the exponent and
// mantissa read from the bits, a subnormal first scaled by 2^23; the same
// operations in the same order as that kernel. 0 gives -inf, negatives NaN,
// +inf +inf, NaN NaN. Within the harness's 2e-6 of the reference over every
// binade (cpu_ops_threads_test).
inline float log_poly(float x) {
  const bool sub = x < 1.17549435e-38f;  // zero and negatives too: set at the end
  const float xs = sub ? x * 8388608.0f : x;
  uint32_t b;
  std::memcpy(&b, &xs, 4);
  const uint32_t mb = (b & 0x007fffffu) | 0x3f800000u;
  float m;
  std::memcpy(&m, &mb, 4);
  const bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  const int32_t ei = static_cast<int32_t>((b >> 23) & 0xffu) - 127 + (big ? 1 : 0) - (sub ? 23 : 0);
  const float e = static_cast<float>(ei);
  const float f = m - 1.0f, z = f * f;
  // Horner written out: a loop over the coefficients keeps the caller's loop scalar.
  float p = std::fma(7.0376836292e-2f, f, -1.1514610310e-1f);
  p = std::fma(p, f, 1.1676998740e-1f);
  p = std::fma(p, f, -1.2420140846e-1f);
  p = std::fma(p, f, 1.4249322787e-1f);
  p = std::fma(p, f, -1.6668057665e-1f);
  p = std::fma(p, f, 2.0000714765e-1f);
  p = std::fma(p, f, -2.4999993993e-1f);
  p = std::fma(p, f, 3.3333331174e-1f);
  float y = p * f * z;
  y = std::fma(e, -2.12194440e-4f, y);
  y = std::fma(z, -0.5f, y);
  y = f + y;
  y = std::fma(e, 0.693359375f, y);
  y = x == 0.0f ? -INFINITY : y;
  y = x < 0.0f ? NAN : y;
  y = x == INFINITY ? x : y;
  return x != x ? x : y;
}

// tanh(x): vector_math_avx512.h's [6/3] rational x P(x^2) / Q(x^2) on
// |x| <= 9 (scripts/fit_tanh.py), clamped to [-1, 1], here with a division
// where the AVX-512 kernel multiplies by a refined reciprocal. -0 stays -0,
// NaN passes every step (the compares are false for it).
inline float tanh_poly(float x) {
  float a = x > 9.0f ? 9.0f : x;
  a = a < -9.0f ? -9.0f : a;
  const float t = a * a;
  float p = std::fma(-8.489145801e-14f, t, 5.278125159e-11f);
  p = std::fma(p, t, -2.022560963e-08f);
  p = std::fma(p, t, 1.115440591e-05f);
  p = std::fma(p, t, 3.103965893e-03f);
  p = std::fma(p, t, 1.308401823e-01f);
  p = std::fma(p, t, 1.0f);
  float q = std::fma(2.546159085e-04f, t, 2.449521609e-02f);
  q = std::fma(q, t, 4.641734660e-01f);
  q = std::fma(q, t, 1.0f);
  float r = a * p / q;
  r = r > 1.0f ? 1.0f : r;
  return r < -1.0f ? -1.0f : r;
}

// The rest of unary_avx512.cpp's functions (vector_math_avx512.h) in the
// same style, for the AVX2 loops of unary_avx2.cpp: the same formulas and
// constants, divisions where the AVX-512 kernels refine a reciprocal.

// log(1 + u) for u >= 0 without losing a small u (Goldberg's correction).
inline float log1p_nonneg_poly(float u) {
  const float w = u + 1.0f, d = w - 1.0f;
  const float y = log_poly(w) * u / d;
  return d == 0.0f ? u : y;
}

// softplus(x) = max(x, 0) + log1p(e^-|x|): finite far right, every digit far left.
inline float softplus_poly(float x) {
  return (x > 0.0f ? x : 0.0f) + log1p_nonneg_poly(exp_poly(-std::fabs(x)));
}

// mish(x) = x n / (n + 2) with n = e^x (e^x + 2); x itself above 20.
inline float mish_poly(float x) {
  const float e = exp_poly<true>(x);  // x e^x is a normal float down to x = -103
  const float n = e * (e + 2.0f);
  const float y = x * (n / (n + 2.0f));
  return x > 20.0f ? x : y;
}

// sin or cos (Cos: one quadrant on) for |x| below 2^13 (the caller sends
// the rest to the C library): k = round(x 2/pi), r = x - k pi/2 in three
// parts, the Cephes polynomials on [-pi/4, pi/4] and the quadrant's sign.
template <bool Cos>
inline float sincos_poly(float x) {
  const float k = std::nearbyint(x * 0.636619772367581343f);
  float r = std::fma(-k, 1.5703125f, x);
  r = std::fma(-k, 4.837512969970703125e-4f, r);
  r = std::fma(-k, 7.54978995489188216e-8f, r);
  const float z = r * r;
  float ps = std::fma(-1.9515295891e-4f, z, 8.3321608736e-3f);
  ps = std::fma(ps, z, -1.6666654611e-1f);
  const float sin_r = std::fma(ps * z, r, r);
  float pc = std::fma(2.443315711809948e-5f, z, -1.388731625493765e-3f);
  pc = std::fma(pc, z, 4.166664568298827e-2f);
  const float cos_r = std::fma(pc * z, z, std::fma(-z, 0.5f, 1.0f));
  const int32_t q = static_cast<int32_t>(k == k && std::fabs(k) < 16384.0f ? k : 0.0f) + (Cos ? 1 : 0);
  const float y = (q & 1) ? cos_r : sin_r;
  uint32_t b;
  std::memcpy(&b, &y, 4);
  b ^= static_cast<uint32_t>(q & 2) << 30;
  float out;
  std::memcpy(&out, &b, 4);
  return out;
}

}  // namespace onnxscope::cpu
