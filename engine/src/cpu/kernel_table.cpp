// The one kernel table of the CPU engine. Each family registers its kernels
// (oneDNN primitives, Eigen / threaded loops); anything not covered here, or
// not accepted by a kernel's `accepts`, falls back to the reference kernel.
#include "cpu/kernels/kernels.h"
#include "onnxscope/cpu.h"

namespace onnxscope {

const KernelRegistry& cpu_kernels() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    cpu::register_batch_norm_kernels(r);  // before oneDNN's: faster on plain NCHW
    cpu::register_softmax_axis_kernels(r);  // before oneDNN's: it takes an inner axis by a reference loop
    cpu::register_softmax_rows_kernels(r);  // before oneDNN's: faster where the CPU has AVX-512
    cpu::register_global_pool_kernels(r);  // before oneDNN's: faster on plain layouts
    cpu::register_nchwc_reorder_kernels(r);  // before oneDNN's: its reorder is slow where channels pad the last block
    cpu::register_nhwc_reorder_kernels(r);
    cpu::register_global_pool_nchwc_kernels(r);  // before oneDNN's: a few microseconds less per call on small planes
    cpu::register_pool_nchwc_kernels(r);  // before oneDNN's: one vector per pixel, no primitive call per run
    cpu::register_unary_avx512_kernels(r);  // before oneDNN's eltwise and the Eigen kernels (where the CPU has AVX-512)
    cpu::register_unary_avx2_kernels(r);  // the same where it has AVX2 only
    cpu::register_average_pool_kernels(r);  // before oneDNN's: faster on the plain layout (the blocked layout stays oneDNN's)
    cpu::register_max_pool_kernels(r);  // before oneDNN's: faster on the plain layout (the blocked layout stays oneDNN's)
    cpu::register_depthwise_conv_kernels(r);  // before oneDNN's: a plain depthwise Conv without two reorders around it
    cpu::register_conv1d_kernels(r);  // before oneDNN's: no layout reorders around a 1-D convolution
    cpu::register_grouped_conv_nchwc_kernels(r);  // before oneDNN's: it has no kernel for groups narrower than a block on nChw16c
    cpu::register_winograd_conv_nchwc_kernels(r);  // before oneDNN's: fewer multiplies than its AVX2 direct 3x3 convolution
    cpu::register_small_matmul_kernels(r);  // before oneDNN's: no primitive call for a product of a few rows by a small B
    cpu::register_float_gemm_avx2_kernels(r);  // before oneDNN's: its AVX2 matmul ran Linear layers at ~57% of the FMA peak
    cpu::register_variadic_kernels(r);  // before oneDNN's sum: no primitive call for small tensors
    cpu::register_onednn_kernels(r);
    cpu::register_clamp_kernels(r);
    cpu::register_eltwise_onednn_kernels(r);
    cpu::register_einsum_kernels(r);
    cpu::register_top_k_kernels(r);
    cpu::register_range_kernels(r);
    cpu::register_cumsum_kernels(r);
    cpu::register_qlinear_conv_1x1_kernels(r);  // before oneDNN's: requantizes each tile in cache
    cpu::register_qgemm_vnni_kernels(r);  // before oneDNN's int8 matmul: the same
    cpu::register_qlinear_matmul_vnni_kernels(r);  // before the Eigen form of batched products
    cpu::register_matmul_integer_vnni_kernels(r);  // before oneDNN's int8 matmul
    cpu::register_qlinear_conv_depthwise_kernels(r);  // before oneDNN's: the same
    cpu::register_conv_integer_product_kernels(r);  // before oneDNN's: where it cannot run exactly (no VNNI)
    cpu::register_conv_integer_kernels(r);
    cpu::register_matmul_integer_kernels(r);
    cpu::register_qgemm_kernels(r);  // after: oneDNN's int8 matmul keeps the 2-D QLinearMatMuls
    cpu::register_quantize_linear_kernels(r);
    cpu::register_elementwise_kernels(r);
    cpu::register_reduce_kernels(r);
    cpu::register_arg_extreme_kernels(r);
    cpu::register_slice_kernels(r);
    cpu::register_pad_kernels(r);
    cpu::register_cast_kernels(r);
    cpu::register_split_kernels(r);
    cpu::register_gather_kernels(r);
    cpu::register_expand_tile_kernels(r);
    cpu::register_resize_kernels(r);
    cpu::register_depth_space_kernels(r);
    cpu::register_scatter_gather_elements_kernels(r);
    cpu::register_data_movement_kernels(r);
    cpu::register_transpose_kernels(r);
    cpu::register_layer_norm_kernels(r);
    cpu::register_skip_layer_norm_kernels(r);
    cpu::register_matmul_nbits_kernels(r);
    cpu::register_qlinear_binary_kernels(r);
    cpu::register_byte_lookup_kernels(r);
    cpu::register_qlinear_concat_kernels(r);
    cpu::register_qlinear_average_pool_kernels(r);
    cpu::register_qlinear_softmax_kernels(r);
    cpu::register_fused_attention_kernels(r);
    cpu::register_group_query_attention_kernels(r);
    cpu::register_contrib_attention_kernels(r);
    cpu::register_rms_norm_kernels(r);
    cpu::register_rotary_half_kernels(r);
    cpu::register_instance_group_norm_kernels(r);
    cpu::register_where_kernels(r);
    cpu::register_nchwc_scale_shift_kernel(r);
    cpu::register_squeeze_excite_nchwc_kernels(r);
    cpu::register_tree_ensemble_kernels(r);
    cpu::register_fused_reference_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace onnxscope
