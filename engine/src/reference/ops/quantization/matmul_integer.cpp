// Reference kernel: MatMulInteger: (A - a_zero_point) @ (B - b_zero_point)
// with numpy matmul's shapes, 8-bit operands, int32 Y. The sums are exact
// integers (quantization/integer_product.h: the operands read where they
// lie, no widened copy), then converted to int32 as the int64 sums were
// (wrapping past int32, as numpy's fixed-width conversion).
#include <string>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/math/common.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/quantization/integer_product.h"

namespace onnxscope::ref {

void MatMulInteger(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (!is_int8(a.dtype()) || !is_int8(b.dtype())) ctx.fail("A and B must be int8 or uint8");
  const Tensor* azp = ctx.optional_input(2);
  const Tensor* bzp = ctx.optional_input(3);
  if (azp && azp->element_count() > 0 && azp->dtype() != a.dtype())
    ctx.fail("a_zero_point must have A's element type (" + std::string(dtype_name(a.dtype())) + "), got " + std::string(dtype_name(azp->dtype())));
  if (bzp && bzp->element_count() > 0 && bzp->dtype() != b.dtype())
    ctx.fail("b_zero_point must have B's element type (" + std::string(dtype_name(b.dtype())) + "), got " + std::string(dtype_name(bzp->dtype())));
  const ZeroPoints za = zero_points_of(ctx, azp, a.shape(), true, "a_zero_point");
  const ZeroPoints zb = zero_points_of(ctx, bzp, b.shape(), false, "b_zero_point");
  const math::MatMulShape ms = math::matmul_shape(ctx, a.shape(), b.shape());
  Tensor& out = ctx.allocate_output(0, DataType::Int32, ms.out);
  int32_t* const po = out.mutable_data<int32_t>();  // fetched once: per element it is a call through the buffer
  const int64_t M = ms.M, N = ms.N;
  integer_matmul8(ms, reinterpret_cast<const uint8_t*>(a.raw()), a.dtype() == DataType::Int8, za,
                  reinterpret_cast<const uint8_t*>(b.raw()), b.dtype() == DataType::Int8, zb,
                  [&](uint64_t bt, int64_t i, int64_t j0, const double* v, int64_t n) {
                    int32_t* o = po + bt * static_cast<uint64_t>(M * N) + static_cast<uint64_t>(i * N + j0);
                    for (int64_t k = 0; k < n; ++k) o[k] = static_cast<int32_t>(static_cast<int64_t>(v[k]));
                  });
}

}  // namespace onnxscope::ref
