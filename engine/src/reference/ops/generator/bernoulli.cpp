// Reference kernel: Bernoulli.
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

// Bernoulli (15): 1 with probability p, else 0; output type from 'dtype' or the input.
void Bernoulli(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DataType out_type = x.dtype();
  if (ctx.has_attr("dtype")) {
    const int64_t v = ctx.attr_int("dtype", 0);
    if (v < 0 || v > kMaxDataType || !is_known_dtype(static_cast<int32_t>(v))) ctx.fail("unknown dtype " + std::to_string(v));
    out_type = static_cast<DataType>(v);
  }
  std::vector<double> p(x.element_count());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) p[i] = static_cast<double>(get<S>(x, i));
  });
  for (double v : p)
    if (!(v >= 0.0 && v <= 1.0)) ctx.fail("probabilities must lie in [0, 1], got " + std::to_string(v));
  Rng rng(ctx);
  Tensor& y = ctx.allocate_output(0, out_type, x.shape());
  dispatch<kFloats | kInts | kBool>(ctx, out_type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.element_count(); ++i)
      put<S>(y, i, static_cast<compute_t<S>>(rng.uniform() < p[i] ? 1 : 0));
  });
}

}  // namespace onnxscope::ref
