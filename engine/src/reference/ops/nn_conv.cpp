// Convolutions: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv.
// Float inputs (float16, bfloat16, float, double) are widened to double and
// every product is accumulated in double, then rounded once on store (Conv:
// nn/conv_f64.h, a matrix product for the interior); integer
// convolutions accumulate in int64 (exact for the int8/uint8 inputs allowed).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // products and sums round as written (conv_f64.h)
#endif
#include <cmath>
#include <limits>

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/conv_f64.h"
#include "reference/ops/nn_parts.h"

namespace onnxscope::ref {
namespace {

using nn::Counter;
using nn::Window;

// Shape checks shared by the convolutions; returns the resolved window.
Window conv_window(KernelContext& ctx, const Shape& xs, const Shape& ws, int64_t group, bool transpose) {
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
    Window w;
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
                         const Window& win, int64_t group) {
  const int64_t N = xs[0], C = xs[1], M = ws[0], Cg = C / group, Mg = M / group;
  const size_t k = win.in.size();
  const int64_t IS = nn::product(win.in), OS = nn::product(win.out), KS = nn::product(win.kernel);
  const auto in_strides = strides_of(win.in);
  std::vector<T> y(static_cast<size_t>(N * M * OS), T(0));
  // Kernel positions as index vectors.
  std::vector<std::vector<int64_t>> kpos;
  for (Counter kc(win.kernel); kc.valid(); kc.next()) kpos.push_back(kc.index);
  std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel flat index, input flat index) inside the input
  int64_t op = 0;
  for (Counter oc(win.out); oc.valid(); oc.next(), ++op) {
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

Shape output_shape_of(const Shape& xs, int64_t M, const std::vector<int64_t>& out) {
  Shape s{xs[0], M};
  s.insert(s.end(), out.begin(), out.end());
  return s;
}

void Conv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (w.dtype() != x.dtype()) ctx.fail("X and W must have the same element type");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  const int64_t M = w.shape()[0];
  const Tensor* b = ctx.optional_input(2);
  if (b && static_cast<int64_t>(b->element_count()) != M)
    ctx.fail("B has " + std::to_string(b->element_count()) + " values, expected " + std::to_string(M) + " (one per output channel)");
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& out = ctx.allocate_output(0, x.dtype(), output_shape_of(x.shape(), M, win.out));
    nn::conv_f64<S>(x, w, b, win, group, out);
  });
}

// Integer values of a tensor with a zero point subtracted; the zero point is a
// scalar or (when per_channel_dim is given) one value per slice along dim 0.
std::vector<int64_t> shifted_ints(KernelContext& ctx, const Tensor& t, const Tensor* zp, const char* what) {
  std::vector<int64_t> v(t.element_count());
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = t.element_as_int64(i);
  if (!zp || zp->element_count() == 0) return v;
  if (zp->dtype() != t.dtype()) ctx.fail(std::string(what) + " zero point must have the same type as the input");
  if (zp->element_count() == 1) {
    const int64_t z = zp->element_as_int64(0);
    for (auto& e : v) e -= z;
    return v;
  }
  // Per-channel (dim 0) zero point.
  if (zp->rank() != 1 || t.rank() < 1 || zp->shape()[0] != t.shape()[0])
    ctx.fail(std::string(what) + " zero point must be a scalar or have one value per output channel, got " +
             shape_to_string(zp->shape()));
  const uint64_t per = t.shape()[0] == 0 ? 0 : t.element_count() / static_cast<uint64_t>(t.shape()[0]);
  for (uint64_t i = 0; i < v.size(); ++i) v[i] -= zp->element_as_int64(i / per);
  return v;
}

void check_int8(KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::Int8 && t.dtype() != DataType::Uint8)
    ctx.fail(std::string(what) + " must be int8 or uint8, got " + std::string(dtype_name(t.dtype())));
}

void ConvInteger(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  check_int8(ctx, x, "x");
  check_int8(ctx, w, "w");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  const Tensor* xzp = ctx.optional_input(2);
  if (xzp && xzp->element_count() > 1) ctx.fail("x_zero_point must be a scalar");
  std::vector<int64_t> y = conv_core(shifted_ints(ctx, x, xzp, "x"), x.shape(),
                                     shifted_ints(ctx, w, ctx.optional_input(3), "w"), w.shape(), win, group);
  Tensor& out = ctx.allocate_output(0, DataType::Int32, output_shape_of(x.shape(), w.shape()[0], win.out));
  for (uint64_t i = 0; i < y.size(); ++i) store<int32_t>(out, i, static_cast<int32_t>(y[i]));
}

