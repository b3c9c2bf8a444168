// Helpers shared by the reference's string kernels.
#pragma once

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
#include <re2/re2.h>
#include <string>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

inline const Tensor& string_input(KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (!t.is_string()) ctx.fail("input " + std::to_string(i) + " must be a string tensor, got " + std::string(dtype_name(t.dtype())));
  return t;
}

}  // namespace onnxscope::ref
