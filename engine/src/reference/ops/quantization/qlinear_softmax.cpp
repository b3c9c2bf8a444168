// Reference kernel: com.microsoft QLinearSoftmax (ONNX Runtime's contrib
// operator, which its QOperator quantizer writes for Softmax: attention
// probabilities of quantized transformers).
//
// Inputs X, X_scale, x_zero_point (optional: 0), y_scale, y_zero_point;
// uint8 or int8, per-tensor parameters. Attributes axis (-1) and opset, the
// ONNX Softmax whose axis rule it follows: below 13 the input is coerced to
// a matrix at axis and each row normalized; from 13 on, along axis alone.
// Each value dequantized, the softmax in double (the row's maximum taken
// out first; the zero point cancels), then quantized to y_scale and
// y_zero_point, rounded half to even and saturated.
#include <cmath>
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

template <typename T>
void softmax(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float sx = qlinear_scale(ctx, 1, "X_scale"), sy = qlinear_scale(ctx, 3, "y_scale");
  qlinear_zero_point<T>(ctx, 2, x.dtype(), "x_zero_point");  // checked; it cancels
  const T zy = qlinear_zero_point<T>(ctx, 4, x.dtype(), "y_zero_point");
  if (!ctx.has_attr("opset")) ctx.fail("required attribute 'opset' is missing (the Softmax version whose axis rule applies)");
  const int64_t opset = ctx.attr_int("opset", 13);
  const int64_t rank = x.rank();
  if (rank == 0) ctx.fail("X must have rank 1 or more");
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const Shape& s = x.shape();
  // Rows of n values `inner` apart: from opset 13 the one axis, before it every dim from axis on.
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  if (opset >= 13) {
    n = s[static_cast<size_t>(axis)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= s[static_cast<size_t>(d)];
  } else {
    for (int64_t d = axis; d < rank; ++d) n *= s[static_cast<size_t>(d)];
  }
  Tensor& y = ctx.allocate_output(0, x.dtype(), s);
  const T* in = x.data<T>();
  if (y.element_count() == 0) return;  // (no rows: a row's first value is not there to read)
  T* out = y.mutable_data<T>();
  // x - max(row) is one of 256 integers (-255 .. 0): each one's exponential
  // computed once, by the same expression the loop would evaluate.
  double table[256];
  for (int d = 0; d < 256; ++d) table[d] = std::exp(static_cast<double>(d - 255) * sx);
  // Rows (o, i) across the threads, each normalized alone.
  for_rows(static_cast<uint64_t>(outer * inner), static_cast<uint64_t>(n), [&](uint64_t r0, uint64_t r1) {
    std::vector<double> e(static_cast<size_t>(n));
    for (uint64_t r = r0; r < r1; ++r) {
      const int64_t o = static_cast<int64_t>(r) / inner, i = static_cast<int64_t>(r) % inner;
      const int64_t base = o * n * inner + i;
      int64_t qmax = in[base];
      for (int64_t k = 1; k < n; ++k) qmax = std::max<int64_t>(qmax, in[base + k * inner]);
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        e[static_cast<size_t>(k)] = table[in[base + k * inner] - qmax + 255];
        sum += e[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < n; ++k)
        out[base + k * inner] = quantize_float<T>(static_cast<float>(e[static_cast<size_t>(k)] / sum / sy), zy);
    }
  });
}

}  // namespace

void QLinearSoftmax(KernelContext& ctx) {
  qlinear_unary_entry(ctx, "QLinearSoftmax", [&](auto tag) { softmax<typename decltype(tag)::type>(ctx); });
}

}  // namespace onnxscope::ref
