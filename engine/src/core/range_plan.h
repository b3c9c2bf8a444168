// Range's length and steps, which the reference kernel and the CUDA engine
// share. Integer ranges: ceil((limit - start) / delta) elements (in 128 bits,
// so no difference overflows), values start + i * delta wrapping like the
// reference's fixed-width arithmetic. Real ranges, as numpy.arange computes
// them in double: the first two values start and start + delta, the rest
// start + i * (second - first). Problems are thrown as std::invalid_argument.
#pragma once

#include <cstdint>

namespace onnxscope::range {

struct Plan {
  int64_t count = 0;
  int64_t start = 0, delta = 0;            // integer ranges
  double first = 0, second = 0, step = 0;  // real ranges
  double real_delta = 0;
};

Plan integer_plan(int64_t start, int64_t limit, int64_t delta);
Plan real_plan(double start, double limit, double delta);

}  // namespace onnxscope::range
