// exp_f64.h's two forms of one algorithm.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_pd.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "reference/ops/math/exp_f64.h"
#include "reference/ops/math/vector_isa.h"

#include <immintrin.h>

#include <cmath>

namespace onnxscope::ref::math {
namespace {

constexpr double kLog2e = 1.4426950408889634074;
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // its last 21 bits 0: n * kLn2Hi is exact
constexpr double kLn2Lo = 1.90821492927058770002e-10;
// 1/k! for k = 2..13, the Taylor coefficients after 1 + r.
constexpr double kC[12] = {1.0 / 2,          1.0 / 6,           1.0 / 24,           1.0 / 120,
                           1.0 / 720,        1.0 / 5040,        1.0 / 40320,        1.0 / 362880,
                           1.0 / 3628800,    1.0 / 39916800,    1.0 / 479001600,    1.0 / 6227020800};
constexpr double kExpFloor = -746.0;   // exp below it is 0 in double
constexpr double kExpm1Floor = -40.0;  // expm1 below it is -1 in double
// erf_by_exp's polynomials (scripts/fit_erf.py), lowest degree first: erf(x)
// / x over 2 x^2 - 1 for |x| < 1, and exp(x^2) erfc(x) over (2 |x| - 5) / 3
// for 1 <= |x| < 4.
constexpr double kErfSmall[13] = {
    0.96546873866986727, -0.14053608902271711, 0.019852496688983708,
    -0.0022854855611441132, 0.00021751715604160108, -1.7537169441124826e-05,
    1.2233827383524009e-06, -7.5115692866008898e-08, 4.1158005976649597e-09,
    -2.035228404899467e-10, 9.167606746069445e-12, -3.8078827395263415e-13,
    1.454817075960679e-14};
constexpr double kErfcxMid[25] = {
    0.21080636406114359, -0.111521020184692, 0.05611049344497801,
    -0.02700529666459401, 0.012489373879489724, -0.0055707061788674538,
    0.0024036476859648289, -0.0010058314519202892, 0.00040908483792941074,
    -0.00016201169059209907, 6.2579404203936772e-05, -2.3609752867208162e-05,
    8.7112018213186126e-06, -3.146852852984381e-06, 1.1141561537966831e-06,
    -3.8710969041755941e-07, 1.3201348382558373e-07, -4.4034411753137258e-08,
    1.4502216998284751e-08, -4.8962945204994696e-09, 1.5656980006465935e-09,
    -3.692721097012829e-10, 1.1327762212572682e-10, -7.9317964242418285e-11,
    2.4073141058818404e-11};

template <int N>
double horner(const double (&c)[N], double s) {
  double r = c[N - 1];
  for (int j = N - 2; j >= 0; --j) r = r * s + c[j];
  return r;
}

// s(r) = 1/2 + r/6 + ... + r^11/13!, by Horner from the highest term.
double tail(double r) {
  double s = kC[11];
  for (int k = 10; k >= 0; --k) s = s * r + kC[k];
  return s;
}

}  // namespace

double exp_nonpositive(double y) {
  if (std::isnan(y)) return y;
  if (y < kExpFloor) y = kExpFloor;
  const double n = std::nearbyint(y * kLog2e);
  const double r = (y - n * kLn2Hi) - n * kLn2Lo;
  const double p = 1.0 + (r + (r * r) * tail(r));
  return std::ldexp(p, static_cast<int>(n));
}

double expm1_nonpositive(double y) {
  if (std::isnan(y)) return y;
  if (y < kExpm1Floor) y = kExpm1Floor;
  const double n = std::nearbyint(y * kLog2e);
  const double r = (y - n * kLn2Hi) - n * kLn2Lo;
  const double q = r + (r * r) * tail(r);  // expm1(r)
  if (n == 0) return q;
  const int e = static_cast<int>(n);
  return std::ldexp(q, e) + (std::ldexp(1.0, e) - 1.0);  // 2^n expm1(r) + 2^n - 1
}

double sigmoid_by_exp(double x) {
  const double e = exp_nonpositive(-std::fabs(x));
  return (x >= 0 ? 1.0 : e) / (1.0 + e);
}

double tanh_by_expm1(double x) {
  const double em = expm1_nonpositive(-2.0 * std::fabs(x));
  return std::copysign(-em / (2.0 + em), x);
}

double erf_by_exp(double x) {
  if (std::isnan(x)) return x;
  const double a = std::fabs(x), u = a * a;
  if (a < 1.0) return x * horner(kErfSmall, 2.0 * u - 1.0);
  if (a >= 4.0) return std::copysign(1.0, x);
  const double e = exp_nonpositive(-u);
  return std::copysign(1.0 - e * horner(kErfcxMid, (2.0 * a - 5.0) / 3.0), x);
}

namespace {

// The same operations on eight lanes. _mm512_max_pd(a, b) returns b where
// either is NaN, so the floors are applied as max(floor, y) to keep NaN.
__attribute__((target("avx512f"))) __m512d tail8(__m512d r) {
  __m512d s = _mm512_set1_pd(kC[11]);
  for (int k = 10; k >= 0; --k) s = _mm512_add_pd(_mm512_mul_pd(s, r), _mm512_set1_pd(kC[k]));
  return s;
}

__attribute__((target("avx512f"))) void reduce8(__m512d y, __m512d& n, __m512d& r) {
  n = _mm512_roundscale_pd(_mm512_mul_pd(y, _mm512_set1_pd(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_sub_pd(_mm512_sub_pd(y, _mm512_mul_pd(n, _mm512_set1_pd(kLn2Hi))), _mm512_mul_pd(n, _mm512_set1_pd(kLn2Lo)));
}

__attribute__((target("avx512f"))) inline __m512d exp8(__m512d y) {
  const __m512d v = _mm512_max_pd(_mm512_set1_pd(kExpFloor), y);
  // At the floor the result is 0 (2^-1076 p rounds to it), given as such:
  // scaling to it underflowed, a microcode assist per lane on Intel, and a
  // causal mask's softmax sends half its row there (6x slower).
  const __mmask8 zero = _mm512_cmp_pd_mask(v, _mm512_set1_pd(kExpFloor), _CMP_EQ_OQ);
  __m512d n, r;
  reduce8(v, n, r);
  const __m512d p = _mm512_add_pd(_mm512_set1_pd(1.0), _mm512_add_pd(r, _mm512_mul_pd(_mm512_mul_pd(r, r), tail8(r))));
  return _mm512_maskz_scalef_pd(static_cast<__mmask8>(~zero), p, _mm512_mask_blend_pd(zero, n, _mm512_setzero_pd()));
}

__attribute__((target("avx512f"))) inline __m512d expm1_8(__m512d y) {
  const __m512d one = _mm512_set1_pd(1.0);
  const __m512d v = _mm512_max_pd(_mm512_set1_pd(kExpm1Floor), y);
  __m512d n, r;
  reduce8(v, n, r);
  const __m512d q = _mm512_add_pd(r, _mm512_mul_pd(_mm512_mul_pd(r, r), tail8(r)));
  const __m512d scaled = _mm512_add_pd(_mm512_scalef_pd(q, n), _mm512_sub_pd(_mm512_scalef_pd(one, n), one));
  const __mmask8 zero = _mm512_cmp_pd_mask(n, _mm512_setzero_pd(), _CMP_EQ_OQ);
  return _mm512_mask_blend_pd(zero, scaled, q);
}

// Sign-bit operations (AVX-512F has them on integers only).
__attribute__((target("avx512f"))) inline __m512i sign_bits() { return _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ull)); }
__attribute__((target("avx512f"))) inline __m512d neg_abs(__m512d x) {  // -|x|
  return _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(x), sign_bits()));
}
__attribute__((target("avx512f"))) inline __m512d negate(__m512d x) {
  return _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(x), sign_bits()));
}
__attribute__((target("avx512f"))) inline __m512d copy_sign(__m512d magnitude, __m512d sign) {
  return _mm512_castsi512_pd(_mm512_or_si512(_mm512_andnot_si512(sign_bits(), _mm512_castpd_si512(magnitude)),
                                             _mm512_and_si512(sign_bits(), _mm512_castpd_si512(sign))));
}

