// Reference kernel: com.microsoft QLinearGlobalAveragePool (ONNX Runtime's
// contrib operator, which its QOperator quantizer writes for
// GlobalAveragePool: squeeze-excitation, classifier heads).
//
// Inputs X, x_scale, x_zero_point, y_scale, y_zero_point; attribute
// channels_last (0: X is N C spatial..., 1: N spatial... C). The mean of each
// image and channel over its spatial positions, from the integer sum of
// (x - x_zero_point) scaled once in float by x_scale / (y_scale * count), as
// ONNX Runtime computes it; Y is N C 1... (or N 1... C).
#include <string>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

template <typename T>
void pool(KernelContext& ctx, bool channels_last) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("X must have rank 3 or more (N, C and spatial dims), got " + shape_to_string(x.shape()));
  const float sx = qlinear_scale(ctx, 1, "x_scale"), sy = qlinear_scale(ctx, 3, "y_scale");
  const T zx = qlinear_zero_point<T>(ctx, 2, x.dtype(), "x_zero_point");
  const T zy = qlinear_zero_point<T>(ctx, 4, x.dtype(), "y_zero_point");
  const Shape& s = x.shape();
  const int64_t n = s[0], c = channels_last ? s.back() : s[1];
  int64_t spatial = 1;
  for (size_t d = channels_last ? 1 : 2; d < (channels_last ? s.size() - 1 : s.size()); ++d) spatial *= s[d];
  Shape out(s.size(), 1);
  out[0] = n;
  out[channels_last ? s.size() - 1 : 1] = c;
  Tensor& y = ctx.allocate_output(0, x.dtype(), out);
  if (y.element_count() == 0) return;
  if (spatial == 0) ctx.fail("X has no spatial positions to average: shape " + shape_to_string(s));
  const float scale = sx / (sy * static_cast<float>(spatial));
  const T* in = x.data<T>();
  T* dst = y.mutable_data<T>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch) {
      int64_t sum = 0;
      for (int64_t p = 0; p < spatial; ++p) {
        const int64_t at = channels_last ? (i * spatial + p) * c + ch : (i * c + ch) * spatial + p;
        sum += static_cast<int64_t>(in[at]) - static_cast<int64_t>(zx);
      }
      dst[i * c + ch] = quantize_float<T>(static_cast<float>(sum) * scale, zy);
    }
}

}  // namespace

void QLinearGlobalAveragePool(KernelContext& ctx) {
  const int64_t cl = ctx.attr_int("channels_last", 0);
  if (cl != 0 && cl != 1) ctx.fail("channels_last must be 0 or 1, got " + std::to_string(cl));
  qlinear_unary_entry(ctx, "QLinearGlobalAveragePool",
                      [&](auto tag) { pool<typename decltype(tag)::type>(ctx, cl == 1); });
}

}  // namespace onnxscope::ref
