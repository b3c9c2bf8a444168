// Operators the CPU engine's passes create, in domain "onnxscope.cpu" (opset 1).
// The contract between the fusion passes and the kernels that run them:
//
//  FusedConv(X, W, [B]) -> Y
//     every Conv attribute (auto_pad, dilations, group, kernel_shape, pads, strides), plus
//     activation: string, "" (none), "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "Gelu"
//     activation_params: floats, LeakyRelu [alpha]; Clip [min, max]; HardSigmoid [alpha, beta];
//                        Gelu [0: exact (erf), 1: tanh approximation]
//     Y = activation(Conv(X, W, B))
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
// Each fused node names the original nodes it replaces in its metadata
// (optimizer.h: kFusedFrom). Reference-quality kernels for all three live in
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

// Activations a fusion may absorb, with their parameter count.
struct FusableActivation {
  const char* op;
  int params;
};
inline constexpr FusableActivation kFusableActivations[] = {
    {"Relu", 0}, {"LeakyRelu", 1}, {"Sigmoid", 0}, {"Tanh", 0}, {"Clip", 2}, {"HardSigmoid", 2}, {"Gelu", 1}};

}  // namespace onnxscope::cpu
