// The float32 erf of the AVX-512 and AVX2 kernels (vector_math_avx512.h,
// vector_math_avx2.h): two polynomial pieces, fitted for this engine by
// scripts/fit_erf_f32.py, which also checks them as the kernels evaluate them
// (within 3 ulp of erf over [0, 4.5]). 32 vector operations where the
// former Taylor series and Abramowitz-Stegun 7.1.26 form took 55 (a
// reciprocal, a second exponential's range handling): on AVX2 it ran at
// 0.57-0.59x onnxruntime's FMA3 erf on the same CPU.
#pragma once

namespace onnxscope::cpu::erf_fit {

// |x| below kSplit: erf(a) = a P(a^2), P fitted to erf(a) / a for least
// relative error (1.6e-8 in exact arithmetic): a tiny x keeps its digits.
inline constexpr float kSplit = 0.921875f;
inline constexpr float kSmall[] = {-5.990893114e-04f, 4.993189592e-03f, -2.676662430e-02f,
                                   1.128181666e-01f,  -3.761249483e-01f, 1.128379107e+00f};

// From kSplit on: erf(a) = 1 - e^-g, g = a + a Q(a), Q fitted to
// -log(erfc a) / a - 1 for least absolute error of g (6.4e-7, a relative
// error of erfc a, which is below 0.2 there). a is held to kUpper, where
// e^-g is below half an ulp of 1 (erf rounds to 1), so g stays in [0.8, 18]:
// e^-g needs neither range clamp nor subnormal handling.
inline constexpr float kUpper = 3.925f;
inline constexpr float kBig[] = {1.603841883e-05f,  -3.648201237e-04f, 3.777406644e-03f, -2.394263633e-02f,
                                 1.062861085e-01f, 6.352431178e-01f,  1.285903454e-01f};

// e^-g = 2^n e^r with n = round(-g log2 e), r = -g - n ln2 in one step (n
// is at most 26 here: the error of ln2 in float moves r by 5e-8 at most),
// e^r by the degree-5 polynomial the AVX2 sigmoid also takes from here
// (relative error 1.1e-7 on |r| <= ln2 / 2). Both cost erf 0.1 ulp and two operations of 34.
inline constexpr float kLn2 = 0.693147181f;
inline constexpr float kExp[] = {8.3125280e-3f, 4.1890118e-2f, 1.6667114e-1f, 4.9999231e-1f, 1.0f, 1.0f};

}  // namespace onnxscope::cpu::erf_fit
