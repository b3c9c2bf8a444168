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
#include "reference/ops/quantization/integer_product.h"

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

// Y from A's 8-bit values and zero point, B and the float parameters: the
// exact integer sums (integer_product.h), each scaled and biased in float.
void integer_matmul_to_float(KernelContext& ctx, const uint8_t* a, bool a_signed, const ZeroPoints& za,
                             const Shape& a_shape, float a_scale, size_t b_index, size_t b_scale_index,
                             size_t b_zp_index, size_t bias_index) {
  const Tensor& b = ctx.input(b_index);
  if (!is_int8(b.dtype())) ctx.fail("B must be int8 or uint8, got " + std::string(dtype_name(b.dtype())));
  if (b.rank() < 1) ctx.fail("B must have rank 1 or more");
  const int64_t n = b.rank() == 1 ? 1 : b.shape().back();
  const std::vector<float> b_scale = per_column_floats(ctx, ctx.input(b_scale_index), n, "b_scale");
  const Tensor* bzp = ctx.optional_input(b_zp_index);
  if (bzp && bzp->dtype() != b.dtype()) ctx.fail("b_zero_point must have B's element type");
  const ZeroPoints zb = zero_points_of(ctx, bzp, b.shape(), false, "b_zero_point");
  const Tensor* bias = ctx.optional_input(bias_index);
  if (bias && (bias->dtype() != DataType::Float || bias->rank() != 1 || bias->shape()[0] != n))
    ctx.fail("bias must be float [" + std::to_string(n) + "], got " + shape_to_string(bias->shape()));
  const math::MatMulShape ms = math::matmul_shape(ctx, a_shape, b.shape());
  Tensor& y = ctx.allocate_output(0, DataType::Float, ms.out);
  float* const out = y.mutable_data<float>();
  const float* const bias_v = bias ? bias->data<float>() : nullptr;
  const int64_t M = ms.M, N = ms.N;
  integer_matmul8(ms, a, a_signed, za, reinterpret_cast<const uint8_t*>(b.raw()), b.dtype() == DataType::Int8, zb,
                  [&](uint64_t bt, int64_t i, int64_t j0, const double* v, int64_t count) {
                    float* o = out + bt * static_cast<uint64_t>(M * N) + static_cast<uint64_t>(i * N + j0);
                    for (int64_t k = 0; k < count; ++k) {
                      const size_t j = static_cast<size_t>(j0 + k);
                      float r = static_cast<float>(v[k]) * (a_scale * b_scale[j]);  // the int64 sum's float
                      if (bias_v) r += bias_v[j];
                      o[k] = r;
                    }
                  });
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
  const Tensor* azp = ctx.optional_input(4);
  if (azp && (azp->dtype() != a.dtype() || azp->element_count() != 1))
    ctx.fail("a_zero_point must be one value of A's element type");
  const ZeroPoints za = zero_points_of(ctx, azp, a.shape(), true, "a_zero_point");
  integer_matmul_to_float(ctx, reinterpret_cast<const uint8_t*>(a.raw()), a.dtype() == DataType::Int8, za, a.shape(),
                          a_scale, 1, 3, 5, 6);
}

void DynamicQuantizeMatMul(KernelContext& ctx) {
  if (ctx.input_count() < 3 || ctx.input_count() > 5)
    ctx.fail("DynamicQuantizeMatMul takes A, B, b_scale, b_zero_point, bias: got " + std::to_string(ctx.input_count()) +
             " inputs");
  const Tensor& a = ctx.input(0);
  if (a.dtype() != DataType::Float) ctx.fail("A must be float, got " + std::string(dtype_name(a.dtype())));
  const DynamicQuant q = dynamic_quant_params(a.data<float>(), a.element_count());
  // A quantized as DynamicQuantizeLinear's uint8 output would hold it (a
  // byte a value: a quarter of A).
  std::vector<uint8_t> aq(a.element_count());
  const float* pa = a.data<float>();  // fetched once (a.data() an element was a call and a type check)
  for_chunks(a.element_count(), [&](uint64_t lo, uint64_t hi) {  // each value alone
    for (uint64_t i = lo; i < hi; ++i) aq[i] = dynamic_quantize(pa[i], q);
  });
  ZeroPoints za;
  za.one = static_cast<int64_t>(q.zero_point);
  integer_matmul_to_float(ctx, aq.data(), false, za, a.shape(), q.scale, 1, 2, 3, 4);
}

}  // namespace onnxscope::ref
