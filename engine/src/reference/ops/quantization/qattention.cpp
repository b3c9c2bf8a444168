// Reference kernel: com.microsoft QAttention (ONNX Runtime's contrib
// operator: Attention whose input projection is quantized, as
// quantize_dynamic writes it for a model that holds com.microsoft Attention).
//
//   x = (input - input_zero_point) * input_scale            input uint8 or int8, one scale and zero point
//   W = (weight - weight_zero_point[c]) * weight_scale[c]    weight uint8 or int8, per tensor or per column c
//   then Attention(x, W, bias, mask_index, past)            float output (nn/contrib_attention.cpp)
//
// The integer products are exact in double, so this is the product ONNX
// Runtime sums in int32 and scales once.
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/contrib_attention_common.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

// A float or integer parameter with one value or one per column (n).
std::vector<double> per_column(const KernelContext& ctx, const Tensor* t, int64_t n, const char* what, bool integer) {
  if (!t) return std::vector<double>(size_t(n), 0.0);
  if (integer ? !is_int8(t->dtype()) : t->dtype() != DataType::Float)
    ctx.fail(std::string(what) + " has element type " + std::string(dtype_name(t->dtype())) +
             (integer ? ", expected uint8 or int8" : ", expected float"));
  const uint64_t c = t->element_count();
  if (c != 1 && (t->rank() != 1 || int64_t(c) != n))
    ctx.fail(std::string(what) + " must be a scalar or have one value per weight column (" + std::to_string(n) + "), got " +
             shape_to_string(t->shape()));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = t->element_as_double(c == 1 ? 0 : uint64_t(i));
  return v;
}

}  // namespace

void QAttention(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& bias = ctx.input(2);
  if (!is_int8(x.dtype()) || !is_int8(w.dtype()))
    ctx.fail("input and weight must be uint8 or int8, got " + std::string(dtype_name(x.dtype())) + " and " +
             std::string(dtype_name(w.dtype())));
  if (x.rank() != 3) ctx.fail("input must be 3-D (batch, sequence, input_hidden), got " + shape_to_string(x.shape()));
  if (w.rank() != 2 || w.shape()[0] != x.shape()[2])
    ctx.fail("weight of shape " + shape_to_string(w.shape()) + " must be (input_hidden " + std::to_string(x.shape()[2]) +
             ", Dq + Dk + Dv)");
  const int64_t width = w.shape()[1];
  if (bias.dtype() != DataType::Float || bias.rank() != 1 || bias.shape()[0] != width)
    ctx.fail("bias must be float of shape [" + std::to_string(width) + "], got " + std::string(dtype_name(bias.dtype())) +
             shape_to_string(bias.shape()));
  const double in_scale = per_column(ctx, &ctx.input(3), 1, "input_scale", false)[0];
  const std::vector<double> w_scale = per_column(ctx, &ctx.input(4), width, "weight_scale", false);
  const Tensor* izp = ctx.optional_input(6);
  if (izp && (izp->dtype() != x.dtype() || izp->element_count() != 1))
    ctx.fail("input_zero_point must be one value of the input's type");
  const double in_zp = izp ? izp->element_as_double(0) : 0.0;
  const Tensor* wzp_t = ctx.optional_input(7);
  if (wzp_t && wzp_t->dtype() != w.dtype()) ctx.fail("weight_zero_point must have the weight's type");
  const std::vector<double> w_zp = per_column(ctx, wzp_t, width, "weight_zero_point", true);
  const Tensor* past = ctx.optional_input(8);
  if (past && past->dtype() != DataType::Float) ctx.fail("past must be float");

  contrib_attention::Projection p;
  p.B = x.shape()[0], p.S = x.shape()[1], p.Din = x.shape()[2], p.width = width;
  p.x.resize(x.element_count());
  for (uint64_t i = 0; i < x.element_count(); ++i) p.x[i] = (x.element_as_double(i) - in_zp) * in_scale;
  p.w.resize(w.element_count());
  for (uint64_t i = 0; i < w.element_count(); ++i) {
    const size_t c = size_t(int64_t(i) % width);
    p.w[i] = (w.element_as_double(i) - w_zp[c]) * w_scale[c];
  }
  p.bias.resize(size_t(width));
  for (int64_t c = 0; c < width; ++c) p.bias[size_t(c)] = bias.element_as_double(uint64_t(c));
  p.out_type = DataType::Float;
  p.mask_input = 5, p.past_input = 8, p.attention_bias_input = -1;
  contrib_attention::attention_after_projection(ctx, p);
}

}  // namespace onnxscope::ref
