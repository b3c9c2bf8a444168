// Reference kernel: StringConcat.
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
#include "reference/ops/text/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void StringConcat(KernelContext& ctx) {
  const Tensor& a = string_input(ctx, 0);
  const Tensor& b = string_input(ctx, 1);
  Shape out_shape = broadcast_shapes(ctx, a.shape(), b.shape());
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  BroadcastIndex bi(out_shape, shapes);
  const uint64_t n = checked_element_count(out_shape).value_or(0);
  if (n > ctx.max_tensor_bytes() / sizeof(std::string))
    ctx.fail("the output of shape " + shape_to_string(out_shape) + " is larger than the tensor limit");
  std::vector<std::string> out(n);
  StringBudget budget(&ctx);
  for (uint64_t i = 0; i < n; ++i, bi.next()) {
    out[i] = a.strings()[bi.offsets()[0]] + b.strings()[bi.offsets()[1]];
    budget.add(out[i]);
  }
  ctx.set_output(0, Tensor::from_strings(std::move(out_shape), std::move(out)));
}

}  // namespace onnxscope::ref