__attribute__((target("avx512f"))) void exp_avx512(double* y, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm512_storeu_pd(y + i, exp8(_mm512_loadu_pd(y + i)));
  for (; i < count; ++i) y[i] = exp_nonpositive(y[i]);
}

__attribute__((target("avx512f"))) void expm1_avx512(double* y, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm512_storeu_pd(y + i, expm1_8(_mm512_loadu_pd(y + i)));
  for (; i < count; ++i) y[i] = expm1_nonpositive(y[i]);
}

// sigmoid_by_exp and tanh_by_expm1 with the same operations a lane at a time,
// in one pass (the exp and the division kept in registers).
__attribute__((target("avx512f"))) void sigmoid_avx512(double* x, int64_t count) {
  const __m512d one = _mm512_set1_pd(1.0);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    const __m512d e = exp8(neg_abs(v));
    const __mmask8 nonneg = _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_GE_OQ);  // false for NaN, as x >= 0
    _mm512_storeu_pd(x + i, _mm512_div_pd(_mm512_mask_blend_pd(nonneg, e, one), _mm512_add_pd(one, e)));
  }
  for (; i < count; ++i) x[i] = sigmoid_by_exp(x[i]);
}

__attribute__((target("avx512f"))) void tanh_avx512(double* x, int64_t count) {
  const __m512d two = _mm512_set1_pd(2.0);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    const __m512d em = expm1_8(_mm512_mul_pd(_mm512_set1_pd(-2.0), _mm512_abs_pd(v)));
    _mm512_storeu_pd(x + i, copy_sign(_mm512_div_pd(negate(em), _mm512_add_pd(two, em)), v));
  }
  for (; i < count; ++i) x[i] = tanh_by_expm1(x[i]);
}

