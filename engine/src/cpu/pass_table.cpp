// The one pass table of the CPU engine, in the order passes run (optimize()
// repeats the table a few rounds, so a later pass can expose an earlier one's
// pattern). Folding first makes generated weights constant; structural
// cleanups next; fusions that need constant weights (Conv+BN) before the
// activation fusions that absorb what follows them; elementwise chains after
// every other fusion has taken its pattern.
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

const std::vector<Pass>& pass_table() {
  static const std::vector<Pass> table = {
      {{"eliminate-identity", 1, true, "drop Identity nodes, readers read the input"}, eliminate_identity},
      {{"expand-contrib-fused", 1, true,
        "com.microsoft FusedConv -> the engine's FusedConv; FusedMatMul -> [Transpose] MatMul [Mul alpha]"},
       expand_contrib_fused},
      {{"compute-low-precision-in-float32", 1, true,
        "float16/bfloat16 nodes compute in float32 between Casts (data movement and comparisons keep their type)"},
       compute_low_precision_in_float32},
      // Before constant-folding, which would turn DequantizeLinear of constant
      // weights into float weights.
      {{"fuse-qdq", 2, true,
        "DequantizeLinear -> Conv/MatMul/Gemm/Add/Mul/MaxPool/Reshape... -> QuantizeLinear -> QLinearConv, "
        "QLinearMatMul, QGemm, QLinearAdd/Mul, the op on 8-bit values (onnxruntime's QDQ format)"},
       fuse_qdq},
      {{"constant-folding", 1, true, "evaluate nodes with constant inputs once, at prepare time"}, constant_folding},
      {{"eliminate-dead-nodes", 1, true, "drop nodes whose outputs reach no graph output, and unread initializers"},
       eliminate_dead_nodes},
      {{"common-subexpression-elimination", 2, true, "merge nodes with the same op, inputs and attributes"},
       common_subexpression_elimination},
      {{"cancel-transpose-reshape", 2, true, "drop Transpose pairs that cancel, merge Reshape chains, drop no-op Reshapes"},
       cancel_transpose_reshape},
      {{"fold-conv-batchnorm", 2, true, "fold an inference BatchNormalization into the Conv before it"},
       fold_conv_batchnorm},
      {{"fold-conv-mul-add", 2, true, "fold a per-channel constant Mul or Add/Sub into the Conv before it"},
       fold_conv_mul_add},
      {{"fuse-layernorm", 3, true, "decomposed layer normalization -> LayerNormalization (opset >= 17)"}, fuse_layernorm},
      {{"fuse-rmsnorm", 3, true, "decomposed RMS normalization (Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul) -> RMSNormalization (opset >= 23)"},
       fuse_rmsnorm},
      {{"fuse-rotary", 3, true, "rotate_half rotary embedding (Slice/Neg/Concat/Mul/Add) -> RotaryHalf"}, fuse_rotary},
      {{"fuse-gelu", 3, true, "decomposed exact GELU -> Gelu (onnxscope.cpu::Gelu below opset 20)"}, fuse_gelu},
      {{"expand-contrib-gelu", 2, true, "com.microsoft BiasGelu / FastGelu / Gelu -> [Add +] Gelu (then fused into the MatMul before); QuickGelu -> [Mul +] Sigmoid + Mul (SiLU)"},
       expand_contrib_gelu},
      {{"fuse-sdpa", 3, true, "MatMul(Q, K^T) * scale -> Softmax -> MatMul(V) -> Attention (opset >= 23)"}, fuse_sdpa},
      {{"fuse-masked-sdpa", 3, true,
        "scaled Q and K^T, a mask, the NaN guard -> Softmax -> MatMul(V) -> FusedAttention (CPU engine: where the CPU "
        "has AVX-512)"},
       fuse_masked_sdpa},
      {{"fuse-quantized-lookup", 2, true,
        "8-bit DequantizeLinear, float activations, QuantizeLinear -> QuantizedLookup (the reference's 256 results)"},
       fuse_quantized_lookup},
      {{"fuse-matmul-integer-to-float", 2, true,
        "MatMulInteger + Cast + Mul(scales) [+ bias Add] -> MatMulIntegerToFloat, with its DynamicQuantizeLinear -> "
        "DynamicQuantizeMatMul (onnxruntime's quantize_dynamic output)"},
       fuse_matmul_integer_to_float},
      {{"matmul-add-to-gemm", 2, true, "2-D MatMul + bias Add -> Gemm"}, matmul_add_to_gemm},
      {{"fuse-conv-activation", 2, true, "Conv + activation -> FusedConv"}, fuse_conv_activation},
      {{"fuse-gemm-activation", 2, true, "Gemm + activation -> FusedGemm"}, fuse_gemm_activation},
      {{"fuse-matmul-bias-activation", 2, true, "MatMul + bias Add and/or activation -> FusedMatMul"},
       fuse_matmul_bias_activation},
      {{"fuse-attention-transposes", 3, true,
        "Transpose [0,2,1,3] on FusedAttention's Q, K, V and output -> read and written in place"},
       fuse_attention_transposes},
      {{"fuse-add-layernorm", 3, true, "residual Add + LayerNormalization -> FusedAddLayerNorm (device engines only)", true},
       fuse_add_layernorm},
      {{"fuse-conv-residual", 2, true, "Conv + residual Add [+ Relu] -> FusedConv with a sum input (device engines only)", true},
       fuse_conv_residual},
      {{"fuse-elementwise", 3, true, "chains of float32 elementwise ops -> FusedElementwise (device engines only)", true},
       fuse_elementwise, /*last=*/true},
      {{"nchwc-layout", 3, true, "blocked activations (nChw8c/16c) between convolutions, reorders only at the edges"},
       nchwc_layout, /*last=*/true},
      {{"fuse-squeeze-excitation", 3, true,
        "blocked GlobalAveragePool, two 1x1 NchwcConvs, Mul -> NchwcSqueezeExcite (after nchwc-layout)"},
       fuse_squeeze_excitation, /*last=*/true},
      {{"nhwc-int8-layout", 3, true,
        "QLinearConv chains on channels-last 8-bit activations (QLinearAdd/QLinearMul and MaxPool between), "
        "reorders only at the edges"},
       nhwc_int8_layout, /*last=*/true},
  };
  return table;
}

}  // namespace onnxscope::cpu