float scalar_float(KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.element_count() != 1) ctx.fail(std::string(what) + " must be a scalar");
  return static_cast<float>(t.element_as_double(0));
}

void QLinearConv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(3);
  check_int8(ctx, x, "x");
  check_int8(ctx, w, "w");
  const Tensor& xzp = ctx.input(2);
  const Tensor& yzp = ctx.input(7);
  if (xzp.element_count() != 1) ctx.fail("x_zero_point must be a scalar");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  std::vector<int64_t> acc = conv_core(shifted_ints(ctx, x, &xzp, "x"), x.shape(),
                                       shifted_ints(ctx, w, &ctx.input(5), "w"), w.shape(), win, group);
  const int64_t N = x.shape()[0], M = w.shape()[0], OS = nn::product(win.out);
  if (const Tensor* b = ctx.optional_input(8)) {
    if (b->dtype() != DataType::Int32) ctx.fail("B must be int32");
    std::vector<int64_t> bias(b->element_count());
    for (uint64_t i = 0; i < bias.size(); ++i) bias[i] = b->element_as_int64(i);
    add_bias(ctx, acc, N, M, OS, bias);
  }
  const float x_scale = scalar_float(ctx, ctx.input(1), "x_scale");
  const float y_scale = scalar_float(ctx, ctx.input(6), "y_scale");
  const Tensor& ws = ctx.input(4);
  if (ws.element_count() != 1 && (ws.rank() != 1 || ws.shape()[0] != M))
    ctx.fail("w_scale must be a scalar or have one value per output channel");
  if (yzp.element_count() != 1) ctx.fail("y_zero_point must be a scalar");
  const DataType out_type = yzp.dtype();
  check_int8(ctx, yzp, "y_zero_point");
  const double lo = out_type == DataType::Int8 ? -128 : 0, hi = out_type == DataType::Int8 ? 127 : 255;
  const double zp = yzp.element_as_double(0);
  Tensor& out = ctx.allocate_output(0, out_type, output_shape_of(x.shape(), M, win.out));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      // The requantisation multiplier is formed in float, like the scales.
      const float w_scale = static_cast<float>(ws.element_as_double(ws.element_count() == 1 ? 0 : m));
      const double mult = static_cast<float>(x_scale * w_scale / y_scale);
      for (int64_t o = 0; o < OS; ++o) {
        const uint64_t i = static_cast<uint64_t>((n * M + m) * OS + o);
        // A NaN multiplier (scales of 0 / 0, NaN or inf) gives the zero point, as QuantizeLinear's NaN does.
        const double r = std::nearbyint(static_cast<double>(acc[i]) * mult);
        const double q = std::clamp((std::isnan(r) ? 0.0 : r) + zp, lo, hi);
        if (out_type == DataType::Int8) store<int8_t>(out, i, static_cast<int8_t>(q));
        else store<uint8_t>(out, i, static_cast<uint8_t>(q));
      }
    }
}

// Python-style floor division (for pads derived from output_shape, which may be negative).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

