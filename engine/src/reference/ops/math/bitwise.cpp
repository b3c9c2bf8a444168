// Reference kernels: bitwise operators on integer tensors, with broadcasting.
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

void BitwiseNot(KernelContext& c) { unary<kInts>(c, [](auto v) { return decltype(v)(~v); }); }
void BitwiseAnd(KernelContext& c) { binary<kInts>(c, [](auto x, auto y) { return decltype(x)(x & y); }); }
void BitwiseOr(KernelContext& c) { binary<kInts>(c, [](auto x, auto y) { return decltype(x)(x | y); }); }
void BitwiseXor(KernelContext& c) { binary<kInts>(c, [](auto x, auto y) { return decltype(x)(x ^ y); }); }

}  // namespace onnxscope::ref
