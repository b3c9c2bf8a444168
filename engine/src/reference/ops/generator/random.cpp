// Reference kernels: RandomNormal, RandomUniform and their *Like forms (one generator).
//
// Random ops are deterministic: the generator is seeded from the node's
// 'seed' attribute when given, else from ctx.seed(), mixed with the node's
// first output name so that two unseeded nodes do not draw the same stream.
// Their values cannot match another implementation's stream.
#include <algorithm>
#include <bit>
#include <cctype>
#include <clocale>
#include <cmath>
#include <cwctype>
#include <limits>
#include <locale.h>
#include <map>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <re2/re2.h>

#include "reference/kernel_util.h"
#include "reference/ops/generator/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// The float output type named by the 'dtype' attribute, or `fallback` when absent.
DataType float_dtype_attr(KernelContext& ctx, DataType fallback) {
  DataType t = fallback;
  if (ctx.has_attr("dtype")) {
    const int64_t v = ctx.attr_int("dtype", 0);
    if (v < 0 || v > kMaxDataType || !is_known_dtype(static_cast<int32_t>(v))) ctx.fail("unknown dtype " + std::to_string(v));
    t = static_cast<DataType>(v);
  }
  if (t != DataType::Float && t != DataType::Double && t != DataType::Float16 && t != DataType::BFloat16)
    ctx.fail("output type must be float16, bfloat16, float or double, got " + std::string(dtype_name(t)));
  if (t == DataType::BFloat16 && ctx.opset_version() < 22) ctx.fail("bfloat16 output needs opset 22");
  return t;
}

Shape shape_attr(KernelContext& ctx) {
  if (!ctx.has_attr("shape")) ctx.fail("missing required attribute 'shape'");
  Shape s = ctx.attr_ints("shape");
  for (int64_t d : s)
    if (d < 0) ctx.fail("shape must not have negative dims, got " + shape_to_string(s));
  return s;
}

// Fills output 0 of type `t` and shape `s` with draw() values.
template <typename Draw>
void fill_random(KernelContext& ctx, DataType t, Shape s, Draw draw) {
  Tensor& y = ctx.allocate_output(0, t, std::move(s));
  dispatch<kFloats>(ctx, t, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.element_count(); ++i) put<S>(y, i, static_cast<compute_t<S>>(draw()));
  });
}

void random_normal(KernelContext& ctx, DataType t, Shape s) {
  Rng rng(ctx);
  const double mean = ctx.attr_float("mean", 0.0f), scale = ctx.attr_float("scale", 1.0f);
  fill_random(ctx, t, std::move(s), [&] { return mean + scale * rng.normal(); });
}

void random_uniform(KernelContext& ctx, DataType t, Shape s) {
  Rng rng(ctx);
  const double low = ctx.attr_float("low", 0.0f), high = ctx.attr_float("high", 1.0f);
  fill_random(ctx, t, std::move(s), [&] { return low + (high - low) * rng.uniform(); });
}

}  // namespace

void RandomNormal(KernelContext& ctx) { random_normal(ctx, float_dtype_attr(ctx, DataType::Float), shape_attr(ctx)); }
void RandomUniform(KernelContext& ctx) { random_uniform(ctx, float_dtype_attr(ctx, DataType::Float), shape_attr(ctx)); }
void RandomNormalLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  random_normal(ctx, float_dtype_attr(ctx, x.dtype()), x.shape());
}

void RandomUniformLike(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  random_uniform(ctx, float_dtype_attr(ctx, x.dtype()), x.shape());
}

}  // namespace onnxscope::ref
