// Reference kernels: IsNaN and IsInf.
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

// y = pred(x) as bool.
template <unsigned Types, typename F>
void unary_predicate(KernelContext& ctx, F pred) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
  dispatch<Types>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) store<bool>(y, i, pred(get<S>(x, i)));
  });
}

}  // namespace

void IsNaN(KernelContext& c) {
  unary_predicate<kFloats | kFloat8>(c, [](auto v) { return std::isnan(v); });
}

void IsInf(KernelContext& c) {
  const bool neg = c.attr_int("detect_negative", 1) != 0, pos = c.attr_int("detect_positive", 1) != 0;
  unary_predicate<kFloats | kFloat8>(c, [&](auto v) { return std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg)); });
}

}  // namespace onnxscope::ref
