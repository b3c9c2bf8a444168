// Reference kernel: ai.onnx.ml CategoryMapper.
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

// strings -> int64 (default_int64) or int64 -> strings (default_string), by the
// pairs (cats_strings[i], cats_int64s[i]); for a repeated key the last pair wins.
void CategoryMapper(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<std::string> strs = ctx.attr_strings("cats_strings");
  const std::vector<int64_t> ints = ctx.attr_ints("cats_int64s");
  if (strs.size() != ints.size())
    ctx.fail("cats_strings and cats_int64s must have the same length (" + std::to_string(strs.size()) + " vs " +
             std::to_string(ints.size()) + ")");
  if (x.is_string()) {
    std::map<std::string, int64_t> index;
    for (size_t i = 0; i < strs.size(); ++i) index[strs[i]] = ints[i];
    const int64_t fallback = ctx.attr_int("default_int64", -1);
    Tensor& y = ctx.allocate_output(0, DataType::Int64, x.shape());
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(x.strings()[i]);
      store<int64_t>(y, i, it == index.end() ? fallback : it->second);
    }
  } else if (x.dtype() == DataType::Int64) {
    std::map<int64_t, std::string> index;
    for (size_t i = 0; i < ints.size(); ++i) index[ints[i]] = strs[i];
    const std::string fallback = ctx.attr_string("default_string", "_Unused");
    Tensor& y = allocate_strings(ctx, 0, x.shape());
    StringBudget budget(&ctx);
    for (uint64_t i = 0; i < x.element_count(); ++i) {
      const auto it = index.find(load<int64_t>(x, i));
      const std::string& s = it == index.end() ? fallback : it->second;
      budget.add(s);
      y.mutable_strings()[i] = s;
    }
  } else {
    ctx.fail("input must be string or int64, got " + std::string(dtype_name(x.dtype())));
  }
}

}  // namespace onnxscope::ref
