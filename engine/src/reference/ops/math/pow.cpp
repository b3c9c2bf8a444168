// Reference kernel: Pow, with its integer and mixed-type forms.
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy. A float32
// base to one exponent (a scalar: LayerNorm's and RMSNorm's x^2 in most
// exports) runs over the data directly, in chunks across the threads; x^2
// is x * x there, the correctly rounded square (powf's own result is within
// 0.82 ulp of it, so the two can differ in the last bit on rare inputs), and
// x^3 is x * x * x in double rounded once to float (GPT-2's GELU: powf per
// element was 6-7 ns of it).
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

// An integer to a power, as numpy computes it: to a non-negative whole
// exponent by repeated multiplication, wrapping on overflow; otherwise through
// double, where a result outside the type (or NaN) becomes the type's lowest
// value, as numpy's astype gives on x86 (never the undefined float-to-int
// conversion).
template <typename I>
I integer_pow(I base, double e) {
  if (e >= 0 && e == std::floor(e) && e < 1.8e19) {
    uint64_t r = 1, b = static_cast<uint64_t>(base);  // modulo 2^64, then the low bits
    for (uint64_t n = static_cast<uint64_t>(e); n; n >>= 1) {
      if (n & 1) r *= b;
      b *= b;
    }
    return static_cast<I>(r);
  }
  const double p = std::pow(static_cast<double>(base), e);
  const double hi = std::ldexp(1.0, std::numeric_limits<I>::digits);
  const double lo = std::is_signed_v<I> ? -hi : 0.0;
  if (!(p >= lo && p < hi)) return std::numeric_limits<I>::lowest();
  return static_cast<I>(p);
}

}  // namespace

void Pow(KernelContext& c) {
  // The exponent may have another type than the base (opset 12+).
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  Shape shape = broadcast_shapes(c, shapes);
  Tensor& z = c.allocate_output(0, a.dtype(), shape);
  if (a.dtype() == DataType::Float && b.element_count() == 1 && shape == a.shape()) {
    const float e = static_cast<float>(b.element_as_double(0));
    const float* x = a.data<float>();
    float* y = z.mutable_data<float>();
    for_chunks(z.element_count(), [&](uint64_t lo, uint64_t hi) {
      if (e == 2.0f)
        for (uint64_t i = lo; i < hi; ++i) y[i] = x[i] * x[i];
      else if (e == 3.0f)  // GELU's tanh form: x^3 from double (x * x exact there), rounded once
        for (uint64_t i = lo; i < hi; ++i) {
          const double d = x[i];
          y[i] = static_cast<float>(d * d * d);
        }
      else
        for (uint64_t i = lo; i < hi; ++i) y[i] = std::pow(x[i], e);
    });
    return;
  }
  dispatch<kNumeric>(c, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    BroadcastIndex bi(shape, shapes);
    for (uint64_t i = 0; i < z.element_count(); ++i, bi.next()) {
      const auto base = get<S>(a, bi.offsets()[0]);
      const double e = b.element_as_double(bi.offsets()[1]);
      if constexpr (std::is_integral_v<compute_t<S>>)
        put<S>(z, i, integer_pow<compute_t<S>>(static_cast<compute_t<S>>(base), e));
      else
        put<S>(z, i, static_cast<compute_t<S>>(std::pow(static_cast<compute_t<S>>(base), static_cast<compute_t<S>>(e))));
    }
  });
}

}  // namespace onnxscope::ref
