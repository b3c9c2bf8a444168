// Reference kernel: QLinearMatMul.
//
// 8-bit operands: the exact integer sums of (a - a_zp)(b - b_zp)
// (quantization/integer_product.h), then requantized. FP8 operands (opset
// 21) are widened to double, their products accumulated in double.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/quantization/common.h"
#include "reference/ops/quantization/integer_product.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using math::matmul_values;
using math::values_as;

// QLinearMatMul: y = saturate(round((a - a_zp) @ (b - b_zp) * a_scale * b_scale / y_scale) + y_zp).
// int8/uint8 and (opset 21) the FP8 formats; FP8 values are subtracted and
// multiplied as reals, and the output is saturated on conversion.
void QLinearMatMul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor& yzp = ctx.input(7);
  auto scalar = [&](size_t i, const char* what) {
    const Tensor& t = ctx.input(i);
    if (t.element_count() != 1) ctx.fail(std::string(what) + " must be a scalar (per-tensor quantization)");
    return static_cast<float>(t.element_as_double(0));
  };
  const float a_scale = scalar(1, "a_scale"), b_scale = scalar(4, "b_scale"), y_scale = scalar(6, "y_scale");
  if (yzp.element_count() != 1) ctx.fail("y_zero_point must be a scalar");
  if (ctx.input(2).element_count() != 1 || ctx.input(5).element_count() != 1)
    ctx.fail("a_zero_point and b_zero_point must be scalars");
  const double mult = static_cast<float>(a_scale * b_scale / y_scale);  // formed in float, like the scales
  Shape shape;
  std::vector<double> y;
  if (is_int8(a.dtype()) && is_int8(b.dtype())) {
    // The exact integer sums (integer_product.h: A and B read where they lie).
    if (ctx.input(2).dtype() != a.dtype() || ctx.input(5).dtype() != b.dtype())
      ctx.fail("a_zero_point and b_zero_point must have A's and B's element types");
    const ZeroPoints za = zero_points_of(ctx, &ctx.input(2), a.shape(), true, "a_zero_point");
    const ZeroPoints zb = zero_points_of(ctx, &ctx.input(5), b.shape(), false, "b_zero_point");
    const math::MatMulShape ms = math::matmul_shape(ctx, a.shape(), b.shape());
    shape = ms.out;
    check_work_buffer(ctx, shape, "the integer sums");
    y.assign(*checked_element_count(shape), 0.0);
    const int64_t M = ms.M, N = ms.N;
    integer_matmul8(ms, reinterpret_cast<const uint8_t*>(a.raw()), a.dtype() == DataType::Int8, za,
                    reinterpret_cast<const uint8_t*>(b.raw()), b.dtype() == DataType::Int8, zb,
                    [&](uint64_t bt, int64_t i, int64_t j0, const double* v, int64_t n) {
                      std::copy(v, v + n, y.begin() + static_cast<std::ptrdiff_t>(bt * static_cast<uint64_t>(M * N)) + i * N + j0);
                    });
  } else {
    std::vector<double> av = real_values(a), bv = real_values(b);
    const double az = ctx.input(2).element_as_double(0), bz = ctx.input(5).element_as_double(0);
    for (auto& e : av) e -= az;
    for (auto& e : bv) e -= bz;
    y = matmul_values<double>(ctx, av, a.shape(), bv, b.shape(), shape);
  }
  const DataType out_type = yzp.dtype();
  const double zp = yzp.element_as_double(0);
  Tensor& out = ctx.allocate_output(0, out_type, shape);
  if (is_int8(out_type)) {
    const double lo = out_type == DataType::Int8 ? -128 : 0, hi = out_type == DataType::Int8 ? 127 : 255;
    std::byte* const po = out.mutable_raw();  // fetched once: per element it is a call through the buffer
    for (uint64_t i = 0; i < y.size(); ++i) {
      // A NaN product (scales of 0 / 0, NaN or inf) gives the zero point, as QuantizeLinear's NaN does.
      const double r = std::nearbyint(y[i] * mult);
      const double q = std::clamp((std::isnan(r) ? 0.0 : r) + zp, lo, hi);
      if (out_type == DataType::Int8) store_at<int8_t>(po, i, static_cast<int8_t>(q));
      else store_at<uint8_t>(po, i, static_cast<uint8_t>(q));
    }
    return;
  }
  dispatch<kFloat8>(ctx, out_type, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (uint64_t i = 0; i < y.size(); ++i) put<S>(out, i, static_cast<float>(y[i] * mult + zp));
  });
}

}  // namespace onnxscope::ref
