// Reference kernels: comparisons with broadcasting (Equal on strings too).
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

void Equal(KernelContext& c) { compare<kNumeric | kBool>(c, [](auto x, auto y) { return x == y; }); }
void Less(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x < y; }); }
void LessOrEqual(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x <= y; }); }
void Greater(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x > y; }); }
void GreaterOrEqual(KernelContext& c) { compare<kNumeric>(c, [](auto x, auto y) { return x >= y; }); }

// String equality (Equal accepts strings from opset 19).
void EqualStrings(KernelContext& c) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  Shape shape = broadcast_shapes(c, shapes);
  Tensor& z = c.allocate_output(0, DataType::Bool, shape);
  BroadcastIndex bi(shape, shapes);
  for (uint64_t i = 0; i < z.element_count(); ++i, bi.next())
    store<bool>(z, i, a.strings()[bi.offsets()[0]] == b.strings()[bi.offsets()[1]]);
}

bool inputs_are_strings(const KernelContext& c) {
  const Tensor* a = c.optional_input(0);
  return a && a->is_string();
}

}  // namespace onnxscope::ref
