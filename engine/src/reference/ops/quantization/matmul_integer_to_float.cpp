// Reference kernels: com.microsoft MatMulIntegerToFloat and
// DynamicQuantizeMatMul (ONNX Runtime's contrib operators, which its graph
// optimizer makes of quantize_dynamic's DynamicQuantizeLinear, MatMulInteger,
// Cast and Mul, and saves with optimized_model_filepath).
//
//   MatMulIntegerToFloat(A, B, a_scale, b_scale, [a_zero_point], [b_zero_point], [bias])
//   DynamicQuantizeMatMul(A, B, b_scale, [b_zero_point], [bias])
//       = MatMulIntegerToFloat(DynamicQuantizeLinear(A), B, ...)
//   Y = float((A - a_zero_point) @ (B - b_zero_point)) * (a_scale * b_scale[n]) + bias[n]
//
// A and B uint8 or int8, A of any rank with B 2-D (numpy matmul's
// broadcasting otherwise), b_scale and b_zero_point a scalar or one per
// column of B, bias [N]. The products summed exactly in integers; the
// scale folded and applied in float, as ONNX Runtime does; A quantized as
// the reference's DynamicQuantizeLinear does (quantization/common.h).
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/math/common.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

// One value, or one per column of B (N of them), of a float tensor.
std::vector<float> per_column_floats(const KernelContext& ctx, const Tensor& t, int64_t n, const char* what) {
  if (t.dtype() != DataType::Float) ctx.fail(std::string(what) + " must be float");
  if (t.element_count() != 1 && (t.rank() != 1 || static_cast<int64_t>(t.element_count()) != n))
    ctx.fail(std::string(what) + " must be a scalar or have " + std::to_string(n) + " values (one per column of B), got shape " +
             shape_to_string(t.shape()));
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) v[static_cast<size_t>(j)] = t.data<float>()[t.element_count() == 1 ? 0 : j];
  return v;
}

// Y from A's integer values (zero point taken out), B and the float parameters.
void integer_matmul_to_float(KernelContext& ctx, std::vector<int64_t> av, const Shape& a_shape, float a_scale,
                             size_t b_index, size_t b_scale_index, size_t b_zp_index, size_t bias_index) {
  const Tensor& b = ctx.input(b_index);
  if (!is_int8(b.dtype())) ctx.fail("B must be int8 or uint8, got " + std::string(dtype_name(b.dtype())));
  if (b.rank() < 1) ctx.fail("B must have rank 1 or more");
  const int64_t n = b.rank() == 1 ? 1 : b.shape().back();
  const std::vector<float> b_scale = per_column_floats(ctx, ctx.input(b_scale_index), n, "b_scale");
  std::vector<int64_t> bv = math::values_as<int64_t>(b);
  const Tensor* bzp = ctx.optional_input(b_zp_index);
  if (bzp && bzp->dtype() != b.dtype()) ctx.fail("b_zero_point must have B's element type");
  subtract_zero_point(ctx, bv, b.shape(), bzp, false, "b_zero_point");
  const Tensor* bias = ctx.optional_input(bias_index);
  if (bias && (bias->dtype() != DataType::Float || bias->rank() != 1 || bias->shape()[0] != n))
    ctx.fail("bias must be float [" + std::to_string(n) + "], got " + shape_to_string(bias->shape()));
  Shape out_shape;
  const std::vector<int64_t> acc = math::matmul_values<int64_t>(ctx, av, a_shape, bv, b.shape(), out_shape);
  Tensor& y = ctx.allocate_output(0, DataType::Float, out_shape);
  float* out = y.mutable_data<float>();
  for (uint64_t i = 0; i < acc.size(); ++i) {
    const size_t j = static_cast<size_t>(i % static_cast<uint64_t>(n));
    float v = static_cast<float>(acc[i]) * (a_scale * b_scale[j]);
    if (bias) v += bias->data<float>()[j];
    out[i] = v;
  }
}

}  // namespace

void MatMulIntegerToFloat(KernelContext& ctx) {
  if (ctx.input_count() < 4 || ctx.input_count() > 7)
    ctx.fail("MatMulIntegerToFloat takes A, B, a_scale, b_scale, a_zero_point, b_zero_point, bias: got " +
             std::to_string(ctx.input_count()) + " inputs");
  const Tensor& a = ctx.input(0);
  if (!is_int8(a.dtype())) ctx.fail("A must be int8 or uint8, got " + std::string(dtype_name(a.dtype())));
  // a_scale: one float of any value. DynamicQuantizeLinear's scale of an
  // input holding an infinity is infinite, and the graph this operator
  // stands for (MatMulInteger, Cast, Mul by a_scale * b_scale) then gives
  // infinities and NaN, as onnxruntime does; refusing it would make the
  // fused graph fail where the unfused one runs.
  const Tensor& ast = ctx.input(2);
  if (ast.dtype() != DataType::Float || ast.element_count() != 1)
    ctx.fail("a_scale must be one float, got " + std::string(dtype_name(ast.dtype())) + " " + shape_to_string(ast.shape()));
  const float a_scale = ast.data<float>()[0];
  std::vector<int64_t> av = math::values_as<int64_t>(a);
  const Tensor* azp = ctx.optional_input(4);
  if (azp && (azp->dtype() != a.dtype() || azp->element_count() != 1))
    ctx.fail("a_zero_point must be one value of A's element type");
  subtract_zero_point(ctx, av, a.shape(), azp, true, "a_zero_point");
  integer_matmul_to_float(ctx, std::move(av), a.shape(), a_scale, 1, 3, 5, 6);
}

void DynamicQuantizeMatMul(KernelContext& ctx) {
  if (ctx.input_count() < 3 || ctx.input_count() > 5)
    ctx.fail("DynamicQuantizeMatMul takes A, B, b_scale, b_zero_point, bias: got " + std::to_string(ctx.input_count()) +
             " inputs");
  const Tensor& a = ctx.input(0);
  if (a.dtype() != DataType::Float) ctx.fail("A must be float, got " + std::string(dtype_name(a.dtype())));
  const DynamicQuant q = dynamic_quant_params(a.data<float>(), a.element_count());
  std::vector<int64_t> av(a.element_count());
  for (uint64_t i = 0; i < a.element_count(); ++i)
    av[i] = static_cast<int64_t>(dynamic_quantize(a.data<float>()[i], q)) - static_cast<int64_t>(q.zero_point);
  integer_matmul_to_float(ctx, std::move(av), a.shape(), q.scale, 1, 2, 3, 4);
}

}  // namespace onnxscope::ref
