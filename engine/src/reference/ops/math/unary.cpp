// Reference kernels: unary math, one element in, one out.
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy, but for
// Tanh and Erf, computed in double and rounded once (math/common.h's
// float_through_double).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/math/exp_f64.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// numpy.round: half to even.
template <typename T> T round_half_even(T x) { return std::nearbyint(x); }

// The most negative integer has no positive counterpart: it stays itself
// (numpy and ONNX Runtime wrap); computed in uint64_t to avoid the overflow.
template <typename T>
T negate(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(uint64_t{0} - static_cast<uint64_t>(v));
  else return -v;
}

}  // namespace

void Abs(KernelContext& c) {
  unary<kNumeric>(c, [](auto v) {
    if constexpr (std::is_unsigned_v<decltype(v)>) return v;
    else return v < 0 ? negate(v) : v;
  });
}

void Neg(KernelContext& c) {
  unary<kFloats | kSignedInts>(c, [](auto v) { return negate(v); });
}

void Sign(KernelContext& c) {
  unary<kNumeric>(c, [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return v;
    }
    return T(v > T(0) ? 1 : (v < T(0) ? -1 : 0));
  });
}

void Reciprocal(KernelContext& c) { unary<kFloats>(c, [](auto v) { return decltype(v)(1) / v; }); }
void Floor(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::floor(v); }); }
void Ceil(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::ceil(v); }); }
void Round(KernelContext& c) { unary<kFloats>(c, [](auto v) { return round_half_even(v); }); }
void Sqrt(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::sqrt(v); }); }
void Exp(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::exp(v); }); }
void Log(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::log(v); }); }
void Sin(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::sin(v); }); }
void Cos(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::cos(v); }); }
void Tan(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::tan(v); }); }
void Asin(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::asin(v); }); }
void Acos(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::acos(v); }); }
void Atan(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::atan(v); }); }
void Sinh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::sinh(v); }); }
void Cosh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::cosh(v); }); }
void Asinh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::asinh(v); }); }
void Acosh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::acosh(v); }); }
void Atanh(KernelContext& c) { unary<kFloats>(c, [](auto v) { return std::atanh(v); }); }
void Tanh(KernelContext& c) {
  if (c.input(0).dtype() == DataType::Float) return float_through_double(c, [](double* v, int64_t n) { math::tanh_by_expm1(v, n); });
  unary<kFloats>(c, [](auto v) { return std::tanh(v); });
}
void Erf(KernelContext& c) {
  if (c.input(0).dtype() == DataType::Float) return float_through_double(c, [](double* v, int64_t n) { math::erf_by_exp(v, n); });
  unary<kFloats>(c, [](auto v) { return std::erf(v); });
}

}  // namespace onnxscope::ref
