// Reference kernels: activation functions applied element by element.
//
// Narrow floats are computed in float and rounded on store (numpy does the
// same for float16); float32 math is done in float, like numpy, but for
// Sigmoid, computed in double and rounded once (math/common.h's
// float_through_double).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/math/exp_f64.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

template <typename T> T sigmoid(T x) {
  // Split by sign so exp never overflows: 1 / (1 + exp(-x)) for x >= 0,
  // exp(x) / (1 + exp(x)) below; e is the one exp either needs.
  // (The numerator is a select, not a branch: a layer's inputs have mixed
  // signs, and a mispredicted branch per element cost more than the exp.)
  const T e = std::exp(-std::abs(x));
  const T num = x >= 0 ? T(1) : e;
  return num / (T(1) + e);
}

}  // namespace

void Sigmoid(KernelContext& c) {
  if (c.input(0).dtype() == DataType::Float) return float_through_double(c, [](double* v, int64_t n) { math::sigmoid_by_exp(v, n); });
  unary<kFloats>(c, [](auto v) { return sigmoid(v); });
}
void Relu(KernelContext& c) {
  // max(0, x) as the spec's Max and numpy's maximum make it: NaN stays NaN
  // (as onnxruntime and onnx.reference give; a 0 there hid where a NaN came from).
  unary<kFloats | kSignedInts>(c, [](auto v) { return !(v <= decltype(v)(0)) ? v : decltype(v)(0); });
}

void Softsign(KernelContext& c) { unary<kFloats>(c, [](auto v) { return v / (decltype(v)(1) + std::abs(v)); }); }
void Softplus(KernelContext& c) {
  // log(1 + exp(x)), written to stay finite for large x.
  unary<kFloats>(c, [](auto v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); });
}

void Mish(KernelContext& c) {
  unary<kFloats>(c, [](auto v) {
    auto sp = v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
    return v * std::tanh(sp);
  });
}

void LeakyRelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 0.01f);
  unary<kFloats>(c, [&](auto v) { return v >= 0 ? v : decltype(v)(alpha) * v; });
}

void Elu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) { return v >= 0 ? v : decltype(v)(alpha) * std::expm1(v); });
}

void Selu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.67326319217681884765625f);
  const float gamma = c.attr_float("gamma", 1.05070102214813232421875f);
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    return v > 0 ? T(gamma) * v : T(gamma) * (T(alpha) * std::exp(v) - T(alpha));
  });
}

void Celu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    if (std::isnan(v)) return v;  // numpy's maximum / minimum keep NaN; std::max / std::min drop it
    return std::max(T(0), v) + std::min(T(0), T(alpha) * std::expm1(v / T(alpha)));
  });
}

void HardSigmoid(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 0.2f), beta = c.attr_float("beta", 0.5f);
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    if (std::isnan(v)) return v;  // numpy's maximum / minimum keep NaN; std::max / std::min drop it
    return std::max(T(0), std::min(T(1), T(alpha) * v + T(beta)));
  });
}

void HardSwish(KernelContext& c) {
  unary<kFloats>(c, [](auto v) {
    using T = decltype(v);
    return v * std::max(T(0), std::min(T(1), v / T(6) + T(0.5)));
  });
}

void ThresholdedRelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) { return v > decltype(v)(alpha) ? v : decltype(v)(0); });
}

void Shrink(KernelContext& c) {
  const float bias = c.attr_float("bias", 0.0f), lambd = c.attr_float("lambd", 0.5f);
  unary<kNumeric>(c, [&](auto v) {
    using T = decltype(v);
    double d = static_cast<double>(v);
    // bias is a float attribute: on integers, d +- bias can leave T's range (saturated, not undefined).
    if constexpr (std::is_integral_v<T>) return d < -lambd ? saturating_cast<T>(d + bias) : (d > lambd ? saturating_cast<T>(d - bias) : T(0));
    else return d < -lambd ? T(d + bias) : (d > lambd ? T(d - bias) : T(0));
  });
}

void Gelu(KernelContext& c) {
  const std::string approx = c.attr_string("approximate", "none");
  if (approx != "none" && approx != "tanh") c.fail("approximate must be 'none' or 'tanh', got '" + approx + "'");
  unary<kFloats>(c, [&](auto v) {
    using T = decltype(v);
    if (approx == "tanh")
      return T(0.5) * v * (T(1) + std::tanh(std::sqrt(T(2) / T(M_PI)) * (v + T(0.044715) * v * v * v)));
    return T(0.5) * v * (T(1) + std::erf(v / std::sqrt(T(2))));
  });
}

// com.microsoft QuickGelu (ONNX Runtime's contrib operator): x sigmoid(alpha x).
void QuickGelu(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.702f);
  unary<kFloats>(c, [&](auto v) { return v * sigmoid(decltype(v)(alpha) * v); });
}

void Swish(KernelContext& c) {
  const float alpha = c.attr_float("alpha", 1.0f);
  unary<kFloats>(c, [&](auto v) { return v * sigmoid(decltype(v)(alpha) * v); });
}

}  // namespace onnxscope::ref
