// Registration functions of the reference operator families (one file each
// under engine/src/reference/ops/), called from op_table.cpp.
#pragma once

#include "onnxscope/kernel.h"

namespace onnxscope::ref {

void register_elementwise_ops(KernelRegistry& r);  // ops/elementwise.cpp: unary math, binary arithmetic, comparisons, logic
void register_tensor_shape_ops(KernelRegistry& r);  // ops/tensor_shape.cpp: shape and data movement: Identity, Constant, ConstantOfShape, Cast, CastLike, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand, Tile, Pad, Range, EyeLike, Trilu, DepthToSpace, SpaceToDepth, BitCast, CenterCropPad, Col2Im
void register_indexing_ops(KernelRegistry& r);  // ops/indexing.cpp: indexing and search: Gather, GatherElements, GatherND, Scatter, ScatterElements, ScatterND, TensorScatter, OneHot, NonZero, Compress, ReverseSequence, Unique, TopK, ArgMax, ArgMin, CumSum, CumProd
void register_reduce_norm_ops(KernelRegistry& r);  // ops/reduce_norm.cpp: reductions, softmax, normalization, losses: Reduce*, Softmax, LogSoftmax, Hardmax, LpNormalization, BatchNormalization, InstanceNormalization, LayerNormalization, GroupNormalization, RMSNormalization, LRN, MeanVarianceNormalization, Dropout, Clip, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
void register_nn_ops(KernelRegistry& r);  // ops/nn.cpp: convolution, pooling, matrix products, resampling: Conv, ConvTranspose, ConvInteger, DeformConv, QLinearConv, MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool, MatMul, MatMulInteger, QLinearMatMul, Gemm, Einsum, Det, Resize, Upsample, GridSample, AffineGrid, RoiAlign, NonMaxSuppression
void register_sequence_models_ops(KernelRegistry& r);  // ops/sequence_models.cpp: recurrent, attention, quantization, signal: RNN, GRU, LSTM, Attention, RotaryEmbedding, LinearAttention, CausalConvWithState, SwiGLU, ai.onnx.preview FlexAttention, QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix
void register_control_flow_ops(KernelRegistry& r);  // ops/control_flow.cpp: control flow, sequences, optionals: If, Loop, Scan, SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional, OptionalHasElement, OptionalGetElement
void register_text_random_ml_ops(KernelRegistry& r);  // ops/text_random_ml.cpp: strings, images, random, ai.onnx.ml, ai.onnx.preview.training: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer, ImageDecoder, RandomNormal(Like), RandomUniform(Like), Bernoulli, Multinomial, ai.onnx.ml ops, Adagrad, Adam, Momentum
void register_gradient_ops(KernelRegistry& r);  // ops/gradient.cpp: ai.onnx.preview.training Gradient (reverse-mode differentiation)
void register_ml_classic_ops(KernelRegistry& r);  // ops/ml_classic.cpp: ai.onnx.ml classic operators: CastMap, CategoryMapper, DictVectorizer, FeatureVectorizer, Imputer, Linear*, Normalizer, OneHotEncoder, SVM*, Scaler, TreeEnsemble{Classifier,Regressor}, ZipMap
void register_nn_roi_pool_ops(KernelRegistry& r);  // ops/nn_roi_pool.cpp: MaxRoiPool

}  // namespace onnxscope::ref
