// The CPU engine's channels-last layout for 8-bit activations: a QOperator
// model's [N, C, H, W] uint8/int8 tensor held as [N, H, W, C], the layout
// oneDNN's int8 convolutions read and write. The nhwc-int8-layout pass
// (passes/nhwc_int8_layout.cpp) keeps a chain of QLinearConv, QLinearAdd /
// QLinearMul and 8-bit MaxPool in it, as onnxruntime's NHWC transformer does
// for the same models: before, every QLinearConv reordered its input to NHWC
// and its result back (111 reorders a run of a QOperator MobileNetV2, more
// time than its convolutions).
//
// Operators, in domain "onnxscope.cpu":
//   ToNhwc(X) -> Xh          X of rank 3 to 5, any type: Xh = Transpose(X, [0, 2, ..., 1])
//   FromNhwc(Xh) -> X        the inverse
//   NhwcQLinearConv(Xh, x_scale, x_zero_point, W, w_scale, w_zero_point,
//                   y_scale, y_zero_point, [B]) -> Yh
//                            QLinearConv's inputs and attributes, X and Y channels last
//                            (W as QLinearConv's: [M, C/group, kH, kW])
//   NhwcMaxPool(Xh) -> Yh    MaxPool's attributes (Y only), X and Y channels last
#pragma once

#include <cstdint>
#include <cstring>

#include "onnxscope/tensor.h"

namespace onnxscope::cpu {

inline constexpr const char* kToNhwc = "ToNhwc";
inline constexpr const char* kFromNhwc = "FromNhwc";
inline constexpr const char* kNhwcQLinearConv = "NhwcQLinearConv";
inline constexpr const char* kNhwcMaxPool = "NhwcMaxPool";
// QuantizedLookup(X, table) -> Y: Y[i] = table[X[i] as a byte], X and Y 8-bit,
// table [256] of Y's type (fuse-quantized-lookup: a DequantizeLinear, float
// activations and a QuantizeLinear of one tensor, as the reference computes
// them for each of the 256 values). Any layout: elementwise. With attribute
// axis, a table per channel: [C, 256], Y[.., c, ..] = table[c][X[.., c, ..]]
// for c the index along that axis (1 plain, 3 channels last).
inline constexpr const char* kQuantizedLookup = "QuantizedLookup";

// [N, C, D...] -> [N, D..., C] and back.
inline Shape channels_last_shape(const Shape& plain) {
  Shape s{plain[0]};
  s.insert(s.end(), plain.begin() + 2, plain.end());
  s.push_back(plain[1]);
  return s;
}
inline Shape channels_first_shape(const Shape& last) {
  Shape s{last[0], last.back()};
  s.insert(s.end(), last.begin() + 1, last.end() - 1);
  return s;
}

// The reorder as plain loops over elements of any size (the reference form;
// kernels/tensor/nhwc_reorder.cpp has the tiled one). `to_last`: [N, C, S] ->
// [N, S, C], else the way back; `plain` is the [N, C, D...] shape.
inline Tensor reorder_channels(const Tensor& x, const Shape& plain, bool to_last) {
  Tensor y = Tensor::zeros(x.dtype(), to_last ? channels_last_shape(plain) : plain);
  const size_t e = x.element_count() ? x.byte_size() / x.element_count() : 1;
  int64_t spatial = 1;
  for (size_t i = 2; i < plain.size(); ++i) spatial *= plain[i];
  const int64_t C = plain[1];
  const std::byte* in = x.raw();
  std::byte* out = y.mutable_raw();
  for (int64_t n = 0; n < plain[0]; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t first = (n * C + c) * spatial + s, last = (n * spatial + s) * C + c;
        std::memcpy(out + static_cast<size_t>(to_last ? last : first) * e, in + static_cast<size_t>(to_last ? first : last) * e, e);
      }
  return y;
}

// Whether QLinearConv runs on oneDNN's int8 convolution on this CPU (VNNI),
// which reads and writes channels last: the pass has nothing to gain elsewhere
// (kernels/quantization/conv_integer.cpp).
bool int8_convolutions_channels_last();

}  // namespace onnxscope::cpu