template <int N>
__attribute__((target("avx512f"))) inline __m512d horner8(const double (&c)[N], __m512d s) {
  __m512d r = _mm512_set1_pd(c[N - 1]);
  for (int j = N - 2; j >= 0; --j) r = _mm512_add_pd(_mm512_mul_pd(r, s), _mm512_set1_pd(c[j]));
  return r;
}

// erf_by_exp a lane at a time: both polynomials on every lane, then the
// lane's own branch.
__attribute__((target("avx512f"))) void erf_avx512(double* x, int64_t count) {
  const __m512d one = _mm512_set1_pd(1.0), two = _mm512_set1_pd(2.0);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    const __m512d a = _mm512_abs_pd(v), u = _mm512_mul_pd(a, a);
    const __m512d small = _mm512_mul_pd(v, horner8(kErfSmall, _mm512_sub_pd(_mm512_mul_pd(two, u), one)));
    const __mmask8 below1 = _mm512_cmp_pd_mask(a, one, _CMP_LT_OQ);
    if (below1 == 0xff) {  // every lane below 1 (most of a GELU's): the rest is not needed
      _mm512_storeu_pd(x + i, small);
      continue;
    }
    const __m512d q = horner8(kErfcxMid, _mm512_div_pd(_mm512_sub_pd(_mm512_mul_pd(two, a), _mm512_set1_pd(5.0)), _mm512_set1_pd(3.0)));
    const __m512d mid = _mm512_sub_pd(one, _mm512_mul_pd(exp8(negate(u)), q));
    __m512d r = copy_sign(_mm512_mask_blend_pd(_mm512_cmp_pd_mask(a, _mm512_set1_pd(4.0), _CMP_LT_OQ), one, mid), v);
    r = _mm512_mask_blend_pd(below1, r, small);
    r = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q), r, v);
    _mm512_storeu_pd(x + i, r);
  }
  for (; i < count; ++i) x[i] = erf_by_exp(x[i]);
}

// The same operations on four lanes in AVX2. Without scalef, p 2^n is a
// multiply by 2^n built from its bits: exact where the result is normal,
// one rounding where it is subnormal (as ldexp and scalef round). 2^n is
// a normal double for n >= -1022; below that (exp of y < -708, n down to
// -1076) the scaling is two multiplies, by 2^-1000 first (exact: the value
// stays normal), then by 2^(n + 1000), the one rounding.
__attribute__((target("avx2,fma"))) inline __m256d pow2_4(__m256d n) {  // 2^n for integral -1022 <= n <= 1023
  const __m256d shifted = _mm256_add_pd(n, _mm256_set1_pd(4503599627370496.0 + 1023.0));  // 2^52 + 1023 + n: the low bits
  return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(shifted), 52));
}

