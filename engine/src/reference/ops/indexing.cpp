// Reference kernels: indexing and search: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TensorScatter, OneHot, NonZero, Compress, ReverseSequence, Unique, TopK, ArgMax, ArgMin, CumSum, CumProd.
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

void register_indexing_ops(KernelRegistry& r) { (void)r; }

}  // namespace onnxscope::ref
