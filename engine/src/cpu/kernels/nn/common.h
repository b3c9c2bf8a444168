// Helpers shared by the CPU engine's own nn kernels.
#pragma once

#include <algorithm>
#include <optional>

#include "cpu/kernels/output.h"
#include "onnxscope/kernel.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {

// Conv's inputs as the plain float32 kernels take them: X and W present, an
// optional bias, every given input a float32 tensor.
inline bool float_conv_inputs(const KernelContext& ctx) {
  if (ctx.input_count() < 2 || ctx.input_count() > 3) return false;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Value* v = ctx.input_value(i);
    if (i < 2 && !v) return false;
    if (v && (!v->is_tensor() || v->tensor().dtype() != DataType::Float)) return false;
  }
  return true;
}

// A 2-D window over N*C planes of H x W on the plain layout, as the plain
// pooling and depthwise kernels walk it: the output size, the kernel and the
// padding of each side, from the reference's resolved window.
struct PlaneWindow {
  int64_t planes = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t kh = 1, kw = 1, pt = 0, pl = 0, pb = 0, pr = 0;

  void set(const Shape& x, const ref::nn::Window& w, int64_t kernel_h, int64_t kernel_w) {
    planes = x[0] * x[1];
    H = x[2];
    W = x[3];
    OH = w.out[0];
    OW = w.out[1];
    kh = kernel_h;
    kw = kernel_w;
    pt = w.pad_begin[0];
    pl = w.pad_begin[1];
    pb = w.pad_end[0];
    pr = w.pad_end[1];
  }
};

// Window o of one pooling dim (start o * s - pad_begin, k wide) clamped to
// [lo, hi): the taps inside X ([0, n)), or inside X and its declared padding.
struct Span {
  int64_t lo, hi;
};
inline Span window_span(int64_t o, int64_t s, int64_t pad_begin, int64_t k, int64_t lo, int64_t hi) {
  const int64_t start = o * s - pad_begin;
  return {std::clamp(start, lo, hi), std::clamp(start + k, lo, hi)};
}

// The 2-D window of a MaxPool / AveragePool node (or NchwcPool's) over
// planes of H x W, without dilation, as the CPU's own pooling kernels walk
// it: nullopt for what they decline (no kernel_shape, dilations, a window
// past X and its padding, as a mutated kernel_shape of 2^31 makes: the
// reference finds such taps by division, and names what is wrong).
inline std::optional<ref::nn::Window> pool_window_2d(const KernelContext& ctx, int64_t H, int64_t W) {
  if (!ctx.has_attr("kernel_shape")) return std::nullopt;
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != 2) return std::nullopt;
  if (ctx.has_attr("dilations")) {
    const std::vector<int64_t> d = ctx.attr_ints("dilations");
    if (!d.empty() && d != std::vector<int64_t>{1, 1}) return std::nullopt;
  }
  ref::nn::Window w;
  try {
    w = ref::nn::resolve_window(ctx, {H, W}, kernel, ctx.attr_int("ceil_mode", 0) != 0);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  for (size_t d = 0; d < 2; ++d)
    if (w.kernel[d] > w.in[d] + w.pad_begin[d] + w.pad_end[d] || w.out[d] <= 0) return std::nullopt;
  return w;
}

// A 2-D convolution's window over an H x W input for a kernel of `kernel`
// taps (checked against a kernel_shape attribute where there is one), or
// nothing where the attributes do not resolve (the reference names what is wrong).
inline std::optional<ref::nn::Window> conv_window_2d(const KernelContext& ctx, int64_t H, int64_t W,
                                                     const std::vector<int64_t>& kernel) {
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return std::nullopt;
  try {
    return ref::nn::resolve_window(ctx, {H, W}, kernel, false);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// NchwcConv's optional inputs (cpu/nchwc.h): a bias of M floats (input 2)
// and a residual of the blocked output's shape `yb` (input 3). False where
// one is given otherwise; `bias` and `sum` say which are there.
inline bool nchwc_conv_extras(const KernelContext& ctx, int64_t M, const Shape& yb, bool& bias, bool& sum) {
  auto float_tensor = [](const Value* v) { return v && v->is_tensor() && v->tensor().dtype() == DataType::Float; };
  bias = sum = false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (!float_tensor(b) || b->tensor().shape() != Shape{M}) return false;
    bias = true;
  }
  if (const Value* r = ctx.input_count() > 3 ? ctx.input_value(3) : nullptr) {
    if (!float_tensor(r) || r->tensor().shape() != yb) return false;
    sum = true;
  }
  return true;
}

// A blocked convolution's output of shape `yb`: in the residual's storage
// where the residual dies here and is not X too (each output position then
// reads its residual before writing it, on one thread), else fresh. `r`:
// where the residual is read from (nullptr without one).
inline Tensor& nchwc_conv_output(KernelContext& ctx, const Shape& yb, bool sum, const float*& r) {
  std::shared_ptr<Buffer> in_place = sum ? ctx.reusable_input_buffer(3) : nullptr;
  if (in_place && (in_place->size() < ctx.input(3).byte_size() || in_place == ctx.input(0).buffer())) in_place.reset();
  if (in_place) ctx.output(0) = Value(Tensor::from_buffer(DataType::Float, yb, in_place));
  Tensor& out = in_place ? ctx.output(0).tensor() : uninitialized_output(ctx, 0, DataType::Float, yb);
  r = sum ? (in_place ? out.data<float>() : ctx.input(3).data<float>()) : nullptr;
  return out;
}

}  // namespace onnxscope::cpu