__attribute__((target("avx2,fma"))) inline __m256d scale4(__m256d p, __m256d n) {  // p 2^n, n integral in [-1076, 1023]
  const __m256d deep = _mm256_cmp_pd(n, _mm256_set1_pd(-1022.0), _CMP_LT_OQ);
  const __m256d first = _mm256_blendv_pd(_mm256_set1_pd(1.0), _mm256_set1_pd(0x1p-1000), deep);
  const __m256d rest = _mm256_blendv_pd(n, _mm256_add_pd(n, _mm256_set1_pd(1000.0)), deep);
  return _mm256_mul_pd(_mm256_mul_pd(p, first), pow2_4(rest));
}

__attribute__((target("avx2,fma"))) __m256d tail4(__m256d r) {
  __m256d s = _mm256_set1_pd(kC[11]);
  for (int k = 10; k >= 0; --k) s = _mm256_add_pd(_mm256_mul_pd(s, r), _mm256_set1_pd(kC[k]));
  return s;
}

__attribute__((target("avx2,fma"))) void reduce4(__m256d y, __m256d& n, __m256d& r) {
  n = _mm256_round_pd(_mm256_mul_pd(y, _mm256_set1_pd(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm256_sub_pd(_mm256_sub_pd(y, _mm256_mul_pd(n, _mm256_set1_pd(kLn2Hi))), _mm256_mul_pd(n, _mm256_set1_pd(kLn2Lo)));
}

__attribute__((target("avx2,fma"))) inline __m256d exp4(__m256d y) {
  const __m256d v = _mm256_max_pd(_mm256_set1_pd(kExpFloor), y);  // (NaN kept: max returns its second operand)
  const __m256d zero = _mm256_cmp_pd(v, _mm256_set1_pd(kExpFloor), _CMP_EQ_OQ);  // 0 there, as exp8 gives it
  __m256d n, r;
  reduce4(v, n, r);
  const __m256d p = _mm256_add_pd(_mm256_set1_pd(1.0), _mm256_add_pd(r, _mm256_mul_pd(_mm256_mul_pd(r, r), tail4(r))));
  return _mm256_andnot_pd(zero, scale4(p, _mm256_andnot_pd(zero, n)));
}

__attribute__((target("avx2,fma"))) inline __m256d expm1_4(__m256d y) {
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256d v = _mm256_max_pd(_mm256_set1_pd(kExpm1Floor), y);
  __m256d n, r;
  reduce4(v, n, r);
  const __m256d q = _mm256_add_pd(r, _mm256_mul_pd(_mm256_mul_pd(r, r), tail4(r)));
  const __m256d p2 = pow2_4(n);  // n >= -58: normal, so both products are exact
  const __m256d scaled = _mm256_add_pd(_mm256_mul_pd(q, p2), _mm256_sub_pd(p2, one));
  return _mm256_blendv_pd(scaled, q, _mm256_cmp_pd(n, _mm256_setzero_pd(), _CMP_EQ_OQ));
}

__attribute__((target("avx2,fma"))) inline __m256d sign_bits4() { return _mm256_set1_pd(-0.0); }

__attribute__((target("avx2,fma"))) void exp_avx2(double* y, int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) _mm256_storeu_pd(y + i, exp4(_mm256_loadu_pd(y + i)));
  for (; i < count; ++i) y[i] = exp_nonpositive(y[i]);
}

__attribute__((target("avx2,fma"))) void expm1_avx2(double* y, int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) _mm256_storeu_pd(y + i, expm1_4(_mm256_loadu_pd(y + i)));
  for (; i < count; ++i) y[i] = expm1_nonpositive(y[i]);
}

__attribute__((target("avx2,fma"))) void sigmoid_avx2(double* x, int64_t count) {
  const __m256d one = _mm256_set1_pd(1.0);
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    const __m256d e = exp4(_mm256_or_pd(v, sign_bits4()));  // exp(-|x|)
    const __m256d nonneg = _mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_GE_OQ);  // false for NaN, as x >= 0
    _mm256_storeu_pd(x + i, _mm256_div_pd(_mm256_blendv_pd(e, one, nonneg), _mm256_add_pd(one, e)));
  }
  for (; i < count; ++i) x[i] = sigmoid_by_exp(x[i]);
}

