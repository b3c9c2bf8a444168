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

// t minus its zero point (one value, or one per slice along dim 0) as a
// double tensor of t's shape; the checks of shifted_ints.
inline Tensor shifted_doubles(KernelContext& ctx, const Tensor& t, const Tensor* zp, const char* what) {
  const std::vector<int64_t> v = shifted_ints(ctx, t, zp, what);
  Tensor d = Tensor::zeros(DataType::Double, t.shape());
  double* p = d.mutable_data<double>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<double>(v[i]);
  return d;
}

// The sums, [N, M, spatial...], row-major, as exact integers in double.
inline std::vector<double> integer_conv_sums(KernelContext& ctx, const Tensor& x, const Tensor* xzp, const Tensor& w,
                                             const Tensor* wzp, const nn::Window& win, int64_t group) {
  const Shape out_shape = output_shape_of(x.shape(), w.shape()[0], win.out);
  const double terms = static_cast<double>(x.shape()[1] / group) * static_cast<double>(nn::product(win.kernel));
  if (!(terms * 383.0 * 383.0 < 9007199254740992.0)) {  // beyond double's integers: the int64 loop
    const std::vector<int64_t> s = conv_core(shifted_ints(ctx, x, xzp, "x"), x.shape(), shifted_ints(ctx, w, wzp, "w"),
                                             w.shape(), win, group);
    return std::vector<double>(s.begin(), s.end());
  }
  const Tensor xd = shifted_doubles(ctx, x, xzp, "x"), wd = shifted_doubles(ctx, w, wzp, "w");
  Tensor sums = Tensor::zeros(DataType::Double, out_shape);
  nn::conv_f64<double>(xd, wd, nullptr, win, group, sums);
  return std::vector<double>(sums.data<double>(), sums.data<double>() + sums.element_count());
}

}  // namespace onnxscope::ref
