// The exact integer sums of an 8-bit convolution (ConvInteger, QLinearConv):
//   sum[n, m, o] = sum over c and k of (x - zx)[n, c, ...] * (w - zw[m])[m, c, k]
// x and w minus their zero points as doubles (exact), through the float
// convolution's blocked product (nn/conv_f64.h) in double, into a double
// tensor: every difference is at most 383, so while C * KS stays below
// 2^53 / 383^2 every partial sum is an integer double holds and the sums are
// the integer loop's exactly, at any thread count. (The plain int64 loop
// ran a QOperator ViT's 16x16 patch embedding at 0.7 G multiply-adds a
// second.) Past that bound, the int64 loop (conv_core).
#pragma once

#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/nn/conv_common.h"
#include "reference/ops/nn/conv_f64.h"

namespace onnxscope::ref {

// t (8-bit) minus its zero point (channel_zero_points) as a double tensor
// of t's shape, written straight from the bytes.
inline Tensor shifted_doubles(KernelContext& ctx, const Tensor& t, const Tensor* zp, const char* what) {
  uint64_t per = 0;
  const std::vector<int64_t> z = channel_zero_points(ctx, t, zp, what, per);
  Tensor d = Tensor::zeros(DataType::Double, t.shape());
  double* out = d.mutable_data<double>();
  const auto* bytes = reinterpret_cast<const uint8_t*>(t.raw());
  const bool is_signed = t.dtype() == DataType::Int8;
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    const double v = is_signed ? static_cast<double>(static_cast<int8_t>(bytes[i])) : static_cast<double>(bytes[i]);
    out[i] = v - static_cast<double>(z[per == 0 ? 0 : i / per]);
  }
  return d;
}

// The sums, [N, M, spatial...], as exact integers in a double tensor.
inline Tensor integer_conv_sums(KernelContext& ctx, const Tensor& x, const Tensor* xzp, const Tensor& w, const Tensor* wzp,
                                const nn::Window& win, int64_t group) {
  Tensor sums = Tensor::zeros(DataType::Double, output_shape_of(x.shape(), w.shape()[0], win.out));
  const double terms = static_cast<double>(x.shape()[1] / group) * static_cast<double>(nn::product(win.kernel));
  if (!(terms * 383.0 * 383.0 < 9007199254740992.0)) {  // beyond double's integers: the int64 loop
    const std::vector<int64_t> s = conv_core(shifted_ints(ctx, x, xzp, "x"), x.shape(), shifted_ints(ctx, w, wzp, "w"),
                                             w.shape(), win, group);
    double* p = sums.mutable_data<double>();
    for (size_t i = 0; i < s.size(); ++i) p[i] = static_cast<double>(s[i]);  // (as the int64 sums' conversions did)
    return sums;
  }
  const Tensor xd = shifted_doubles(ctx, x, xzp, "x"), wd = shifted_doubles(ctx, w, wzp, "w");
  nn::conv_f64<double>(xd, wd, nullptr, win, group, sums);
  return sums;
}

}  // namespace onnxscope::ref
