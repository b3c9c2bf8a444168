// The largest or smallest element of a contiguous float32 row (reduce.cpp):
// ReduceMax / ReduceMin rows and ArgMax / ArgMin's first pass.
#pragma once

#include <cstdint>

namespace onnxscope::cpu {

// max: the largest, else the smallest of x[0 .. n), n >= 1; NaN when any
// element is NaN. AVX-512 or AVX2 where the CPU has them.
float row_extreme(const float* x, int64_t n, bool max);

}  // namespace onnxscope::cpu