void ConvTranspose(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  if (w.dtype() != x.dtype()) ctx.fail("X and W must have the same element type");
  const int64_t group = ctx.attr_int("group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, true);
  const Shape& xs = x.shape();
  const size_t k = xs.size() - 2;
  const int64_t N = xs[0], C = xs[1], Cg = C / group, Mg = w.shape()[1], M = Mg * group;
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(k, 0));
  if (out_pad.empty()) out_pad.assign(k, 0);
  if (out_pad.size() != k) ctx.fail("output_padding must have one value per spatial dimension");
  for (size_t d = 0; d < k; ++d)
    if (out_pad[d] < 0 || (out_pad[d] >= win.strides[d] && out_pad[d] >= win.dilations[d]))
      ctx.fail("output_padding must be smaller than the stride or the dilation");
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && auto_pad != "VALID" && !auto_pad.empty())
    ctx.fail("auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, got '" + auto_pad + "'");
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * k, 0));
  if (pads.empty()) pads.assign(2 * k, 0);
  if (pads.size() != 2 * k) ctx.fail("pads must have 2 values per spatial dimension");
  std::vector<int64_t> out_shape = ctx.attr_ints("output_shape");
  if (out_shape.size() == k + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (!out_shape.empty() && out_shape.size() != k) ctx.fail("output_shape must have one value per spatial dimension");
  for (int64_t v : out_shape)
    if (v < 0 || v > nn::kMaxWindowValue) ctx.fail("output_shape values must be in [0, 2^40]");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  win.pad_begin.assign(k, 0);
  win.pad_end.assign(k, 0);
  win.out.assign(k, 0);
  for (size_t d = 0; d < k; ++d) {
    const int64_t span = (win.kernel[d] - 1) * win.dilations[d] + 1;
    const int64_t full = win.strides[d] * (xs[d + 2] - 1) + out_pad[d] + span;  // unpadded output extent
    if (!out_shape.empty() || same) {
      // Pads follow from the requested output size (output_shape, or in * stride for SAME).
      win.out[d] = !out_shape.empty() ? out_shape[d] : xs[d + 2] * win.strides[d];
      const int64_t total = full - win.out[d];
      const int64_t half = floor_div(total, 2);
      win.pad_begin[d] = auto_pad == "SAME_UPPER" ? half : total - half;
      win.pad_end[d] = total - win.pad_begin[d];
    } else {
      if (pads[d] < 0 || pads[k + d] < 0 || pads[d] > nn::kMaxWindowValue || pads[k + d] > nn::kMaxWindowValue)
        ctx.fail("pads must be in [0, 2^40]");
      if (auto_pad != "VALID") {
        win.pad_begin[d] = pads[d];
        win.pad_end[d] = pads[k + d];
      }
      win.out[d] = full - win.pad_begin[d] - win.pad_end[d];
    }
    if (win.out[d] < 0) ctx.fail("the output size of spatial dimension " + std::to_string(d) + " is negative");
  }
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x), wv = real_values(w);
    const int64_t IS = nn::product(win.in), OS = nn::product(win.out), KS = nn::product(win.kernel);
    const auto out_strides = strides_of(win.out);
    // Scatter form: y[n, m, i * stride - pad + k * dilation] += x[n, c, i] * w[c, m, k],
    // accumulated in double.
    check_work_buffer(ctx, {N, M, OS}, "the output (in double)");
    std::vector<double> y(static_cast<size_t>(N * M * OS), 0.0);
    std::vector<std::vector<int64_t>> kpos;
    for (Counter kc(win.kernel); kc.valid(); kc.next()) kpos.push_back(kc.index);
    std::vector<std::pair<int64_t, int64_t>> taps;  // (kernel flat index, output flat index)
    int64_t ip = 0;
    for (Counter ic(win.in); ic.valid(); ic.next(), ++ip) {
      if ((ip & 63) == 0) poll_deadline();
      taps.clear();
      for (int64_t kp = 0; kp < KS; ++kp) {
        int64_t op = 0;
        bool inside = true;
        for (size_t d = 0; d < k && inside; ++d) {
          const int64_t pos = ic.index[d] * win.strides[d] - win.pad_begin[d] + kpos[kp][d] * win.dilations[d];
          if (pos < 0 || pos >= win.out[d]) inside = false;
          op += pos * out_strides[d];
        }
        if (inside) taps.emplace_back(kp, op);
      }
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t g = c / Cg;
          const double xval = xv[(n * C + c) * IS + ip];
          for (int64_t mm = 0; mm < Mg; ++mm) {
            const double* wp = wv.data() + (c * Mg + mm) * KS;
            double* yp = y.data() + (n * M + g * Mg + mm) * OS;
            for (const auto& [kp, op] : taps) yp[op] += xval * wp[kp];
          }
        }
    }
    if (const Tensor* b = ctx.optional_input(2)) add_bias(ctx, y, N, M, OS, real_values(*b));
    Tensor& out = ctx.allocate_output(0, x.dtype(), output_shape_of(xs, M, win.out));
    nn::put_all<S>(out, y);
  });
}

// Bilinear sample of a 2-D plane at (h, w); taps outside the plane read 0.
double bilinear_zero(const double* plane, int64_t H, int64_t W, double h, double w) {
  // Offsets from data: NaN or inf makes NaN weights (as numpy's would); far outside, every tap reads 0.
  if (!std::isfinite(h) || !std::isfinite(w)) return NAN;
  if (std::fabs(h) > 4.0e15 || std::fabs(w) > 4.0e15) return 0.0;
  const double h0f = std::floor(h), w0f = std::floor(w);
  const int64_t h0 = static_cast<int64_t>(h0f), w0 = static_cast<int64_t>(w0f);
  const double lh = h - h0f, lw = w - w0f;
  auto at = [&](int64_t r, int64_t c) { return (r < 0 || r >= H || c < 0 || c >= W) ? 0.0 : plane[r * W + c]; };
  return (1 - lh) * (1 - lw) * at(h0, w0) + (1 - lh) * lw * at(h0, w0 + 1) + lh * (1 - lw) * at(h0 + 1, w0) +
         lh * lw * at(h0 + 1, w0 + 1);
}

