// DeformConv (2-D): one thread per output element (n, m, oh, ow). Each
// kernel tap of each input channel of its group is moved by the learned
// offset, sampled bilinearly (zero outside the plane), scaled by the mask
// when there is one, and multiplied by its weight; all in double in the
// reference's order (channel, then tap), the bias added last.
#pragma once

#include <cmath>

#include "cuda/kernels/portable.h"

namespace onnxscope::cuda {

struct DeformConvKernel {
  int64_t N, C, H, W, M, oH, oW, kH, kW;
  int64_t group, offset_group;
  int64_t stride[2], pad[2], dilation[2];
  const float* x;       // [N, C, H, W]
  const float* w;       // [M, C / group, kH, kW]
  const float* offset;  // [N, offset_group * kH * kW * 2, oH, oW]
  const float* mask;    // [N, offset_group * kH * kW, oH, oW], or nullptr
  const float* bias;    // [M], or nullptr
  float* y;             // [N, M, oH, oW]

  OS_HD double sample(const float* plane, double h, double w_) const {
    // As the reference's bilinear_zero: NaN/inf offsets give NaN, far outside reads 0.
    if (!(h - h == 0) || !(w_ - w_ == 0)) return NAN;
    if (fabs(h) > 4.0e15 || fabs(w_) > 4.0e15) return 0.0;
    const double h0f = floor(h), w0f = floor(w_);
    const int64_t h0 = static_cast<int64_t>(h0f), w0 = static_cast<int64_t>(w0f);
    const double lh = h - h0f, lw = w_ - w0f;
    auto at = [&](int64_t r, int64_t c) -> double {
      return (r < 0 || r >= H || c < 0 || c >= W) ? 0.0 : static_cast<double>(plane[r * W + c]);
    };
    return (1 - lh) * (1 - lw) * at(h0, w0) + (1 - lh) * lw * at(h0, w0 + 1) + lh * (1 - lw) * at(h0 + 1, w0) +
           lh * lw * at(h0 + 1, w0 + 1);
  }

  OS_HD void operator()(int64_t i) const {
    const int64_t ow = i % oW, oh = (i / oW) % oH, m = (i / (oW * oH)) % M, n = i / (oW * oH * M);
    const int64_t KS = kH * kW, Cg = C / group, Mg = M / group, Cog = C / offset_group, g = m / Mg;
    double acc = 0;
    for (int64_t cc = 0; cc < Cg; ++cc) {
      const int64_t c = g * Cg + cc, og = c / Cog;
      for (int64_t kp = 0; kp < KS; ++kp) {
        const int64_t kh = kp / kW, kw = kp % kW, ch = (og * KS + kp) * 2;
        const double dh = offset[((n * offset_group * KS * 2 + ch) * oH + oh) * oW + ow];
        const double dw = offset[((n * offset_group * KS * 2 + ch + 1) * oH + oh) * oW + ow];
        const double h = static_cast<double>(oh * stride[0] - pad[0] + kh * dilation[0]) + dh;
        const double wc = static_cast<double>(ow * stride[1] - pad[1] + kw * dilation[1]) + dw;
        double v = sample(x + (n * C + c) * H * W, h, wc);
        if (mask) v *= mask[((n * offset_group * KS + og * KS + kp) * oH + oh) * oW + ow];
        acc += v * static_cast<double>(w[(m * Cg + cc) * KS + kp]);
      }
    }
    if (bias) acc += static_cast<double>(bias[m]);
    y[i] = static_cast<float>(acc);
  }
};

}  // namespace onnxscope::cuda
