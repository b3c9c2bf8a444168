// Reference kernels: Add, Sub, Mul, Div with broadcasting (integers wrap, integer Div truncates).
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// Signed integers wrap on overflow, like numpy (and ONNX Runtime); in C++ a
// signed overflow is undefined, so the arithmetic runs on the unsigned type.
// (Through uint64_t: a narrower unsigned type would be promoted to int and
// could overflow again; the result modulo 2^bits is the same.)
template <typename T, typename F>
T wrapping(T x, T y, F op) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(op(static_cast<uint64_t>(x), static_cast<uint64_t>(y)));
  } else {
    return static_cast<T>(op(x, y));
  }
}

}  // namespace

void Add(KernelContext& c) {
  binary<kNumeric>(c, [](auto x, auto y) { return wrapping(x, decltype(x)(y), [](auto a, auto b) { return a + b; }); });
}

void Sub(KernelContext& c) {
  binary<kNumeric>(c, [](auto x, auto y) { return wrapping(x, decltype(x)(y), [](auto a, auto b) { return a - b; }); });
}

void Mul(KernelContext& c) {
  binary<kNumeric>(c, [](auto x, auto y) { return wrapping(x, decltype(x)(y), [](auto a, auto b) { return a * b; }); });
}

void Div(KernelContext& c) {
  binary<kNumeric>(c, [&](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) c.fail("integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (x == std::numeric_limits<T>::min() && y == T(-1)) return x;  // wraps, like numpy
      return T(x / y);  // C++ truncates toward zero, as the spec asks for integers
    } else {
      return x / y;
    }
  });
}

}  // namespace onnxscope::ref