// DeformConv (2-D): like Conv, but each kernel tap is moved by a learned
// offset and sampled bilinearly (zero outside), optionally scaled by a mask.
void DeformConv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& offset = ctx.input(2);
  if (x.rank() != 4) ctx.fail("DeformConv supports 2-D inputs [N, C, H, W] only, got " + shape_to_string(x.shape()));
  if (w.dtype() != x.dtype() || offset.dtype() != x.dtype()) ctx.fail("X, W and offset must have the same element type");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t offset_group = ctx.attr_int("offset_group", 1);
  Window win = conv_window(ctx, x.shape(), w.shape(), group, false);
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[0], Cg = C / group, Mg = M / group;
  const int64_t kH = win.kernel[0], kW = win.kernel[1], KS = kH * kW;
  const int64_t oH = win.out[0], oW = win.out[1];
  if (offset_group < 1 || C % offset_group != 0) ctx.fail("offset_group must divide the input channels");
  if (offset.shape() != Shape{N, offset_group * KS * 2, oH, oW})
    ctx.fail("offset must have shape " + shape_to_string(Shape{N, offset_group * KS * 2, oH, oW}) + ", got " +
             shape_to_string(offset.shape()));
  const Tensor* mask = ctx.optional_input(4);
  if (mask && mask->shape() != Shape{N, offset_group * KS, oH, oW})
    ctx.fail("mask must have shape " + shape_to_string(Shape{N, offset_group * KS, oH, oW}) + ", got " +
             shape_to_string(mask->shape()));
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::vector<double> xv = real_values(x), wv = real_values(w), ov = real_values(offset);
    const std::vector<double> mv = mask ? real_values(*mask) : std::vector<double>();
    const int64_t Cog = C / offset_group, OS = oH * oW;
    check_work_buffer(ctx, {N, M, OS}, "the output (in double)");
    check_work_buffer(ctx, {C, KS}, "the sampled columns");
    std::vector<double> y(static_cast<size_t>(N * M * OS), 0.0);  // accumulated in double
    std::vector<double> samples(static_cast<size_t>(C * KS));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < oH; ++oh, poll_deadline())
        for (int64_t ow = 0; ow < oW; ++ow) {
          // Sample every input channel at every (offset) kernel tap.
          for (int64_t c = 0; c < C; ++c) {
            const int64_t og = c / Cog;
            for (int64_t kp = 0; kp < KS; ++kp) {
              const int64_t kh = kp / kW, kw = kp % kW;
              const int64_t ch = ((og * KS + kp) * 2);
              const double dh = ov[((n * offset_group * KS * 2 + ch) * oH + oh) * oW + ow];
              const double dw = ov[((n * offset_group * KS * 2 + ch + 1) * oH + oh) * oW + ow];
              const double h = static_cast<double>(oh * win.strides[0] - win.pad_begin[0] + kh * win.dilations[0]) + dh;
              const double wc = static_cast<double>(ow * win.strides[1] - win.pad_begin[1] + kw * win.dilations[1]) + dw;
              double v = bilinear_zero(xv.data() + (n * C + c) * H * W, H, W, h, wc);
              if (mask) v *= mv[((n * offset_group * KS + og * KS + kp) * oH + oh) * oW + ow];
              samples[c * KS + kp] = v;
            }
          }
          for (int64_t m = 0; m < M; ++m) {
            const int64_t g = m / Mg;
            double acc = 0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kp = 0; kp < KS; ++kp) acc += samples[(g * Cg + c) * KS + kp] * wv[(m * Cg + c) * KS + kp];
            y[(n * M + m) * OS + oh * oW + ow] = acc;
          }
        }
    if (const Tensor* b = ctx.optional_input(3)) add_bias(ctx, y, N, M, OS, real_values(*b));
    Tensor& out = ctx.allocate_output(0, x.dtype(), Shape{N, M, oH, oW});
    nn::put_all<S>(out, y);
  });
}

}  // namespace

void register_nn_conv_ops(KernelRegistry& r) {
  auto add = [&](const char* op, KernelFn fn, int since) { r.add(KernelDef{"", op, since, INT_MAX, "reference", fn, nullptr}); };
  add("Conv", Conv, 1);
  add("ConvTranspose", ConvTranspose, 1);
  add("ConvInteger", ConvInteger, 10);
  add("QLinearConv", QLinearConv, 10);
  add("DeformConv", DeformConv, 19);
}

}  // namespace onnxscope::ref
