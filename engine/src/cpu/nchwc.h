// The CPU engine's blocked activation layout (nChw8c / nChw16c, as ONNX
// Runtime's NCHWc transformer uses): a float32 [N, C, H, W] tensor held as
// [N, ceil(C/b), H, W, b], channels padded with zeros to a multiple of b.
// The nchwc-layout pass (passes/nchwc_layout.cpp) keeps activations in this
// layout between consecutive convolutions and the elementwise ops between
// them, so oneDNN's blocked kernels run without reorders around each call.
//
// Operators, in domain "onnxscope.cpu":
//   ToNchwc(X) -> Xb               block: int (8 or 16)
//   FromNchwc(Xb) -> X             channels: int (C, the logical channel count)
//   NchwcConv(X|Xb, W, [B], [Rb]) -> Yb
//                                  every Conv attribute, activation / activation_params
//                                  (fused_ops.h), block, plain_input (1: X is plain NCHW);
//                                  Yb = activation(Conv(X) + R) with the residual Rb
//   NchwcPool(Xb) -> Yb            op: string (MaxPool, AveragePool, GlobalMaxPool,
//                                  GlobalAveragePool), channels, block, and that
//                                  operator's own attributes; 2-D pooling of a blocked
//                                  value (zero padding channels stay zero)
//   NchwcScaleShift(Xb, S, T, [Xb2, ...]) -> Yb
//                                  Yb = Xb * S[c] + T[c], S and T float of ceil(C/b)*b
//                                  values, zero for padding channels (an inference
//                                  BatchNormalization of a blocked value); activation
//                                  "Relu" (optional): Yb = Relu(Xb * S[c] + T[c]); with
//                                  more inputs, Xb is the concatenation of Xb, Xb2, ...
//                                  along the channel blocks (all but the last whole blocks)
//   NchwcSqueezeExcite(Xb, W1, [B1], W2, [B2]) -> Yb   (fuse-squeeze-excitation)
//                                  channels: C, block; activation / activation_params and
//                                  gate / gate_params: two activations as fused_ops.h names
//                                  them (absent: none); W1 float [R, C, 1, 1], W2 [C, R, 1, 1]
//                                  Yb = Xb * gate(Conv(activation(Conv(GlobalAveragePool(X),
//                                  W1, B1)), W2, B2)), the scale per image and channel
#pragma once

#include <cstdint>
#include <cstring>

#include "onnxscope/tensor.h"

namespace onnxscope::cpu {

inline constexpr const char* kToNchwc = "ToNchwc";
inline constexpr const char* kFromNchwc = "FromNchwc";
inline constexpr const char* kNchwcConv = "NchwcConv";
inline constexpr const char* kNchwcPool = "NchwcPool";
inline constexpr const char* kNchwcScaleShift = "NchwcScaleShift";
inline constexpr const char* kNchwcSqueezeExcite = "NchwcSqueezeExcite";

// Whether `blocks` blocks of `block` channels hold exactly `channels`
// (ceil(channels / block) == blocks), for attribute values that may be
// anything (a model can carry these operators itself): no channels + block - 1
// to overflow.
inline bool blocks_hold(int64_t channels, int64_t blocks, int64_t block) {
  return channels > 0 && block > 0 && blocks > 0 && blocks <= INT64_MAX / block && channels <= blocks * block &&
         channels > (blocks - 1) * block;
}

// Blocked size of [N, C, H, W...]: [N, ceil(C/b), H, W..., b].
inline Shape nchwc_shape(const Shape& plain, int64_t block) {
  Shape s{plain[0], (plain[1] + block - 1) / block};
  s.insert(s.end(), plain.begin() + 2, plain.end());
  s.push_back(block);
  return s;
}

// Plain loops (the reference form of the two reorders).
inline Tensor to_nchwc(const Tensor& x, int64_t block) {
  const Shape& d = x.shape();
  Tensor y = Tensor::zeros(DataType::Float, nchwc_shape(d, block));
  int64_t spatial = 1;
  for (size_t i = 2; i < d.size(); ++i) spatial *= d[i];
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  const int64_t cb = (d[1] + block - 1) / block;
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t s = 0; s < spatial; ++s)
        out[((n * cb + c / block) * spatial + s) * block + c % block] = in[(n * d[1] + c) * spatial + s];
  return y;
}

inline Tensor from_nchwc(const Tensor& xb, int64_t channels) {
  const Shape& b = xb.shape();
  const int64_t block = b.back(), cb = b[1];
  Shape d{b[0], channels};
  d.insert(d.end(), b.begin() + 2, b.end() - 1);
  Tensor y = Tensor::zeros(DataType::Float, d);
  int64_t spatial = 1;
  for (size_t i = 2; i < d.size(); ++i) spatial *= d[i];
  const float* in = xb.data<float>();
  float* out = y.mutable_data<float>();
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s)
        out[(n * channels + c) * spatial + s] = in[((n * cb + c / block) * spatial + s) * block + c % block];
  return y;
}

}  // namespace onnxscope::cpu

namespace onnxscope::cpu {
// The block oneDNN's convolutions want on this CPU: 16 with AVX-512, 8 with
// AVX2, 0 (no blocked layout) otherwise (kernels/onednn_nchwc.cpp).
int64_t nchwc_block();
}  // namespace onnxscope::cpu
