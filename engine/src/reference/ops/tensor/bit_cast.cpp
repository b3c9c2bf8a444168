// Reference kernel: BitCast.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void BitCast(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const DataType to = target_type(ctx);
  if (x.is_string() || to == DataType::String) ctx.fail("BitCast does not support strings");
  if (dtype_info(x.dtype()).bits != dtype_info(to).bits)
    ctx.fail("BitCast from " + std::string(dtype_name(x.dtype())) + " (" + std::to_string(dtype_info(x.dtype()).bits) +
             " bits) to " + std::string(dtype_name(to)) + " (" + std::to_string(dtype_info(to).bits) +
             " bits): bit widths differ");
  // Same bits, same little-endian layout: the bytes are reused as they are.
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  if (x.byte_size() > 0) std::memcpy(y.mutable_raw(), x.raw(), x.byte_size());
}

}  // namespace onnxscope::ref
