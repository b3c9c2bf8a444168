// Reference kernel: Range.
#include <algorithm>
#include <cmath>

#include "core/range_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Range(KernelContext& ctx) {
  const Tensor& start = ctx.input(0);
  const Tensor& limit = ctx.input(1);
  const Tensor& delta = ctx.input(2);
  const DataType t = start.dtype();
  if (limit.dtype() != t || delta.dtype() != t) ctx.fail("start, limit and delta must have the same element type");
  if (start.element_count() != 1 || limit.element_count() != 1 || delta.element_count() != 1)
    ctx.fail("start, limit and delta must be scalars");
  range::Plan p;
  try {
    p = dtype_info(t).is_integer ? range::integer_plan(start.element_as_int64(0), limit.element_as_int64(0), delta.element_as_int64(0))
                                 : range::real_plan(start.element_as_double(0), limit.element_as_double(0), delta.element_as_double(0));
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  const int64_t n = p.count;
  Tensor& y = ctx.allocate_output(0, t, {n});
  if (dtype_info(t).is_integer) {
    dispatch<kInts>(ctx, t, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (int64_t i = 0; i < n; ++i)
        store<S>(y, static_cast<uint64_t>(i), static_cast<S>(static_cast<uint64_t>(p.start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(p.delta)));
    });
    return;
  }
  // Like numpy.arange, in the computation type C: the first two values are
  // start and start + delta, the rest start + i * (second - first).
  auto fill = [&](auto zero) {
    using C = decltype(zero);
    std::vector<C> v(static_cast<size_t>(n));
    const C first = static_cast<C>(p.first), second = static_cast<C>(static_cast<double>(first) + p.real_delta);
    const C step = second - first;
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(i)] = i == 0 ? first : i == 1 ? second : static_cast<C>(first + static_cast<C>(i) * step);
    return v;
  };
  auto store_all = [&](const auto& v) {
    dispatch<kFloats>(ctx, t, [&](auto tag) {
      using S = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i) put<S>(y, i, static_cast<compute_t<S>>(v[i]));
    });
  };
  const bool narrow = t == DataType::Float16 || t == DataType::BFloat16;
  if (narrow && ctx.opset_version() >= 27) {
    // stash_type: the precision float16/bfloat16 ranges are computed in.
    const int64_t stash = ctx.attr_int("stash_type", 1);
    if (stash == 1) store_all(fill(0.0f));
    else if (stash == 11) store_all(fill(0.0));
    else ctx.fail("stash_type must be 1 (float) or 11 (double), got " + std::to_string(stash));
  } else {
    store_all(fill(0.0));  // numpy computes in float64, then casts
  }
}

}  // namespace onnxscope::ref
