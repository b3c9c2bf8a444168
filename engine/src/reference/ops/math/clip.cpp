// Reference kernel: Clip.
//
// Float math accumulates in double (the spec leaves the precision open) and
// rounds once on store; integer sums and products wrap like numpy's.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/reduction/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// y = min(max(x, min), max): when min > max every element becomes max (the
// spec's rule); NaN elements stay NaN. Bounds are the 'min'/'max' attributes
// before opset 11 and optional scalar inputs from 11; a missing bound is no bound.
void Clip(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool from_inputs = ctx.opset_version() >= 11;
  const Tensor* lo_t = from_inputs ? ctx.optional_input(1) : nullptr;
  const Tensor* hi_t = from_inputs ? ctx.optional_input(2) : nullptr;
  for (const Tensor* b : {lo_t, hi_t})
    if (b && (b->dtype() != x.dtype() || b->element_count() != 1))
      ctx.fail("min and max must be scalars of the input's element type, got " +
               std::string(dtype_name(b->dtype())) + shape_to_string(b->shape()));
  const bool has_lo = from_inputs ? lo_t != nullptr : ctx.has_attr("min");
  const bool has_hi = from_inputs ? hi_t != nullptr : ctx.has_attr("max");
  Tensor& y = output_over_input(ctx, 0, x.dtype(), x.shape());  // (element i read before it is written)
  dispatch<kNumeric>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    C lo{}, hi{};
    // A float attribute bound on an integer input: past the type's range it
    // saturates (a C++ conversion would be undefined), NaN bounds nothing.
    bool use_lo = has_lo, use_hi = has_hi;
    auto bound = [&](const char* name, bool& use) {
      const float f = ctx.attr_float(name, 0);
      if constexpr (std::is_integral_v<C>) {
        if (std::isnan(f)) use = false;
        return saturating_cast<C>(f);
      } else {
        return static_cast<C>(f);
      }
    };
    if (has_lo) lo = from_inputs ? get<S>(*lo_t, 0) : bound("min", use_lo);
    if (has_hi) hi = from_inputs ? get<S>(*hi_t, 0) : bound("max", use_hi);
    const std::byte* const px = x.raw();
    std::byte* const py = y.mutable_raw();
    for_chunks(x.element_count(), [&, lo, hi, use_lo, use_hi](uint64_t b, uint64_t e) {
      const std::byte* const in = px;  // locals (math/common.h's unary)
      std::byte* const out = py;
      for (uint64_t i = b; i < e; ++i) {
        C v = to_compute(load_at<S>(in, i));
        v = use_lo && v < lo ? lo : v;
        v = use_hi && v > hi ? hi : v;
        store_at<S>(out, i, from_compute<S>(v));
      }
    });
  });
}

}  // namespace onnxscope::ref
