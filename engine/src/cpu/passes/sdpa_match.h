// Scaled dot-product attention as exporters decompose it, found from the
// MatMul of Q and K^T (shared by fuse-sdpa and fuse-masked-sdpa):
//
//   Y = MatMul(G(Softmax(MatMul(Q * sq, K^T * sk) * s + Mask, axis=-1)), V)
//
// where each scaling (sq, sk: Mul by a positive constant scalar; s: Mul or
// Div by one) and the Mask (Add of a float tensor that broadcasts into the
// scores without enlarging them) may be absent, K^T is Transpose(K, [0,1,3,2]),
// or Transpose(K', [0,2,3,1]) of K' = K in [B, S, H, D] (K's own [0,2,1,3]
// Transpose merged into it by transpose cancellation; k_bshd), or
// torch.onnx's Reshape(Transpose(Reshape(K, [-1, S, D]), [0,2,1]),
// [B, H, D, S]) with both shapes read off Shape(K), and G is the identity or
// torch.onnx's NaN guard Where(IsNaN(P), 0, P). Q, K and V are 4-D float32
// with the same batch and head dims (no broadcasting, no grouped heads).
// Every intermediate must be private to the pattern.
//
// With `unknown_dims`, dims that are not two different numbers pass where
// equal dims are asked for (shape inference finds no dims for heads that
// come from Reshapes to computed shapes: the TorchScript exporter's GPT-2
// and BERT with torch's attention); the match then says so
// (unchecked_shapes), and its fused node promises only the unfused graph's
// values, whatever the shapes at run time (see fused_ops.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

struct SdpaMatch {
  std::string q, k, v, mask;  // mask: "" when there is none
  double scale_q = 1, scale_k = 1, scale = 1;
  bool nan_guard = false;
  bool reshaped_transpose = false;  // K^T as torch.onnx's Reshape/Transpose/Reshape
  bool k_bshd = false;              // k is [B, T, H, D] (K^T as Transpose [0,2,3,1])
  bool unchecked_shapes = false;    // an unknown dim was taken on trust (unknown_dims)
  std::string y;
  std::vector<const Node*> chain;  // the nodes Y replaces, last the MatMul with V
};

// The pattern whose MatMul(Q, K^T) is node `qk` of the model's graph.
std::optional<SdpaMatch> match_sdpa(const Model& model, const GraphIndex& idx, size_t qk, bool unknown_dims = false);

}  // namespace onnxscope::cpu
