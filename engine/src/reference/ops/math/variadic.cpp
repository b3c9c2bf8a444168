// Reference kernels: Max, Min, Sum, Mean over any number of broadcast inputs.
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
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

template <unsigned Types, typename F>
void variadic(KernelContext& ctx, F combine, bool mean = false) {
  std::vector<const Shape*> shapes;
  const Tensor& first = ctx.input(0);
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    const Tensor& t = ctx.input(k);
    if (t.dtype() != first.dtype()) ctx.fail("all inputs must have the same element type");
    shapes.push_back(&t.shape());
  }
  Shape shape = broadcast_shapes(ctx, shapes);
  Tensor& out = ctx.allocate_output(0, first.dtype(), shape);
  dispatch<Types>(ctx, first.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    BroadcastIndex bi(shape, shapes);
    for (uint64_t i = 0; i < out.element_count(); ++i, bi.next()) {
      C acc = get<S>(ctx.input(0), bi.offsets()[0]);
      for (size_t k = 1; k < ctx.input_count(); ++k) acc = combine(acc, get<S>(ctx.input(k), bi.offsets()[k]));
      if (mean) acc = static_cast<C>(acc / static_cast<C>(ctx.input_count()));
      put<S>(out, i, acc);
    }
  });
}

template <typename T> T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();  // numpy.maximum propagates NaN
  return a > b ? a : b;
}

template <typename T> T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a < b ? a : b;
}

}  // namespace

void Max(KernelContext& c) { variadic<kNumeric>(c, [](auto a, auto b) { return nan_max(a, b); }); }
void Min(KernelContext& c) { variadic<kNumeric>(c, [](auto a, auto b) { return nan_min(a, b); }); }
void Sum(KernelContext& c) { variadic<kFloats>(c, [](auto a, auto b) { return a + b; }); }
void Mean(KernelContext& c) { variadic<kFloats>(c, [](auto a, auto b) { return a + b; }, true); }

}  // namespace onnxscope::ref
