// Reference kernel: Mod (fmod and the integer Python-style remainder).
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

void Mod(KernelContext& c) {
  const bool fmod = c.attr_int("fmod", 0) != 0;
  binary<kNumeric>(c, [&](auto x, auto y) {
    using T = decltype(x);
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) c.fail("integer modulo by zero");
      if constexpr (std::is_signed_v<T>)
        if (y == T(-1)) return T(0);  // avoids INT_MIN % -1 overflow; the result is 0 anyway
      if (fmod) return T(x % y);
      T r = T(x % y);
      if constexpr (std::is_signed_v<T>)
        if (r != 0 && ((r < 0) != (y < 0))) r = T(r + y);  // sign follows the divisor
      return r;
    } else {
      T r = std::fmod(x, y);
      if (fmod) return r;
      // fmod=0 on floats (defined from opset 28): A - floor(A/B)*B, sign of B,
      // computed from fmod as numpy does so the special cases come out right.
      if (r != 0) {
        if ((y < 0) != (r < 0)) r += y;
      } else {
        r = std::copysign(T(0), y);
      }
      return r;
    }
  });
}

}  // namespace onnxscope::ref
