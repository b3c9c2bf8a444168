// Reference kernel: Size.
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

void Size(KernelContext& ctx) {
  store<int64_t>(ctx.allocate_output(0, DataType::Int64, {}), 0, static_cast<int64_t>(ctx.input(0).element_count()));
}

}  // namespace onnxscope::ref
