#include "cpu/kernels/output.h"

#include <memory>

#include "cpu/arena.h"

namespace onnxscope::cpu {

Tensor& uninitialized_output(KernelContext& ctx, size_t i, DataType type, const Shape& shape) {
  auto count = checked_element_count(shape);
  auto bytes = count ? storage_bytes(type, *count) : std::nullopt;
  if (!bytes || type == DataType::String || *bytes > ctx.max_tensor_bytes())
    ctx.fail("output " + std::to_string(i) + " of shape " + shape_to_string(shape) + " is larger than the limit of " +
             std::to_string(ctx.max_tensor_bytes()) + " bytes");
  ctx.output(i) = Value(Tensor::from_buffer(type, shape, allocate_activation(static_cast<size_t>(*bytes))));
  return ctx.output(i).tensor();
}

}  // namespace onnxscope::cpu
