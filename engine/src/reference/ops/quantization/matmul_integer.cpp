// Reference kernel: MatMulInteger.
//
// Float inputs (float16, bfloat16, float, double) are widened to double and
// products are accumulated in double, then rounded once on store. Integer
// products are accumulated in 64-bit two's complement arithmetic, so results
// wrap like numpy's fixed-width integer matmul.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using math::matmul_values;
using math::values_as;

void MatMulInteger(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!is_int8(a.dtype()) || !is_int8(b.dtype())) ctx.fail("A and B must be int8 or uint8");
  std::vector<int64_t> av = values_as<int64_t>(a), bv = values_as<int64_t>(b);
  subtract_zero_point(ctx, av, a.shape(), ctx.optional_input(2), true, "a_zero_point");
  subtract_zero_point(ctx, bv, b.shape(), ctx.optional_input(3), false, "b_zero_point");
  Shape shape;
  std::vector<int64_t> y = matmul_values<int64_t>(ctx, av, a.shape(), bv, b.shape(), shape);
  Tensor& out = ctx.allocate_output(0, DataType::Int32, shape);
  int32_t* const po = out.mutable_data<int32_t>();  // fetched once: per element it is a call through the buffer
  for (uint64_t i = 0; i < y.size(); ++i) po[i] = static_cast<int32_t>(y[i]);
}

}  // namespace onnxscope::ref
