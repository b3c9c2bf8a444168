// Reference kernel: RegexFullMatch.
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

void RegexFullMatch(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  const std::string pattern = ctx.attr_string("pattern", "");
  const RE2 re(pattern, RE2::Quiet);
  if (!re.ok()) ctx.fail("invalid RE2 pattern '" + pattern + "': " + re.error());
  Tensor& y = ctx.allocate_output(0, DataType::Bool, x.shape());
  for (uint64_t i = 0; i < x.element_count(); ++i) store<bool>(y, i, RE2::FullMatch(x.strings()[i], re));
}

}  // namespace onnxscope::ref
