// Operators the CPU engine's passes create, in domain "onnxscope.cpu" (opset 1).
// The contract between the fusion passes and the kernels that run them:
//
//  FusedConv(X, W, [B], [Z]) -> Y
//     every Conv attribute (auto_pad, dilations, group, kernel_shape, pads, strides), plus
//     activation: string, "" (none), "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "Gelu",
//                 "HardSwish", "Swish"
//     activation_params: floats, LeakyRelu [alpha]; Clip [min, max]; HardSigmoid [alpha, beta];
//                        Gelu [0: exact (erf), 1: tanh approximation]; Swish [alpha]: x * sigmoid(alpha * x)
//     Y = activation(Conv(X, W, B)), or with Z (a residual, fuse-conv-residual,
//     devices only): Y = activation(Add(Conv(X, W, B), Z)), Add's broadcasting included
//
//  FusedGemm(A, B, [C]) -> Y
//     every Gemm attribute (alpha, beta, transA, transB), plus activation / activation_params
//     Y = activation(Gemm(A, B, C))
//
//  FusedMatMul(A, B, [Bias]) -> Y
//     activation / activation_params; Bias is 1-D of size N (last dim of the product)
//     Y = activation(MatMul(A, B) + Bias)
//
//  Gelu(X) -> Y
//     approximate: "none" (default) or "tanh"; exactly ai.onnx Gelu-20, for
//     models below opset 20 (fuse-gelu emits ai.onnx Gelu from opset 20 on)
//
//  LayerNormalization(X, Scale, [B]) -> Y
//     axis, epsilon: exactly ai.onnx LayerNormalization-17 (its first output;
//     stash_type 1), for models below opset 17 (fuse-layernorm emits ai.onnx
//     LayerNormalization from opset 17 on)
//
//  RMSNormalization(X, Scale) -> Y
//     axis, epsilon, stash_type: exactly ai.onnx RMSNormalization-23, for
//     models below opset 23 (fuse-rmsnorm emits ai.onnx RMSNormalization
//     from opset 23 on)
//
//  RotaryHalf(X, Cos, Sin) -> Y                   (fuse-rotary; float32)
//     split: int h > 0
//     Y = Add(Mul(X, Cos), Mul(Concat(Neg(X[..., h:]), X[..., :h], axis=-1), Sin)),
//     the slices clamped to X's last dim as Slice clamps them, numpy
//     broadcasting in the Muls and the Add (the rotate_half of
//     transformers' apply_rotary_pos_emb)
//
//  FusedElementwise(X0, ..., Xn-1) -> Y          (n <= 4; made for devices only,
//     float32 throughout                          see fuse_elementwise.cpp)
//     ops: strings, the chain's operators in the order they compute (<= 8), each
//          one of kChainOps below (ai.onnx, the opset of the model)
//     operands: ints, two per op: its inputs' places in [X0 .. Xn-1, result of
//          op 0, op 1, ...]; -1 as a unary op's second
//     params: floats, three per op: its attributes with the spec's defaults
//          filled in, in kChainOps' order (Gelu: 1 for approximate="tanh")
//     Y = the last op's result, of the broadcast shape of X0 .. Xn-1
//
//  FusedAddLayerNorm(A, B, Scale, [Bias]) -> Y     (made for devices only,
//     LayerNormalization's attributes (axis,       see fuse_add_layernorm.cpp)
//     epsilon, stash_type); A and B of one shape, float32
//     Y = LayerNormalization(Add(A, B), Scale, Bias)
//
//  FusedAttention(Q, K, V, [Mask]) -> Y           (devices, and the CPU
//     float32 throughout                          where it has AVX-512: see
//                                                 fuse_masked_sdpa.cpp)
//     Q [B, H, Sq, D], K [B, H, T, D], V [B, H, T, Dv]; Mask broadcasts into
//     [B, H, Sq, T] (rank <= 4, each dim 1 or the scores')
//     scale_q, scale_k, scale: floats (1 when absent)
//     nan_to_zero: int, 1: probabilities that are NaN become 0
//     Y = MatMul(G(Softmax(MatMul(Q * scale_q, Transpose(K, [0,1,3,2]) * scale_k) * scale + Mask, axis=-1)), V)
//     bshd_in: int, bits 1 Q, 2 K, 4 V: that input given as [B, Sq, H, D], [B, T, H, D] or
//              [B, T, H, Dv] (the above's Transpose [0,2,1,3]; fuse-attention-transposes,
//              fuse-masked-sdpa for a K^T merged into one Transpose [0,2,3,1])
//     bshd_out: int, 1: Y written as [B, Sq, H, Dv]
//     unchecked_shapes: int, 1: the fusion did not know the dims (CPU engine
//              only); where Q, K, V or Mask do not have the shapes above at
//              run time, the node computes the unfused steps as they broadcast
//     with G(p) = IsNaN(p) ? 0 : p when nan_to_zero, else p (torch.onnx's
//     scaled_dot_product_attention below opset 23, where ai.onnx has no
//     Attention, and its NaN guard, which Attention does not have)
//
// Each fused node names the original nodes it replaces in its metadata
// (optimizer.h: kFusedFrom). Reference-quality kernels for all of them live in
// kernels/fused_reference.cpp so a fused graph always runs; faster ones
// (oneDNN) are registered before them.
#pragma once

