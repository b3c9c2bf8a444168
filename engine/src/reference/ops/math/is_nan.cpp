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
#include "reference/ops/math/common.h"
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
    const std::byte* px = x.raw();
    std::byte* py = y.mutable_raw();
    for_chunks(x.element_count(), [&](uint64_t lo, uint64_t hi) {
      const std::byte* const in = px;  // local copies (see math/common.h's unary)
      std::byte* const out = py;
      for (uint64_t i = lo; i < hi; ++i) store_at<bool>(out, i, pred(to_compute(load_at<S>(in, i))));
    });
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
