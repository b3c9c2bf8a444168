// Reference kernel: ai.onnx.ml OneHotEncoder.
//
// Where the spec leaves a detail open this kernel follows onnxruntime, the
// implementation these operators were written for (each such place says so).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/ml/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Output shape: the input's shape plus a last axis of the category count.
// Numeric inputs are cast to int64 (truncation) before the lookup.
void OneHotEncoder(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool has_int = ctx.has_attr("cats_int64s"), has_str = ctx.has_attr("cats_strings");
  if (has_int == has_str) ctx.fail("exactly one of cats_int64s and cats_strings must be given");
  const bool zeros = ctx.attr_int("zeros", 1) != 0;
  std::map<int64_t, int64_t> int_pos;
  std::map<std::string, int64_t> str_pos;
  int64_t n_cats = 0;
  if (has_int) {
    const std::vector<int64_t> c = ctx.attr_ints("cats_int64s");
    n_cats = static_cast<int64_t>(c.size());
    for (size_t i = c.size(); i-- > 0;) int_pos[c[i]] = static_cast<int64_t>(i);
  } else {
    const std::vector<std::string> c = ctx.attr_strings("cats_strings");
    n_cats = static_cast<int64_t>(c.size());
    for (size_t i = c.size(); i-- > 0;) str_pos[c[i]] = static_cast<int64_t>(i);
  }
  if (x.is_string() != has_str)
    ctx.fail(has_str ? "cats_strings needs a string input" : "cats_int64s needs a numeric input");
  std::vector<double> v;
  if (!x.is_string()) v = ml_input_values(ctx, x);
  Shape out_shape = x.shape();
  out_shape.push_back(n_cats);
  Tensor& y = ctx.allocate_output(0, DataType::Float, out_shape);
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    int64_t pos = -1;
    if (has_str) {
      const auto it = str_pos.find(x.strings()[i]);
      if (it != str_pos.end()) pos = it->second;
    } else if (std::isfinite(v[i]) && std::abs(v[i]) < 9.2e18) {
      const auto it = int_pos.find(static_cast<int64_t>(v[i]));
      if (it != int_pos.end()) pos = it->second;
    }
    if (pos >= 0) store<float>(y, i * static_cast<uint64_t>(n_cats) + static_cast<uint64_t>(pos), 1.0f);
    else if (!zeros) ctx.fail("input element " + std::to_string(i) + " is not one of the categories (zeros=0)");
  }
}

}  // namespace onnxscope::ref
