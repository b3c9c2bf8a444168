// Reference kernels: logical operators on bool tensors, with broadcasting.
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

void Not(KernelContext& c) { unary<kBool>(c, [](auto v) { return !v; }); }
void And(KernelContext& c) { compare<kBool>(c, [](auto x, auto y) { return x && y; }); }
void Or(KernelContext& c) { compare<kBool>(c, [](auto x, auto y) { return x || y; }); }
void Xor(KernelContext& c) { compare<kBool>(c, [](auto x, auto y) { return x != y; }); }

}  // namespace onnxscope::ref
