// Registration functions of the CPU kernel families (engine/src/cpu/kernels/).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

// For the duration of one run on this thread: graph initializers the oneDNN
// kernels reorder into a cached layout (weights) give their plain bytes back
// once the copy is made, so the weights are resident once. Read again, they
// are restored from the copy and stay. Only for a model no one else reads
// meanwhile (CpuOptions::release_repacked_weights).
class ReleaseRepackedWeights {
 public:
  explicit ReleaseRepackedWeights(bool on);
  ~ReleaseRepackedWeights();
  ReleaseRepackedWeights(const ReleaseRepackedWeights&) = delete;
  ReleaseRepackedWeights& operator=(const ReleaseRepackedWeights&) = delete;

 private:
  bool previous_;
};

// ONNXSCOPE_CPU_ISA=avx2 (core/cpu_features.h): oneDNN capped to AVX2 as well
// (unless DNNL_MAX_CPU_ISA says otherwise); called before the engine's first oneDNN use.
void apply_cpu_isa_cap();
void register_elementwise_kernels(KernelRegistry& r);  // kernels/math/elementwise.cpp: unary/binary/comparison/logic, Eigen, threaded
void register_eltwise_onednn_kernels(KernelRegistry& r);  // kernels/math/eltwise_onednn.cpp: float32 unary ops as oneDNN eltwise
void register_unary_avx512_kernels(KernelRegistry& r);
void register_unary_avx2_kernels(KernelRegistry& r);  // kernels/math/unary_avx2.cpp: Relu, Exp, Erf, Softplus, Mish, Sin, Cos on AVX2 without AVX-512
void register_float_gemm_avx2_kernels(KernelRegistry& r);  // kernels/math/float_gemm_avx2.cpp: MatMul/Gemm by a constant B on AVX2 without AVX-512
// Whether register_unary_avx512_kernels' kernel for `op` runs float16 itself (on this CPU).
bool unary_avx512_takes_half(const std::string& op);
// y = y sigmoid(y) over n floats on AVX-512, on the thread pool (kernels/math/unary_avx512.cpp).
void silu_in_place(float* y, int64_t n);  // kernels/math/unary_avx512.cpp: exp, log, sigmoid, tanh, erf, sin, cos, ... on AVX-512
void register_average_pool_kernels(KernelRegistry& r);  // kernels/nn/average_pool.cpp: AveragePool 2-D on plain NCHW, separable sums
void register_max_pool_kernels(KernelRegistry& r);  // kernels/nn/max_pool.cpp: MaxPool 2-D on plain NCHW (Y only), separable maxima
void register_pool_nchwc_kernels(KernelRegistry& r);  // kernels/nn/pool_nchwc.cpp: NchwcPool's MaxPool / AveragePool 2-D on the blocked layout
void register_depthwise_conv_kernels(KernelRegistry& r);  // kernels/nn/depthwise_conv.cpp: depthwise 2-D Conv on plain NCHW
// Whether that kernel runs a float16 `n` itself (on this CPU, its weights `constant` gives).
bool depthwise_conv_takes_half(const Node& n, const std::function<const Tensor*(const std::string&)>& constant);
void register_conv1d_kernels(KernelRegistry& r);  // kernels/nn/conv1d.cpp: 1-D Conv at unit stride as one sgemm per tap
void register_clamp_kernels(KernelRegistry& r);         // kernels/math/clamp.cpp: Clip, HardSigmoid with AVX-512 / AVX2
void register_softmax_axis_kernels(KernelRegistry& r);  // kernels/math/softmax_axis.cpp: (Log)Softmax over an axis not the last
void register_softmax_rows_kernels(KernelRegistry& r);  // kernels/math/softmax_rows.cpp: (Log)Softmax over the last axis on AVX-512
void register_reduce_kernels(KernelRegistry& r);        // kernels/reduction/reduce.cpp: Reduce* over one block of axes
void register_slice_kernels(KernelRegistry& r);         // kernels/tensor/slice.cpp: Slice as strided block copies
void register_pad_kernels(KernelRegistry& r);           // kernels/tensor/pad.cpp: Pad, every mode
void register_cast_kernels(KernelRegistry& r);          // kernels/tensor/cast.cpp: Cast between the common numeric types
// float16 <-> float32 over the threads, F16C where the CPU has it (what the Cast kernel runs; kernels/tensor/cast.cpp).
void half_cast(const void* src, void* dst, int64_t n, bool to_half);
// The same on the calling thread alone (NaN by the reference's rule, as the Cast kernel).
void half_to_float_run(const uint16_t* s, float* d, int64_t n);
void float_to_half_run(const float* s, uint16_t* d, int64_t n);
void register_split_kernels(KernelRegistry& r);         // kernels/tensor/split.cpp: Split as block copies
void register_gather_kernels(KernelRegistry& r);        // kernels/tensor/gather.cpp: Gather as block copies
void register_rms_norm_kernels(KernelRegistry& r);      // kernels/nn/rms_norm.cpp: RMSNormalization-23 (and onnxscope.cpu's), float32 rows
void register_rotary_half_kernels(KernelRegistry& r);   // kernels/nn/rotary_half.cpp: onnxscope.cpu::RotaryHalf, float32 rows
void register_resize_kernels(KernelRegistry& r);        // kernels/tensor/resize.cpp: Resize-11+, float32, every mode
void register_depth_space_kernels(KernelRegistry& r);   // kernels/tensor/depth_space.cpp: DepthToSpace, SpaceToDepth
void register_instance_group_norm_kernels(KernelRegistry& r);  // kernels/nn/instance_group_norm.cpp: InstanceNormalization, GroupNormalization-21
void register_arg_extreme_kernels(KernelRegistry& r);   // kernels/reduction/arg_extreme.cpp: ArgMax, ArgMin
void register_nchwc_reorder_kernels(KernelRegistry& r);  // kernels/tensor/nchwc_reorder.cpp: ToNchwc, FromNchwc at block 16 on AVX-512
void register_nhwc_reorder_kernels(KernelRegistry& r);   // kernels/tensor/nhwc_reorder.cpp: ToNhwc, FromNhwc (channels last <-> first)
void register_squeeze_excite_nchwc_kernels(KernelRegistry& r);  // kernels/nn/squeeze_excite_nchwc.cpp: NchwcSqueezeExcite, blocked
void register_grouped_conv_nchwc_kernels(KernelRegistry& r);  // kernels/nn/grouped_conv_nchwc.cpp: NchwcConv of groups of 2, 4 or 8 channels
void register_winograd_conv_nchwc_kernels(KernelRegistry& r);  // kernels/nn/winograd_conv_nchwc.cpp: NchwcConv 3x3 stride 1 by Winograd F(2x2, 3x3), AVX2
// Tests: the Winograd kernel takes its problems on AVX-512 CPUs too (where oneDNN keeps them), so that it is checked there.
void force_winograd_conv_on_avx512(bool on);
void register_global_pool_nchwc_kernels(KernelRegistry& r);  // kernels/reduction/global_pool_nchwc.cpp: NchwcPool's global poolings on the blocked layout
void register_global_pool_kernels(KernelRegistry& r);     // kernels/reduction/reduce.cpp: GlobalAveragePool, GlobalMaxPool on plain layouts
void register_cumsum_kernels(KernelRegistry& r);          // kernels/math/cumsum.cpp: CumSum of float/double/int32/int64
void register_range_kernels(KernelRegistry& r);           // kernels/generator/range.cpp: Range of int32/int64/float/double
void register_top_k_kernels(KernelRegistry& r);           // kernels/math/top_k.cpp: TopK of float32
void register_einsum_kernels(KernelRegistry& r);          // kernels/math/einsum.cpp: two-operand Einsum as a batched oneDNN matmul
void register_qlinear_conv_1x1_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_conv_1x1.cpp: 1x1 NhwcQLinearConv in AVX-512 VNNI
void register_qgemm_vnni_kernels(KernelRegistry& r);  // kernels/quantization/qgemm_vnni.cpp: QGemm in AVX-512 VNNI, output stage in registers
void register_matmul_integer_vnni_kernels(KernelRegistry& r);  // kernels/quantization/matmul_integer_vnni.cpp: MatMulInteger with constant B in AVX-512 VNNI
void register_qlinear_matmul_vnni_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_matmul_vnni.cpp: batched QLinearMatMul in AVX-512 VNNI
void register_qlinear_conv_depthwise_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_conv_depthwise.cpp: depthwise NhwcQLinearConv in AVX-512 VNNI
void register_conv_integer_product_kernels(KernelRegistry& r);  // kernels/quantization/conv_integer_product.cpp: ConvInteger, QLinearConv on the 8-bit product (no VNNI)
void register_conv_integer_kernels(KernelRegistry& r);    // kernels/quantization/conv_integer.cpp: ConvInteger, QLinearConv, oneDNN int8
void register_matmul_integer_kernels(KernelRegistry& r);  // kernels/quantization/matmul_integer.cpp: MatMulInteger, oneDNN int8
void register_contrib_attention_kernels(KernelRegistry& r);  // kernels/nn/contrib_attention.cpp: com.microsoft Attention, MultiHeadAttention, float32
void register_fused_attention_kernels(KernelRegistry& r);  // kernels/nn/fused_attention.cpp: onnxscope.cpu FusedAttention on AVX-512 or AVX2
void register_group_query_attention_kernels(KernelRegistry& r);  // kernels/nn/group_query_attention.cpp: com.microsoft GroupQueryAttention, float32
void register_qlinear_binary_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_binary.cpp: com.microsoft QLinearAdd, QLinearMul
void register_byte_lookup_kernels(KernelRegistry& r);  // kernels/quantization/byte_lookup.cpp: QLinearSigmoid, QLinearLeakyRelu, QuantizedLookup as tables
void register_qlinear_concat_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_concat.cpp: com.microsoft QLinearConcat
void register_qlinear_average_pool_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_average_pool.cpp: channels-last QLinearAveragePool
void register_qlinear_softmax_kernels(KernelRegistry& r);  // kernels/quantization/qlinear_softmax.cpp: QLinearSoftmax over contiguous rows
void register_qgemm_kernels(KernelRegistry& r);  // kernels/quantization/qgemm.cpp: com.microsoft QGemm, batched QLinearMatMul (exact double GEMM)
void register_matmul_nbits_kernels(KernelRegistry& r);  // kernels/quantization/matmul_nbits.cpp: com.microsoft MatMulNBits, 4/8-bit, packed weights
void register_quantize_linear_kernels(KernelRegistry& r);  // kernels/quantization/quantize_linear.cpp: (De)QuantizeLinear, DynamicQuantizeLinear
void register_batch_norm_kernels(KernelRegistry& r);    // kernels/nn/batch_norm.cpp: inference BatchNormalization as an affine map
void register_scatter_gather_elements_kernels(KernelRegistry& r);  // kernels/tensor/scatter_gather_elements.cpp: ScatterND, GatherElements
void register_expand_tile_kernels(KernelRegistry& r);   // kernels/tensor/expand_tile.cpp: Expand, Tile as strided copies
void register_onednn_kernels(KernelRegistry& r);       // kernels/onednn_*.cpp: Conv, MatMul, Gemm, pooling, softmax, normalization (and the fused ops)
void register_fused_reference_kernels(KernelRegistry& r);  // kernels/fused_reference.cpp: plain kernels of the fused ops (fused_ops.h)
void register_data_movement_kernels(KernelRegistry& r);    // kernels/data_movement.cpp: Concat as block copies
void register_transpose_kernels(KernelRegistry& r);        // kernels/transpose.cpp: merged axes, run copies or tiles
void register_layer_norm_kernels(KernelRegistry& r);       // kernels/layer_norm.cpp: float32 rows with Eigen
void register_skip_layer_norm_kernels(KernelRegistry& r);  // kernels/nn/skip_layer_norm.cpp: com.microsoft SkipLayerNormalization, SkipSimplifiedLayerNormalization
void register_where_kernels(KernelRegistry& r);            // kernels/where.cpp: Where with any broadcast
void register_nchwc_scale_shift_kernel(KernelRegistry& r);
void register_small_matmul_kernels(KernelRegistry& r);  // kernels/math/small_matmul.cpp: MatMul / FusedMatMul of a few rows by a small B, AVX-512, no primitive call
void register_variadic_kernels(KernelRegistry& r);  // kernels/math/variadic.cpp: Sum, Mean, Max, Min of same-shape float32 inputs
void register_tree_ensemble_kernels(KernelRegistry& r);  // kernels/ml/tree_ensemble.cpp: TreeEnsembleClassifier, TreeEnsembleRegressor, compiled once  // kernels/nchwc_scale_shift.cpp: per-channel affine, blocked

}  // namespace onnxscope::cpu
