// Every kernel functor the CUDA engine launches, in one list: the GPU's
// launch table (kernels/launch.cu) and the host's (kernels/launch_host.cpp)
// are both made from it, and a kernel's number is its place here.
#pragma once

#include <type_traits>

#include "cuda/kernels/attention.h"
#include "cuda/kernels/deform_conv.h"
#include "cuda/kernels/det.h"
#include "cuda/kernels/einsum.h"
#include "cuda/kernels/elementwise.h"
#include "cuda/kernels/grid_sample.h"
#include "cuda/kernels/integer.h"
#include "cuda/kernels/integer_math.h"
#include "cuda/kernels/lines.h"
#include "cuda/kernels/losses.h"
#include "cuda/kernels/llm_blocks.h"
#include "cuda/kernels/movement.h"
#include "cuda/kernels/nms.h"
#include "cuda/kernels/nonzero.h"
#include "cuda/kernels/quantize.h"
#include "cuda/kernels/recurrent.h"
#include "cuda/kernels/resize.h"
#include "cuda/kernels/roi_align.h"
#include "cuda/kernels/rows.h"
#include "cuda/kernels/scatter.h"
#include "cuda/kernels/signal.h"

namespace onnxscope::cuda {

template <class... K>
struct KernelList {
  static constexpr int size = sizeof...(K);
};

using AllKernels = KernelList<
    UnaryKernel, UnaryPredicateKernel, BinaryKernel, CompareKernel,
    WhereKernel<uint8_t>, WhereKernel<uint16_t>, WhereKernel<uint32_t>, WhereKernel<uint64_t>, ClipKernel, RoundToHalfKernel, EpilogueKernel, ElementwiseChainKernel,
    CastKernel, BatchNormFoldKernel, ChannelAffineKernel, StridedCopyKernel<uint8_t>, StridedCopyKernel<uint16_t>,
    StridedCopyKernel<uint32_t>, StridedCopyKernel<uint64_t>, StridedCopyKernel<Bytes16>, PointerTableKernel, StoreBytesKernel, GatherKernel<uint8_t>, GatherKernel<uint16_t>,
    GatherKernel<uint32_t>, GatherKernel<uint64_t>, GatherNDKernel<uint8_t>, GatherNDKernel<uint16_t>,
    GatherNDKernel<uint32_t>, GatherNDKernel<uint64_t>, GatherElementsKernel<uint8_t>, GatherElementsKernel<uint16_t>,
    GatherElementsKernel<uint32_t>, GatherElementsKernel<uint64_t>, ScatterKernel<uint8_t>, ScatterKernel<uint16_t>,
    ScatterKernel<uint32_t>, ScatterKernel<uint64_t>, ScatterKernel<float>, SoftmaxKernel, LayerNormKernel, ReduceKernel,
    PoolKernel, GroupNormKernel, RmsNormKernel, TriluKernel<uint8_t>, TriluKernel<uint16_t>, TriluKernel<uint32_t>,
    TriluKernel<uint64_t>, ArgReduceKernel<float>, ArgReduceKernel<int32_t>, ArgReduceKernel<int64_t>,
    CumulativeKernel<float>, CumulativeKernel<double>, CumulativeKernel<int32_t>, CumulativeKernel<int64_t>,
    ResizeNearestKernel<uint8_t>, ResizeNearestKernel<uint16_t>, ResizeNearestKernel<uint32_t>, ResizeNearestKernel<uint64_t>,
    ResizeAxisKernel, AttentionSoftmaxKernel, RotaryKernel, TopKKernel<float>, TopKKernel<int32_t>, TopKKernel<int64_t>, TopKKernel<uint64_t>,
    QuantizeKernel, DequantizeKernel, EinsumKernel, IntMatMulKernel, IntConvKernel, MinMaxPartialKernel,
    DynamicQuantParamsKernel, RecurrentStepKernel, RangeKernel, TopKCutKernel<float>, TopKCutKernel<int32_t>,
    TopKCutKernel<int64_t>, TopKCutKernel<uint64_t>, TopKSelectKernel<float>, TopKSelectKernel<int32_t>, TopKSelectKernel<int64_t>, TopKSelectKernel<uint64_t>,
    NonZeroCountKernel, NonZeroPlacesKernel, NonZeroWriteKernel, FillKernel, EyeKernel,
    IntegerBinaryKernel, BitwiseNotKernel, VariadicKernel, IntegerUnaryKernel, IntegerPowKernel,
    HardmaxKernel, LpNormKernel, LrnKernel, OneHotKernel, GridSampleKernel, AffineGridKernel, PadMapKernel,
    ScaleRoundKernel, NmsRankKernel, NmsSelectKernel, NmsWriteKernel, PackedCastKernel,
    SwiGluKernel, CausalConvKernel, CausalConvStateKernel, LinearAttentionKernel, RoiAlignKernel,
    LogSoftmaxLineKernel, NllLossKernel, NllReduceKernel, TensorScatterKernel,
    DftKernel, StftKernel, CosineWindowKernel, ReverseSequenceKernel, UnpoolClaimKernel, UnpoolWriteKernel, Col2ImKernel, DetKernel, DeformConvKernel, MelWeightKernel>;

template <class F, class... K>
constexpr int kernel_index(KernelList<K...>) {
  int i = 0;
  bool found = false;
  ((found = found || std::is_same_v<F, K>, i += found ? 0 : 1), ...);
  return found ? i : -1;
}

template <class F>
constexpr int kernel_id = kernel_index<F>(AllKernels{});

// nvcc compiles this as C++17: no concepts.
template <class F, class = void>
struct RowKernel : std::false_type {};
template <class F>
struct RowKernel<F, std::void_t<decltype(F::kRows)>> : std::bool_constant<F::kRows> {};

template <class F>
constexpr bool is_row_kernel() {
  return RowKernel<F>::value;
}

}  // namespace onnxscope::cuda
