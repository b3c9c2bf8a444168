// exp(y) and expm1(y) for y <= 0 (NaN kept) in double, by one algorithm
// written twice: a lane at a time, and eight lanes at a time in AVX-512
// with the same operations in the same order (no fused multiply-add), so
// either gives the same bits and a result does not depend on the machine.
// n = round(y / ln 2), r = y - n ln 2 in two parts (Cody and Waite), the
// Taylor polynomial of degree 13 on |r| <= ln(2) / 2 (its truncation below
// 1e-17 relative), scaled by 2^n: within 1 ulp of libm's in double
// (tests/reference_rnn_activations_test.cpp). libm's is not used where these
// are because it has no eight-lane form, and a call per element was most of
// the time of a recurrent step or a softmax row.
#pragma once

#include <cstdint>

namespace onnxscope::ref::math {

double exp_nonpositive(double y);
double expm1_nonpositive(double y);
// The same in place over y[0, n).
void exp_nonpositive(double* y, int64_t n);
void expm1_nonpositive(double* y, int64_t n);

// The logistic function and tanh made of them (the recurrent layers'
// Sigmoid and Tanh): (x >= 0 ? 1 : e) / (1 + e) with e = exp(-|x|), and
// copysign(-m / (2 + m), x) with m = expm1(-2 |x|); over an array in one
// pass, the same bits.
double sigmoid_by_exp(double x);
double tanh_by_expm1(double x);
void sigmoid_by_exp(double* x, int64_t n);
void tanh_by_expm1(double* x, int64_t n);

// erf for values of float32 (the Erf operator's float32 path): x P(2 x^2 -
// 1) below |x| = 1, 1 - e^(-x^2) Q(...) to 4, then +-1 (erf rounds to 1 in
// float32 there; it is not erf in double past 4). The polynomials and their
// check: scripts/fit_erf.py (within 2 double ulps below 4; every float32
// result of 420,000 checked is the correctly rounded erf).
double erf_by_exp(double x);
void erf_by_exp(double* x, int64_t n);

}  // namespace onnxscope::ref::math
