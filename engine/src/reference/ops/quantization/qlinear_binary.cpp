// Reference kernels: com.microsoft QLinearAdd and QLinearMul (ONNX Runtime's
// contrib operators, which its QOperator quantizer writes for Add and Mul:
// residual connections, Hardswish, squeeze-excitation gates).
//
// Inputs A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale,
// C_zero_point (zero points optional: 0); A and B broadcast as numpy does;
// uint8 or int8, one type throughout; per-tensor parameters. In float, with
// ONNX Runtime's arithmetic (the scales folded into ratios first):
//   QLinearAdd: c = (a - za) (sa / sc) + (b - zb) (sb / sc)
//   QLinearMul: c = (a - za) (b - zb) (sa sb / sc)
//   C = saturate(round_half_even(c) + zc)
// A value there can differ from dequantize-add-quantize by one step where
// the float rounding of the ratios moves it across a half.
#include <string>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/math/common.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

template <typename T>
void qlinear_binary(KernelContext& ctx, bool mul) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const DataType type = a.dtype();
  if (b.dtype() != type)
    ctx.fail("B is " + std::string(dtype_name(b.dtype())) + ", A " + std::string(dtype_name(type)));
  const float sa = qlinear_scale(ctx, 1, "A_scale"), sb = qlinear_scale(ctx, 4, "B_scale");
  const float sc = qlinear_scale(ctx, 6, "C_scale");
  const T za = qlinear_zero_point<T>(ctx, 2, type, "A_zero_point");
  const T zb = qlinear_zero_point<T>(ctx, 5, type, "B_zero_point");
  const T zc = qlinear_zero_point<T>(ctx, 7, type, "C_zero_point");
  const Shape out = broadcast_shapes(ctx, a.shape(), b.shape());
  Tensor& c = ctx.allocate_output(0, type, out);
  const uint64_t n = c.element_count();
  if (n == 0) return;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = c.mutable_data<T>();
  const float ra = sa / sc, rb = sb / sc, rab = sa * sb / sc;
  // Rows of the output along which A and B each step by 0 or 1 (any
  // broadcast), split across the threads; each output computed alone.
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  const BroadcastRows rows(out, shapes);
  const uint64_t L = rows.row_length(), step_a = rows.step(0), step_b = rows.step(1);
  for_rows(n / L, L, [&](uint64_t r0, uint64_t r1) {
    uint64_t at[2];
    for (uint64_t r = r0; r < r1; ++r) {
      rows.row(r, at);
      const T* xa = pa + at[0];
      const T* xb = pb + at[1];
      T* y = pc + r * L;
      for (uint64_t k = 0; k < L; ++k) {
        const float qa = static_cast<float>(static_cast<int32_t>(xa[k * step_a]) - static_cast<int32_t>(za));
        const float qb = static_cast<float>(static_cast<int32_t>(xb[k * step_b]) - static_cast<int32_t>(zb));
        y[k] = quantize_float<T>(mul ? qa * qb * rab : qa * ra + qb * rb, zc);
      }
    }
  });
}

void run(KernelContext& ctx, bool mul) {
  const char* op = mul ? "QLinearMul" : "QLinearAdd";
  if (ctx.input_count() < 7 || ctx.input_count() > 8)
    ctx.fail(std::string(op) + " takes A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point: got " +
             std::to_string(ctx.input_count()) + " inputs");
  for (size_t i : {0u, 1u, 3u, 4u, 6u})
    if (!ctx.optional_input(i)) ctx.fail("input " + std::to_string(i) + " is missing (only zero points are optional)");
  switch (ctx.input(0).dtype()) {
    case DataType::Uint8: qlinear_binary<uint8_t>(ctx, mul); break;
    case DataType::Int8: qlinear_binary<int8_t>(ctx, mul); break;
    default: ctx.fail("A must be uint8 or int8, got " + std::string(dtype_name(ctx.input(0).dtype())));
  }
}

}  // namespace

void QLinearAdd(KernelContext& ctx) { run(ctx, false); }
void QLinearMul(KernelContext& ctx) { run(ctx, true); }

}  // namespace onnxscope::ref