__attribute__((target("avx2,fma"))) void tanh_avx2(double* x, int64_t count) {
  const __m256d two = _mm256_set1_pd(2.0), sign = sign_bits4();
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    const __m256d em = expm1_4(_mm256_mul_pd(_mm256_set1_pd(-2.0), _mm256_andnot_pd(sign, v)));
    const __m256d t = _mm256_div_pd(_mm256_xor_pd(em, sign), _mm256_add_pd(two, em));
    _mm256_storeu_pd(x + i, _mm256_or_pd(_mm256_andnot_pd(sign, t), _mm256_and_pd(sign, v)));
  }
  for (; i < count; ++i) x[i] = tanh_by_expm1(x[i]);
}

template <int N>
__attribute__((target("avx2,fma"))) inline __m256d horner4(const double (&c)[N], __m256d s) {
  __m256d r = _mm256_set1_pd(c[N - 1]);
  for (int j = N - 2; j >= 0; --j) r = _mm256_add_pd(_mm256_mul_pd(r, s), _mm256_set1_pd(c[j]));
  return r;
}

__attribute__((target("avx2,fma"))) void erf_avx2(double* x, int64_t count) {
  const __m256d one = _mm256_set1_pd(1.0), two = _mm256_set1_pd(2.0), sign = sign_bits4();
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    const __m256d a = _mm256_andnot_pd(sign, v), u = _mm256_mul_pd(a, a);
    const __m256d small = _mm256_mul_pd(v, horner4(kErfSmall, _mm256_sub_pd(_mm256_mul_pd(two, u), one)));
    const __m256d below1 = _mm256_cmp_pd(a, one, _CMP_LT_OQ);
    if (_mm256_movemask_pd(below1) == 0xf) {  // every lane below 1
      _mm256_storeu_pd(x + i, small);
      continue;
    }
    const __m256d q = horner4(kErfcxMid, _mm256_div_pd(_mm256_sub_pd(_mm256_mul_pd(two, a), _mm256_set1_pd(5.0)), _mm256_set1_pd(3.0)));
    const __m256d mid = _mm256_sub_pd(one, _mm256_mul_pd(exp4(_mm256_xor_pd(u, sign)), q));
    const __m256d big = _mm256_blendv_pd(one, mid, _mm256_cmp_pd(a, _mm256_set1_pd(4.0), _CMP_LT_OQ));
    __m256d r = _mm256_or_pd(_mm256_andnot_pd(sign, big), _mm256_and_pd(sign, v));
    r = _mm256_blendv_pd(r, small, below1);
    r = _mm256_blendv_pd(r, v, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
    _mm256_storeu_pd(x + i, r);
  }
  for (; i < count; ++i) x[i] = erf_by_exp(x[i]);
}

}  // namespace

void exp_nonpositive(double* y, int64_t n) {
  if (vector_isa() == VectorIsa::Avx512) return exp_avx512(y, n);
  if (vector_isa() == VectorIsa::Avx2) return exp_avx2(y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = exp_nonpositive(y[i]);
}

void expm1_nonpositive(double* y, int64_t n) {
  if (vector_isa() == VectorIsa::Avx512) return expm1_avx512(y, n);
  if (vector_isa() == VectorIsa::Avx2) return expm1_avx2(y, n);
  for (int64_t i = 0; i < n; ++i) y[i] = expm1_nonpositive(y[i]);
}

void sigmoid_by_exp(double* x, int64_t n) {
  if (vector_isa() == VectorIsa::Avx512) return sigmoid_avx512(x, n);
  if (vector_isa() == VectorIsa::Avx2) return sigmoid_avx2(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = sigmoid_by_exp(x[i]);
}

void tanh_by_expm1(double* x, int64_t n) {
  if (vector_isa() == VectorIsa::Avx512) return tanh_avx512(x, n);
  if (vector_isa() == VectorIsa::Avx2) return tanh_avx2(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = tanh_by_expm1(x[i]);
}

void erf_by_exp(double* x, int64_t n) {
  if (vector_isa() == VectorIsa::Avx512) return erf_avx512(x, n);
  if (vector_isa() == VectorIsa::Avx2) return erf_avx2(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] = erf_by_exp(x[i]);
}

}  // namespace onnxscope::ref::math
