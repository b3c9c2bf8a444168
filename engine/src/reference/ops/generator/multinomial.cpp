// Reference kernel: Multinomial.
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

// Multinomial (7): sample_size class indices per batch row, drawn with
// probabilities softmax(row) (the input holds unnormalised log-probabilities).
void Multinomial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D [batch_size, class_size], got " + shape_to_string(x.shape()));
  const int64_t batch = x.shape()[0], classes = x.shape()[1];
  const int64_t samples = ctx.attr_int("sample_size", 1);
  if (samples < 0) ctx.fail("sample_size must be >= 0");
  const auto out_type = static_cast<DataType>(ctx.attr_int("dtype", 6));
  if (out_type != DataType::Int32 && out_type != DataType::Int64) ctx.fail("dtype must be int32 or int64");
  if (classes == 0 && batch > 0 && samples > 0) ctx.fail("class_size must be > 0");
  std::vector<double> logits(x.element_count());
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < x.element_count(); ++i) logits[i] = static_cast<double>(get<S>(x, i));
  });
  Rng rng(ctx);
  Tensor& y = ctx.allocate_output(0, out_type, {batch, samples});
  std::vector<double> cumulative(static_cast<size_t>(classes));
  for (int64_t b = 0; b < batch; ++b) {
    const double* row = logits.data() + b * classes;
    const double top = *std::max_element(row, row + classes);
    if (std::isnan(top) || std::isinf(top)) ctx.fail("log-probabilities must be finite");
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) cumulative[static_cast<size_t>(c)] = total += std::exp(row[c] - top);
    for (int64_t s = 0; s < samples; ++s) {
      const double target = rng.uniform() * total;
      auto it = std::upper_bound(cumulative.begin(), cumulative.end(), target);
      const int64_t k = std::min<int64_t>(it - cumulative.begin(), classes - 1);
      const auto i = static_cast<uint64_t>(b * samples + s);
      if (out_type == DataType::Int32) store<int32_t>(y, i, static_cast<int32_t>(k));
      else store<int64_t>(y, i, k);
    }
  }
}

}  // namespace onnxscope::ref
