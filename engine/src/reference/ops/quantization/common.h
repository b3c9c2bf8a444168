// Helpers shared by the reference's quantization kernels: zero points and quantized types.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <complex>
#include <limits>
#include <mutex>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/einsum_plan.h"
#include "core/mel_weights.h"
#include "core/quant_plan.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/math/common.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

// fn(i0, i1, k) over elements [i0, i1) of an n-element tensor that share
// quantization parameter k (per tensor or per axis, not blocked), split
// across the threads (each output computed alone: the split changes nothing).
template <typename Fn>
void for_quant_runs(const quant::ParamIndex& qi, uint64_t n, Fn fn) {
  if (n == 0) return;
  if (qi.mode == quant::ParamIndex::PerTensor) return for_chunks(n, [&](uint64_t i0, uint64_t i1) { fn(i0, i1, 0); });
  const auto inner = static_cast<uint64_t>(qi.inner), axis = static_cast<uint64_t>(qi.axis_dim);
  for_rows(n / inner, inner, [&](uint64_t r0, uint64_t r1) {
    for (uint64_t r = r0; r < r1; ++r) fn(r * inner, (r + 1) * inner, r % axis);
  });
}

inline bool is_int8(DataType t) { return t == DataType::Int8 || t == DataType::Uint8; }

// --- quantization helpers -------------------------------------------------------

inline bool is_quant_int(DataType t) {
  switch (t) {
    case DataType::Int8: case DataType::Uint8: case DataType::Int16: case DataType::Uint16:
    case DataType::Int4: case DataType::Uint4: case DataType::Int2: case DataType::Uint2: return true;
    default: return false;
  }
}

inline bool is_quant_float(DataType t) {
  switch (t) {
    case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::Float4E2M1: case DataType::Float6E2M3:
    case DataType::Float6E3M2: return true;
    default: return false;
  }
}

// Which scale each element reads (per tensor, per axis, blocked): the
// layout the CUDA engine shares (core/quant_plan.h), its errors at the node.
inline quant::ParamIndex quant_param_index(const KernelContext& ctx, const Shape& x_shape, const Tensor& scale,
                                    const Tensor* zero_point, int64_t axis_attr, int64_t block_size) {
  try {
    return quant::param_index(x_shape, scale.shape(), zero_point ? &zero_point->shape() : nullptr, axis_attr, block_size);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
}

// --- ONNX Runtime's QOperator contrib kernels (QLinearConcat, QLinearAdd, ...) --
// Per-tensor parameters: a float scale, positive and finite, and a zero
// point of the quantized type (absent: 0), each a scalar or one element.

inline float qlinear_scale(const KernelContext& ctx, size_t i, const std::string& what) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DataType::Float) ctx.fail(what + " must be float, got " + std::string(dtype_name(t.dtype())));
  if (t.element_count() != 1) ctx.fail(what + " must be a scalar, got shape " + shape_to_string(t.shape()));
  const float s = t.data<float>()[0];
  if (!(s > 0) || !std::isfinite(s)) ctx.fail(what + " must be a positive finite number, got " + std::to_string(s));
  return s;
}

template <typename T>
T qlinear_zero_point(const KernelContext& ctx, size_t i, DataType want, const std::string& what) {
  const Tensor* t = ctx.optional_input(i);
  if (!t) return T(0);
  if (t->dtype() != want)
    ctx.fail(what + " must be " + std::string(dtype_name(want)) + ", the quantized input's type, got " +
             std::string(dtype_name(t->dtype())));
  if (t->element_count() != 1) ctx.fail(what + " must be a scalar, got shape " + shape_to_string(t->shape()));
  return t->data<T>()[0];
}

// std::nearbyint(v) in the default rounding mode, inline (the libm call
// was most of a requantizing sink's time per element): below 2^23, adding
// and taking away 2^23 rounds |v| to an integer, ties to even; from 2^23 on
// (and NaN, infinities) v is one already. The sign is v's, -0 included.
inline float nearest_even(float v) {
  const float a = std::fabs(v);
  if (!(a < 8388608.0f)) return v;
  return std::copysign((a + 8388608.0f) - 8388608.0f, v);
}

// round_half_even(v) + zero_point, saturated to T, in float as ONNX Runtime's
// QuantizeLinear computes it.
template <typename T> T quantize_float(float v, T zero_point) {
  const float q = nearest_even(v) + static_cast<float>(zero_point);
  const float lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  return static_cast<T>(q < lo ? lo : q > hi ? hi : q);
}

