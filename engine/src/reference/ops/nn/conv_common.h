// Helpers shared by the reference's convolutions (nn/conv*.cpp,
// nn/deform_conv.cpp, quantization/conv_integer.cpp, qlinear_conv.cpp): shape
// checks, the direct integer convolution, bias and output shapes.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::ref {

// Shape checks shared by the convolutions; returns the resolved window.
inline nn::Window conv_window(KernelContext& ctx, const Shape& xs, const Shape& ws, int64_t group, bool transpose) {
  if (xs.size() < 3) ctx.fail("X must have shape [N, C, D1, ...], got " + shape_to_string(xs));
  if (ws.size() != xs.size())
    ctx.fail("W has rank " + std::to_string(ws.size()) + " but X has rank " + std::to_string(xs.size()));
  if (group < 1) ctx.fail("group must be >= 1");
  const int64_t C = xs[1];
  if (!transpose) {
    if (ws[0] % group != 0) ctx.fail("the output channels of W (" + std::to_string(ws[0]) + ") are not divisible by group " + std::to_string(group));
    if (ws[1] * group != C)
      ctx.fail("X has " + std::to_string(C) + " channels but W expects " + std::to_string(ws[1]) + " x group " + std::to_string(group));
  } else {
    if (ws[0] != C) ctx.fail("X has " + std::to_string(C) + " channels but W has " + std::to_string(ws[0]));
    if (C % group != 0) ctx.fail("the channels of X are not divisible by group " + std::to_string(group));
  }
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (ctx.has_attr("kernel_shape")) {
    std::vector<int64_t> ks = ctx.attr_ints("kernel_shape");
    if (ks != kernel) ctx.fail("kernel_shape " + shape_to_string(ks) + " does not match W's spatial shape " + shape_to_string(kernel));
  }
  std::vector<int64_t> in(xs.begin() + 2, xs.end());
  if (transpose) {
    // Only strides/dilations/pads are used here; output sizes are computed by ConvTranspose.
    nn::Window w;
    w.in = in;
    w.kernel = kernel;
    w.strides = nn::spatial_attr(ctx, "strides", in.size(), 1, 1);
    w.dilations = nn::spatial_attr(ctx, "dilations", in.size(), 1, 1);
    return w;
  }
  return nn::resolve_window(ctx, in, kernel, false);
}

// Direct convolution:
//   y[n, m, o] = sum over c in m's group and kernel positions k of
//                x[n, c, o * stride - pad_begin + k * dilation] * w[m, c, k]
// with positions in the padding contributing nothing. T is double or int64.
template <typename T>
std::vector<T> conv_core(const std::vector<T>& x, const Shape& xs, const std::vector<T>& w, const Shape& ws,
                         const nn::Window& win, int64_t group) {
  const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = C / group, Mg = M / group;
  const size_t k = win.in.size();
  const int64_t IS = nn::product(win.in), OS = nn::product(win.out), KS = nn::product(win.kernel);
  const auto in_strides = strides_of(win.in);
  std::vector<T> y(static_cast<size_t>(N * M * OS), T(0));
  // Kernel positions as index vectors.
  std::vector<std::vector<int64_t>> kpos;
  for (nn::Counter kc(win.kernel); kc.valid(); kc.next()) kpos.push_back(kc.index);
  std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel flat index, input flat index) inside the input
  int64_t op = 0;
  for (nn::Counter oc(win.out); oc.valid(); oc.next(), ++op) {
    if ((op & 63) == 0) poll_deadline();  // a run's time limit holds inside one long node too
    taps.clear();
    for (int64_t kp = 0; kp < KS; ++kp) {
      int64_t ip = 0;
      bool inside = true;
      for (size_t d = 0; d < k && inside; ++d) {
        const int64_t pos = oc.index[d] * win.strides[d] - win.pad_begin[d] + kpos[kp][d] * win.dilations[d];
        if (pos < 0 || pos >= win.in[d]) inside = false;
        ip += pos * in_strides[d];
      }
      if (inside) taps.emplace_back(kp, ip);
    }
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m) {
        const int64_t g = m / Mg;
        T acc = T(0);
        for (int64_t c = 0; c < Cg; ++c) {
          const T* xp = x.data() + (n * C + g * Cg + c) * IS;
          const T* wp = w.data() + (m * Cg + c) * KS;
          for (const auto& [kp, ip] : taps) acc += xp[ip] * wp[kp];
        }
        y[(n * M + m) * OS + op] = acc;
      }
  }
  return y;
}

// Adds a per-output-channel bias B[M] to y [N, M, spatial].
template <typename T, typename V>
void add_bias(KernelContext& ctx, std::vector<T>& y, int64_t N, int64_t M, int64_t OS, const V& bias) {
  if (static_cast<int64_t>(bias.size()) != M)
    ctx.fail("B has " + std::to_string(bias.size()) + " values, expected " + std::to_string(M) + " (one per output channel)");
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < OS; ++o) y[(n * M + m) * OS + o] += static_cast<T>(bias[m]);
}

inline Shape output_shape_of(const Shape& xs, int64_t M, const std::vector<int64_t>& out) {
  Shape s{xs[0], M};
  s.insert(s.end(), out.begin(), out.end());
  return s;
}

// t's zero point: none (0), a scalar, or one value per slice along dim 0
// (`per` elements each; set here); checked against t's type and shape.
inline std::vector<int64_t> channel_zero_points(KernelContext& ctx, const Tensor& t, const Tensor* zp, const char* what,
                                                uint64_t& per) {
  per = t.element_count();
  if (!zp || zp->element_count() == 0) return {0};
  if (zp->dtype() != t.dtype()) ctx.fail(std::string(what) + " zero point must have the same type as the input");
  if (zp->element_count() > 1) {
    if (zp->rank() != 1 || t.rank() < 1 || zp->shape()[0] != t.shape()[0])
      ctx.fail(std::string(what) + " zero point must be a scalar or have one value per output channel, got " +
               shape_to_string(zp->shape()));
    per = t.shape()[0] == 0 ? 0 : t.element_count() / static_cast<uint64_t>(t.shape()[0]);
  }
  std::vector<int64_t> z(zp->element_count());
  for (uint64_t i = 0; i < z.size(); ++i) z[i] = zp->element_as_int64(i);
  return z;
}

// Integer values of a tensor with its zero point (channel_zero_points) subtracted.
inline std::vector<int64_t> shifted_ints(KernelContext& ctx, const Tensor& t, const Tensor* zp, const char* what) {
  uint64_t per = 0;
  const std::vector<int64_t> z = channel_zero_points(ctx, t, zp, what, per);
  std::vector<int64_t> v(t.element_count());
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = t.element_as_int64(i) - z[per == 0 ? 0 : i / per];
  return v;
}

inline void check_int8(KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::Int8 && t.dtype() != DataType::Uint8)
    ctx.fail(std::string(what) + " must be int8 or uint8, got " + std::string(dtype_name(t.dtype())));
}

}  // namespace onnxscope::ref
