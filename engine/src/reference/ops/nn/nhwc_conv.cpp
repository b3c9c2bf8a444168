// Reference kernel: com.microsoft NhwcConv (ONNX Runtime's contrib operator
// for channels-last convolution, as its transformers optimizer writes it for
// diffusion models' UNet and VAE: a Transpose to NHWC before, one back after).
//
//   X (N, D1, ..., Dn, C)   W (M, k1, ..., kn, C/group)   B (M)
//   Y (N, O1, ..., On, M) = Conv(X, W, B) with channels last
//
// Every Conv attribute (auto_pad, pads, strides, dilations, group,
// kernel_shape) with Conv's meaning. The operator's schema text is Conv's
// (it calls X N x C x H x W); the layout above is what ONNX Runtime's
// kernel and the optimizer that writes the operator (fusion_nhwc_conv.py,
// X and W transposed by perm [0, 2, 3, 1], Y back by [0, 3, 1, 2]) use.
// X and W are moved to channels first and the reference's Conv computes
// (conv_window, conv_f64: products and sums in double, rounded once), its
// result moved back to channels last.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // as nn/conv.cpp: products and sums round as written (conv_f64.h)
#endif
#include <cstring>
#include <string>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/conv_common.h"
#include "reference/ops/nn/conv_f64.h"

namespace onnxscope::ref {
namespace {

// Moves the last axis of `from` (outer, inner..., last) to position 1 in
// `to` (outer, last, inner...), or back when `to_last`; es bytes an element.
void move_channels(const Tensor& from, Tensor& to, uint64_t es, bool to_last) {
  const Shape& s = to_last ? to.shape() : from.shape();  // the channels-last shape
  if (from.element_count() == 0) return;
  const uint64_t outer = static_cast<uint64_t>(s.front()), C = static_cast<uint64_t>(s.back());
  const uint64_t P = from.element_count() / (outer * C);
  const std::byte* src = from.raw();
  std::byte* dst = to.mutable_raw();
  for (uint64_t n = 0; n < outer; ++n)
    for (uint64_t p = 0; p < P; ++p)
      for (uint64_t c = 0; c < C; ++c) {
        const uint64_t last = (n * P + p) * C + c, first = (n * C + c) * P + p;
        std::memcpy(dst + (to_last ? last : first) * es, src + (to_last ? first : last) * es, es);
      }
}

}  // namespace

void NhwcConv(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* b = ctx.optional_input(2);
  if (x.rank() < 3)
    ctx.fail("X must have shape [N, D1, ..., C] (channels last), got " + shape_to_string(x.shape()));
  if (w.rank() != x.rank())
    ctx.fail("W must have shape [M, k1, ..., C/group] of X's rank " + std::to_string(x.rank()) + ", got " +
             shape_to_string(w.shape()));
  if (w.dtype() != x.dtype())
    ctx.fail("W has element type " + std::string(dtype_name(w.dtype())) + ", X " + std::string(dtype_name(x.dtype())));
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  const int64_t group = ctx.attr_int("group", 1);
  // The channels-first shapes the reference's Conv reads.
  Shape xf{xs.front(), xs.back()}, wf{ws.front(), ws.back()};
  xf.insert(xf.end(), xs.begin() + 1, xs.end() - 1);
  wf.insert(wf.end(), ws.begin() + 1, ws.end() - 1);
  if (group >= 1 && wf[1] * group != xf[1])
    ctx.fail("X has " + std::to_string(xf[1]) + " channels (its last dimension) but W expects " +
             std::to_string(wf[1]) + " (its last dimension) x group " + std::to_string(group));
  const nn::Window win = conv_window(ctx, xf, wf, group, false);
  const int64_t M = ws.front();
  if (b && (b->rank() != 1 || b->shape()[0] != M))
    ctx.fail("B must have shape [" + std::to_string(M) + "] (one value per output channel), got " +
             shape_to_string(b->shape()));
  if (b && b->dtype() != x.dtype())
    ctx.fail("B has element type " + std::string(dtype_name(b->dtype())) + ", X " + std::string(dtype_name(x.dtype())));
  Shape ys{xs.front()};
  ys.insert(ys.end(), win.out.begin(), win.out.end());
  ys.push_back(M);
  dispatch<kFloats>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, x.dtype(), ys);  // size-checked: the channels-first copy is as large
    Tensor xt = Tensor::zeros(x.dtype(), xf), wt = Tensor::zeros(w.dtype(), wf);
    Tensor yt = Tensor::zeros(x.dtype(), output_shape_of(xf, M, win.out));
    move_channels(x, xt, sizeof(S), false);
    move_channels(w, wt, sizeof(S), false);
    nn::conv_f64<S>(xt, wt, b, win, group, yt);
    move_channels(yt, y, sizeof(S), true);
  });
}

}  // namespace onnxscope::ref
