// The parameters of the com.microsoft QLinear operators with one 8-bit input
// (QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool, QLinearSoftmax):
// X, X_scale, X_zero_point (optional), Y_scale, Y_zero_point (optional), each
// parameter one value, scales positive and finite. nullopt for anything else:
// the reference then names what is wrong.
#pragma once

#include <cmath>
#include <optional>

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

struct QLinearUnaryParams {
  float x_scale = 1, y_scale = 1;
  int x_zero_point = 0, y_zero_point = 0;
};

inline std::optional<QLinearUnaryParams> qlinear_unary_params(const KernelContext& ctx) {
  if (ctx.input_count() < 4 || ctx.input_count() > 5) return std::nullopt;
  const Value* x = ctx.input_value(0);
  if (!x || !x->is_tensor() || (x->tensor().dtype() != DataType::Uint8 && x->tensor().dtype() != DataType::Int8))
    return std::nullopt;
  QLinearUnaryParams p;
  for (size_t i : {size_t{1}, size_t{3}}) {
    const Value* s = ctx.input_value(i);
    if (!s || !s->is_tensor() || s->tensor().dtype() != DataType::Float || s->tensor().element_count() != 1) return std::nullopt;
    const float v = s->tensor().data<float>()[0];
    if (!(v > 0) || !std::isfinite(v)) return std::nullopt;
    (i == 1 ? p.x_scale : p.y_scale) = v;
  }
  for (size_t i : {size_t{2}, size_t{4}}) {
    const Value* z = i < ctx.input_count() ? ctx.input_value(i) : nullptr;
    if (!z) continue;
    const Tensor& t = z->tensor();
    if (!z->is_tensor() || t.dtype() != x->tensor().dtype() || t.element_count() != 1) return std::nullopt;
    (i == 2 ? p.x_zero_point : p.y_zero_point) = t.dtype() == DataType::Int8 ? t.data<int8_t>()[0] : t.data<uint8_t>()[0];
  }
  return p;
}

}  // namespace onnxscope::cpu
