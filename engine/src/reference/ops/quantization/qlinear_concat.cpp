// Reference kernel: com.microsoft QLinearConcat (ONNX Runtime's contrib
// operator, which its quantizer writes for Concat in QOperator models).
//
// Inputs: Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) for each
// tensor joined; attribute axis. Each X is requantized to Y's parameters
// exactly as DequantizeLinear followed by QuantizeLinear computes it, in
// float: x = (q - X_zero_point) * X_scale, y = saturate(round_half_even(x /
// Y_scale) + Y_zero_point). An input whose parameters are Y's is copied.
// Per-tensor (scalar) parameters only, as ONNX Runtime's kernel.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

template <typename T>
void concat(KernelContext& ctx, size_t count, int64_t axis_attr) {
  const DataType type = ctx.input(1).dtype();
  const float y_scale = qlinear_scale(ctx, 0, "Y_scale");
  const T y_zp = qlinear_zero_point<T>(ctx, 1, type, "Y_zero_point");
  const Tensor& first = ctx.input(2);
  const int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars");
  if (axis_attr < -rank || axis_attr >= rank)
    ctx.fail("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(rank));
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  Shape out = first.shape();
  out[axis] = 0;
  for (size_t k = 0; k < count; ++k) {
    const Tensor& x = ctx.input(2 + 3 * k);
    const std::string name = "input " + std::to_string(2 + 3 * k);
    if (x.dtype() != type)
      ctx.fail(name + " is " + std::string(dtype_name(x.dtype())) + ", Y_zero_point " + std::string(dtype_name(type)));
    bool ok = x.rank() == rank;
    for (size_t d = 0; ok && d < out.size(); ++d) ok = d == axis || x.shape()[d] == first.shape()[d];
    if (!ok)
      ctx.fail(name + " of shape " + shape_to_string(x.shape()) + " does not match input 2 of shape " +
               shape_to_string(first.shape()) + " outside axis " + std::to_string(axis));
    out[axis] += x.shape()[axis];
  }
  Tensor& y = ctx.allocate_output(0, type, out);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= out[d];
  for (size_t d = axis + 1; d < out.size(); ++d) inner *= out[d];
  T* dst = y.mutable_data<T>();
  const int64_t row = out[axis] * inner;
  int64_t at = 0;  // where input k starts in an output row
  for (size_t k = 0; k < count; ++k) {
    const Tensor& x = ctx.input(2 + 3 * k);
    const float x_scale = qlinear_scale(ctx, 3 + 3 * k, "input " + std::to_string(3 + 3 * k) + " (its scale)");
    const T x_zp = qlinear_zero_point<T>(ctx, 4 + 3 * k, type, "input " + std::to_string(4 + 3 * k) + " (its zero point)");
    // Every value of T requantized once: a table of 256.
    T table[256];
    requantize_table<T>(x_scale, x_zp, y_scale, y_zp, table);
    const bool copy = x_scale == y_scale && x_zp == y_zp;
    const int64_t chunk = x.shape()[axis] * inner;
    const T* src = x.data<T>();
    for (int64_t o = 0; o < outer; ++o) {
      T* d = dst + o * row + at;
      const T* s = src + o * chunk;
      if (copy) {
        std::memcpy(d, s, static_cast<size_t>(chunk) * sizeof(T));
      } else {
        for (int64_t i = 0; i < chunk; ++i) d[i] = table[static_cast<uint8_t>(s[i])];
      }
    }
    at += chunk;
  }
}

}  // namespace

void QLinearConcat(KernelContext& ctx) {
  const size_t n = ctx.input_count();
  if (n < 5 || (n - 2) % 3 != 0)
    ctx.fail("QLinearConcat takes Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) for each input: got " +
             std::to_string(n) + " inputs");
  for (size_t i = 0; i < n; ++i)
    if (!ctx.optional_input(i)) ctx.fail("input " + std::to_string(i) + " is missing (every input is required)");
  if (!ctx.has_attr("axis")) ctx.fail("required attribute 'axis' is missing");
  const int64_t axis = ctx.attr_int("axis", 0);
  switch (ctx.input(1).dtype()) {
    case DataType::Uint8: concat<uint8_t>(ctx, (n - 2) / 3, axis); break;
    case DataType::Int8: concat<int8_t>(ctx, (n - 2) / 3, axis); break;
    default:
      ctx.fail("Y_zero_point must be uint8 or int8, got " + std::string(dtype_name(ctx.input(1).dtype())));
  }
}

}  // namespace onnxscope::ref
