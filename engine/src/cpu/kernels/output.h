// Output tensors of the CPU kernels that write every element: allocated
// without the zero fill of KernelContext::allocate_output (that extra pass
// over the memory costs as much as a cheap elementwise kernel itself), with
// the same size checks, from the run's activation arena (cpu/arena.h) when
// there is one. Fixed-width element types only.
#pragma once

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

Tensor& uninitialized_output(KernelContext& ctx, size_t i, DataType type, const Shape& shape);

}  // namespace onnxscope::cpu
