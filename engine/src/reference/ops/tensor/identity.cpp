// Reference kernel: Identity (tensors, sequences and optionals).
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void Identity(KernelContext& ctx) {
  // Tensors, sequences and optionals alike: the value is passed on unchanged.
  const Value* v = ctx.input_value(0);
  if (!v) ctx.fail("input 0 is required but missing");
  ctx.set_output(0, *v);
}

}  // namespace onnxscope::ref
