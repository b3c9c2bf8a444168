// The one op table of the reference interpreter: every operator family
// registers its kernels here, in one place, so coverage is easy to audit.
#include "onnxscope/reference.h"
#include "reference/ops/ops.h"

namespace onnxscope {

const KernelRegistry& reference_kernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    ref::register_elementwise_ops(r);
    ref::register_tensor_shape_ops(r);
    ref::register_indexing_ops(r);
    ref::register_reduce_norm_ops(r);
    ref::register_nn_ops(r);
    ref::register_sequence_models_ops(r);
    ref::register_control_flow_ops(r);
    ref::register_text_random_ml_ops(r);
    ref::register_gradient_ops(r);
    ref::register_ml_classic_ops(r);
    ref::register_nn_roi_pool_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace onnxscope