#include <string>
#include <vector>

namespace onnxscope::cpu {

inline constexpr const char* kFusedConv = "FusedConv";
inline constexpr const char* kFusedGemm = "FusedGemm";
inline constexpr const char* kFusedMatMul = "FusedMatMul";
inline constexpr const char* kGelu = "Gelu";
inline constexpr const char* kLayerNorm = "LayerNormalization";
inline constexpr const char* kFusedElementwise = "FusedElementwise";
inline constexpr const char* kFusedAttention = "FusedAttention";
inline constexpr const char* kFusedAddLayerNorm = "FusedAddLayerNorm";
inline constexpr const char* kRMSNorm = "RMSNormalization";
inline constexpr const char* kRotaryHalf = "RotaryHalf";

// Activations a fusion may absorb, with their parameter count.
struct FusableActivation {
  const char* op;
  int params;
};
inline constexpr FusableActivation kFusableActivations[] = {
    {"Relu", 0}, {"LeakyRelu", 1}, {"Sigmoid", 0}, {"Tanh", 0}, {"Clip", 2}, {"HardSigmoid", 2}, {"Gelu", 1},
    {"HardSwish", 0}, {"Swish", 1}};

// The operators a FusedElementwise chain may hold: float32 elementwise math
// of one or two inputs, with up to three float attributes (and their
// defaults) kept as its params.
struct ChainOp {
  const char* op;
  int arity;
  const char* attrs[3];
  float defaults[3];
};
inline constexpr int kChainMaxOps = 8;
inline constexpr int kChainMaxInputs = 4;
inline constexpr ChainOp kChainOps[] = {
    {"Add", 2, {}, {}},        {"Sub", 2, {}, {}},       {"Mul", 2, {}, {}},      {"Div", 2, {}, {}},
    {"Pow", 2, {}, {}},        {"Max", 2, {}, {}},       {"Min", 2, {}, {}},      {"Relu", 1, {}, {}},
    {"Sigmoid", 1, {}, {}},    {"Tanh", 1, {}, {}},      {"Exp", 1, {}, {}},      {"Log", 1, {}, {}},
    {"Sqrt", 1, {}, {}},       {"Neg", 1, {}, {}},       {"Abs", 1, {}, {}},      {"Erf", 1, {}, {}},
    {"Reciprocal", 1, {}, {}}, {"Floor", 1, {}, {}},     {"Ceil", 1, {}, {}},     {"Round", 1, {}, {}},
    {"Sin", 1, {}, {}},        {"Cos", 1, {}, {}},       {"Sign", 1, {}, {}},     {"Softplus", 1, {}, {}},
    {"Softsign", 1, {}, {}},   {"HardSwish", 1, {}, {}}, {"Mish", 1, {}, {}},     {"Gelu", 1, {}, {}},
    {"LeakyRelu", 1, {"alpha"}, {0.01f}},
    {"Elu", 1, {"alpha"}, {1.f}},
    {"Celu", 1, {"alpha"}, {1.f}},
    {"ThresholdedRelu", 1, {"alpha"}, {1.f}},
    {"HardSigmoid", 1, {"alpha", "beta"}, {0.2f, 0.5f}},
    {"Selu", 1, {"alpha", "gamma"}, {1.67326319217681884765625f, 1.05070102214813232421875f}},
};

// The entry of `op` in kChainOps, or nullptr.
inline const ChainOp* chain_op(const std::string& op) {
  for (const ChainOp& c : kChainOps)
    if (op == c.op) return &c;
  return nullptr;
}

}  // namespace onnxscope::cpu
