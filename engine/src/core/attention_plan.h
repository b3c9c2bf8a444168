// Attention's (ai.onnx 23 to 25) geometry, which the reference kernel and
// the CUDA engine share: heads and sequence lengths from 3-D or 4-D Q, K, V,
// the key/value cache, grouped query heads, how attn_mask broadcasts, and
// the attributes with the opset's defaults. Shapes and attributes only: each
// engine checks element types itself. Problems are thrown as
// std::invalid_argument with the reason, in the reference's words.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "onnxscope/ir.h"
#include "onnxscope/tensor.h"

namespace onnxscope::attention {

// What a node holds: its attributes (request_of), the shapes of its inputs
// (the caller's to fill; nullopt: the optional input is not given).
struct Request {
  int64_t opset = 23;
  std::optional<int64_t> q_num_heads, kv_num_heads;
  std::optional<float> scale;
  float softcap = 0;
  bool causal = false;
  int64_t mode = 0;  // qk_matmul_output_mode
  int64_t left = -1, right = -1;  // opset 25's window sizes
  Shape q, k, v;
  std::optional<Shape> mask, past_key, past_value, nonpad;
};

Request request_of(const Node& n, int64_t opset);

// Logical tensors are (B, H, S, D); `packed` (3-D inputs) stores them as
// (B, S, H * D). Query head h reads key/value head h / group (GQA). The
// present key/value are (B, Hkv, T, D) and (B, Hkv, T, Dv), T = P + Skv.
struct Geometry {
  bool packed = false;
  int64_t B = 0, Hq = 0, Hkv = 0, group = 1, Sq = 0, Skv = 0, P = 0, T = 0, D = 0, Dv = 0;
  double scale = 1;  // the attribute, else 1 / sqrt(D)
  double softcap = 0;
  bool causal = false;
  int64_t mode = 0, left = -1, right = -1;
  bool has_mask = false;
  // The mask broadcast to (B, Hq, Sq, Tm), Tm <= T: its element strides
  // (0 where broadcast); keys at Tm and past are masked.
  int64_t Tm = 0;
  std::array<int64_t, 4> mask_stride{};
  bool has_nonpad = false;

  Shape y_shape() const { return packed ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv}; }
  Shape present_key_shape() const { return {B, Hkv, T, D}; }
  Shape present_value_shape() const { return {B, Hkv, T, Dv}; }
  Shape qk_shape() const { return {B, Hq, Sq, T}; }
};

Geometry plan(const Request& r);

}  // namespace onnxscope::attention