// Every value of T requantized from (x_scale, x_zero_point) to (y_scale,
// y_zero_point) as DequantizeLinear then QuantizeLinear compute it, in
// float: table[b] for the byte b read as T (QLinearConcat's inputs).
template <typename T>
void requantize_table(float x_scale, T x_zero_point, float y_scale, T y_zero_point, T* table) {
  for (int v = std::numeric_limits<T>::min(); v <= std::numeric_limits<T>::max(); ++v) {
    const float real = (static_cast<float>(v) - static_cast<float>(x_zero_point)) * x_scale;
    table[static_cast<uint8_t>(static_cast<T>(v))] = quantize_float<T>(real / y_scale, y_zero_point);
  }
}

// com.microsoft QLinearSigmoid (leaky_relu false) or QLinearLeakyRelu as the
// 256-entry table of its node's parameters: table[b] is Y for the input byte
// b, as the reference computes it (qlinear_activation.cpp). Fails as the
// reference kernel does on bad parameters. For the CPU engine's lookup.
void qlinear_activation_table(KernelContext& ctx, bool leaky_relu, std::byte* table);

// --- DynamicQuantizeLinear's arithmetic (DynamicQuantizeLinear, DynamicQuantizeMatMul) --
// uint8 with a scale and zero point from the data's range extended to 0, in
// float as the spec's formulas are.
struct DynamicQuant {
  float scale = 1;
  float zero_point = 0;  // a whole number in [0, 255] (0 for an infinite range)
};

inline DynamicQuant dynamic_quant_params(const float* x, uint64_t n) {
  // The range in chunks across the threads: max and min are exact, NaN is
  // never taken (it compares false) and neither is -0 (every partial starts
  // at +0, replaced only by a strictly larger or smaller value), so the
  // chunks' results combine to the sequential loop's in any order.
  float maxx = 0.0f, minx = 0.0f;
  std::mutex combine;
  for_chunks(n, [&](uint64_t lo, uint64_t hi) {
    float hi_part = 0.0f, lo_part = 0.0f;
    for (uint64_t i = lo; i < hi; ++i) {
      hi_part = std::max(hi_part, x[i]);
      lo_part = std::min(lo_part, x[i]);
    }
    const std::lock_guard<std::mutex> hold(combine);
    maxx = std::max(maxx, hi_part);
    minx = std::min(minx, lo_part);
  });
  DynamicQuant q;
  q.scale = (maxx == minx ? 1.0f : (maxx - minx)) / 255.0f;
  q.zero_point = std::nearbyint(std::clamp(0.0f - minx / q.scale, 0.0f, 255.0f));
  if (std::isnan(q.zero_point)) q.zero_point = 0.0f;  // an infinite range (-inf / inf); numpy's uint8 cast gives 0 too
  return q;
}

inline uint8_t dynamic_quantize(float v, const DynamicQuant& q) {
  const float r = nearest_even(v / q.scale) + q.zero_point;
  return static_cast<uint8_t>(std::isnan(r) ? q.zero_point : std::clamp(r, 0.0f, 255.0f));
}

// The entry of a QOperator kernel over one 8-bit tensor X and its output's
// parameters (X, x_scale, x_zero_point, y_scale, y_zero_point: the zero
// points optional): the inputs checked, then run(Tag<T>) for X's type,
// uint8 or int8.
template <typename Run>
void qlinear_unary_entry(KernelContext& ctx, const char* op, Run run) {
  if (ctx.input_count() < 4 || ctx.input_count() > 5)
    ctx.fail(std::string(op) + " takes X, X_scale, X_zero_point, Y_scale, Y_zero_point: got " +
             std::to_string(ctx.input_count()) + " inputs");
  for (size_t i : {0u, 1u, 3u})
    if (!ctx.optional_input(i)) ctx.fail("input " + std::to_string(i) + " is missing (only zero points are optional)");
  switch (ctx.input(0).dtype()) {
    case DataType::Uint8: run(Tag<uint8_t>{}); break;
    case DataType::Int8: run(Tag<int8_t>{}); break;
    default: ctx.fail("X must be uint8 or int8, got " + std::string(dtype_name(ctx.input(0).dtype())));
  }
}

}  // namespace onnxscope::ref
