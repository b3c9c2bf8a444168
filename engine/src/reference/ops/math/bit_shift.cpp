// Reference kernel: BitShift.
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void BitShift(KernelContext& c) {
  const std::string dir = c.attr_string("direction");
  if (dir != "LEFT" && dir != "RIGHT") c.fail("direction must be LEFT or RIGHT, got '" + dir + "'");
  const bool right = dir == "RIGHT";
  binary<kInts>(c, [&](auto x, auto y) {
    using T = decltype(x);
    using U = std::make_unsigned_t<T>;
    // Shifts by a negative amount or by the width or more give what sign
    // extension alone produces (opset 28 spells this out; C++ leaves it undefined).
    bool out_of_range = static_cast<uint64_t>(y) >= sizeof(T) * 8;
    if constexpr (std::is_signed_v<T>) out_of_range = out_of_range || y < 0;
    if (right) {
      if (out_of_range) return (std::is_signed_v<T> && x < 0) ? T(-1) : T(0);
      return T(x >> y);  // arithmetic for signed types (C++20)
    }
    if (out_of_range) return T(0);
    return T(static_cast<U>(static_cast<U>(x) << y));
  });
}

}  // namespace onnxscope::ref
