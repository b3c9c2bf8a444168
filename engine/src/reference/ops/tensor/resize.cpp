// Reference kernels: Resize and Upsample (one resampling kernel).
//
// Interpolation weights and sums are computed in double (float16/float
// inputs included) and rounded once on store.
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "core/nms_math.h"
#include "core/roi_align_math.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"
#include "core/resize_plan.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using nn::Counter;

using resize::AxisTaps;
using resize::Spec;
namespace {

// Resizes input 0 into output 0 according to `sp` (scales and out filled in).
void resample(KernelContext& ctx, const Spec& sp) {
  const Tensor& x = ctx.input(0);
  const Shape& xs = x.shape();
  const size_t rank = xs.size();
  for (size_t d = 0; d < rank; ++d)
    if (sp.out[d] < 0) ctx.fail("the output shape " + shape_to_string(sp.out) + " is negative");
  Tensor& y = ctx.allocate_output(0, x.dtype(), sp.out);
  if (y.element_count() == 0) return;
  if (x.element_count() == 0) ctx.fail("cannot resize an empty input to a non-empty output");
  if (sp.mode == "nearest") {
    // Each output element copies one input element (any element type).
    std::vector<std::vector<int64_t>> pick(rank);  // -1: outside the crop box
    for (size_t d = 0; d < rank; ++d) pick[d] = resize::nearest_picks(sp, d, xs[d], sp.out[d]);
    const auto in_strides = strides_of(xs);
    const bool is_str = x.is_string();
    const bool numeric = is_real_numeric(x.dtype());
    if (is_packed_dtype(x.dtype())) ctx.fail("does not support element type " + std::string(dtype_name(x.dtype())));
    const uint64_t elem = is_str ? 0 : *storage_bytes(x.dtype(), 1);
    StringBudget budget(&ctx);
    uint64_t o = 0;
    for (Counter c(sp.out); c.valid(); c.next(), ++o) {
      int64_t src = 0;
      bool outside = false;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t p = pick[d][c.index[d]];
        if (p < 0) outside = true;
        src += p * in_strides[d];
      }
      if (outside) {
        // Numeric types get extrapolation_value; others keep their zero value ("" / false / 0).
        if (numeric)
          dispatch<kFloats | kInts>(ctx, x.dtype(), [&](auto tag) {
            put_saturated<typename decltype(tag)::type>(y, o, sp.extrapolation);
          });
      } else if (is_str) {
        budget.add(x.strings()[static_cast<uint64_t>(src)]);
        y.mutable_strings()[o] = x.strings()[static_cast<uint64_t>(src)];
      } else {
        std::memcpy(y.mutable_raw() + o * elem, x.raw() + static_cast<uint64_t>(src) * elem, elem);
      }
    }
    return;
  }
  dispatch<kFloats | kInts>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    // Separable: interpolate one axis at a time, in double. Each step's
    // buffer is held to the tensor limit (sizes of [4194304, 1] from a
    // [1, 4096] input would make 128 GiB in the first step).
    auto check_step = [&](const Shape& s) {
      auto n = checked_element_count(s);
      if (!n || *n > ctx.max_tensor_bytes() / sizeof(double))
        ctx.fail("resizing one axis at a time makes an intermediate of shape " + shape_to_string(s) +
                 " in double, more than the tensor limit of " + std::to_string(ctx.max_tensor_bytes()) + " bytes");
    };
    check_step(xs);
    std::vector<double> cur = real_values(x);
    Shape cur_shape = xs;
    for (size_t d = 0; d < rank; ++d) {
      if (resize::axis_unchanged(sp, d, cur_shape[d])) continue;
      AxisTaps t = resize::plan_axis(sp, d, cur_shape[d], sp.out[d]);
      const int64_t outer = nn::product(Shape(cur_shape.begin(), cur_shape.begin() + d));
      const int64_t inner = nn::product(cur_shape, d + 1);
      const int64_t in = cur_shape[d], out = sp.out[d];
      Shape step = cur_shape;
      step[d] = out;
      check_step(step);
      std::vector<double> next(static_cast<size_t>(outer * out * inner));
      for (int64_t a = 0; a < outer; ++a)
        for (int64_t o = 0; o < out; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double v = 0;
            if (t.outside[o]) {
              v = sp.extrapolation;
            } else {
              for (int64_t j = 0; j < t.n; ++j) v += t.w[o * t.n + j] * cur[(a * in + t.idx[o * t.n + j]) * inner + i];
            }
            next[(a * out + o) * inner + i] = v;
          }
      cur.swap(next);
      cur_shape[d] = out;
    }
    for (uint64_t i = 0; i < cur.size(); ++i) put_saturated<S>(y, i, cur[i]);
  });
}

std::vector<double> float_values(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (!dtype_info(t.dtype()).is_float || dtype_info(t.dtype()).is_complex)
    ctx.fail(std::string(what) + " must be a float tensor");
  if (t.rank() > 1) ctx.fail(std::string(what) + " must be 1-D");
  return real_values(t);
}

// The spec's problems (std::invalid_argument) fail the node.
template <class F>
Spec checked_spec(const KernelContext& ctx, F&& make) {
  try {
    return make();
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
}

}  // namespace

void Resize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  resize::Request r = resize::request_of(ctx.node(), ctx.opset_version());
  if (r.opset < 11) {  // X, scales
    r.scales = float_values(ctx, ctx.input(1), "scales");
  } else {  // X, roi, scales, sizes
    if (const Tensor* s = ctx.optional_input(2)) r.scales = float_values(ctx, *s, "scales");
    if (const Tensor* s = ctx.optional_input(3)) r.sizes = int_values(ctx, *s);
    if (const Tensor* t = ctx.optional_input(1)) r.roi = float_values(ctx, *t, "roi");
  }
  resample(ctx, checked_spec(ctx, [&] { return resize::resize_spec(r, x.shape()); }));
}

// Upsample (deprecated): asymmetric coordinates; nearest takes floor when
// enlarging (ceil when shrinking), linear interpolates.
void Upsample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<double> scales;
  const int64_t opset = ctx.opset_version();
  if (opset >= 9) {
    scales = float_values(ctx, ctx.input(1), "scales");
  } else if (opset >= 7) {
    for (float f : ctx.attr_floats("scales")) scales.push_back(f);
  } else {
    if (x.rank() != 4) ctx.fail("Upsample-1 needs a 4-D input");
    scales = {1.0, 1.0, ctx.attr_float("height_scale", 1.0f), ctx.attr_float("width_scale", 1.0f)};
  }
  const std::string mode = ctx.attr_string("mode", "nearest");
  resample(ctx, checked_spec(ctx, [&] { return resize::upsample_spec(mode, scales, x.shape()); }));
}

}  // namespace onnxscope::ref
