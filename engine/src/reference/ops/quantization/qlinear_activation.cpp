// Reference kernels: com.microsoft QLinearSigmoid and QLinearLeakyRelu (ONNX
// Runtime's contrib operators, which its QOperator quantizer writes).
//
// Inputs X, X_scale, X_zero_point, Y_scale, Y_zero_point (zero points
// optional: 0); uint8 or int8; per-tensor parameters. Each of the 256 values
// of X is dequantized, mapped (sigmoid, or x < 0 ? alpha x : x with alpha
// 0.01 unless given) and quantized again, in float as DequantizeLinear,
// the activation and QuantizeLinear compute it: a table, as ONNX Runtime's.
#include <cmath>
#include <limits>
#include <string>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/quantization/common.h"

namespace onnxscope::ref {
namespace {

// table[b]: the result for the input byte b (read as T).
template <typename T, typename F>
void make_table(const KernelContext& ctx, F f, T* table) {
  const Tensor& x = ctx.input(0);
  const float sx = qlinear_scale(ctx, 1, "X_scale"), sy = qlinear_scale(ctx, 3, "Y_scale");
  const T zx = qlinear_zero_point<T>(ctx, 2, x.dtype(), "X_zero_point");
  const T zy = qlinear_zero_point<T>(ctx, 4, x.dtype(), "Y_zero_point");
  for (int v = std::numeric_limits<T>::min(); v <= std::numeric_limits<T>::max(); ++v) {
    const float real = (static_cast<float>(v) - static_cast<float>(zx)) * sx;
    table[static_cast<uint8_t>(static_cast<T>(v))] = quantize_float<T>(f(real) / sy, zy);
  }
}

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

template <typename T, typename F>
void lookup(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  T table[256];
  make_table<T>(ctx, f, table);
  Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
  const T* in = x.data<T>();
  T* out = y.mutable_data<T>();
  for (uint64_t i = 0; i < x.element_count(); ++i) out[i] = table[static_cast<uint8_t>(in[i])];
}

template <typename F>
void run(KernelContext& ctx, const char* op, F f) {
  qlinear_unary_entry(ctx, op, [&](auto tag) { lookup<typename decltype(tag)::type>(ctx, f); });
}

}  // namespace

void QLinearSigmoid(KernelContext& ctx) { run(ctx, "QLinearSigmoid", sigmoid); }

void QLinearLeakyRelu(KernelContext& ctx) {
  const float alpha = ctx.attr_float("alpha", 0.01f);
  run(ctx, "QLinearLeakyRelu", [alpha](float v) { return v < 0 ? alpha * v : v; });
}

void qlinear_activation_table(KernelContext& ctx, bool leaky_relu, std::byte* table) {
  const float alpha = ctx.attr_float("alpha", 0.01f);
  auto leaky = [alpha](float v) { return v < 0 ? alpha * v : v; };
  qlinear_unary_entry(ctx, leaky_relu ? "QLinearLeakyRelu" : "QLinearSigmoid", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (leaky_relu) make_table<T>(ctx, leaky, reinterpret_cast<T*>(table));
    else make_table<T>(ctx, sigmoid, reinterpret_cast<T*>(table));
  });
}

}  // namespace onnxscope::ref
