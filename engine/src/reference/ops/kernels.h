// Every reference kernel, under the file that defines it
// (engine/src/reference/ops/<category>/<file>); op_table.cpp registers them
// with their opset versions.
#pragma once

#include "onnxscope/kernel.h"

namespace onnxscope::ref {

// --- math
// math/binary.cpp
void Add(KernelContext&); void Sub(KernelContext&); void Mul(KernelContext&); void Div(KernelContext&);
// math/bit_shift.cpp
void BitShift(KernelContext&);
// math/bitwise.cpp
void BitwiseNot(KernelContext&); void BitwiseAnd(KernelContext&); void BitwiseOr(KernelContext&);
void BitwiseXor(KernelContext&);
// math/clip.cpp
void Clip(KernelContext&);
// math/compare.cpp
void EqualStrings(KernelContext&); bool inputs_are_strings(const KernelContext&); void Equal(KernelContext&);
void Less(KernelContext&); void LessOrEqual(KernelContext&); void Greater(KernelContext&);
void GreaterOrEqual(KernelContext&);
// math/cumsum.cpp
void CumSum(KernelContext&); void CumProd(KernelContext&);
// math/det.cpp
void Det(KernelContext&);
// math/einsum.cpp
void Einsum(KernelContext&);
// math/fused_gemm.cpp (com.microsoft)
void FusedGemm(KernelContext&);
// math/gemm.cpp
void Gemm(KernelContext&);
void gemm(KernelContext&, int64_t opset);  // Gemm under the rules of that opset (FusedGemm: the latest)
// math/is_nan.cpp
void IsNaN(KernelContext&); void IsInf(KernelContext&);
// math/logical.cpp
void Not(KernelContext&); void And(KernelContext&); void Or(KernelContext&); void Xor(KernelContext&);
// math/matmul.cpp
void MatMul(KernelContext&);
void FusedMatMul(KernelContext&);  // com.microsoft
// math/mod.cpp
void Mod(KernelContext&);
// math/pow.cpp
void Pow(KernelContext&);
// math/softmax.cpp
void Softmax(KernelContext&); void LogSoftmax(KernelContext&); void Hardmax(KernelContext&);
// math/top_k.cpp
void TopK(KernelContext&);
// math/unary.cpp
void Abs(KernelContext&); void Neg(KernelContext&); void Sign(KernelContext&);
void Reciprocal(KernelContext&); void Floor(KernelContext&); void Ceil(KernelContext&);
void Round(KernelContext&); void Sqrt(KernelContext&); void Exp(KernelContext&); void Log(KernelContext&);
void Sin(KernelContext&); void Cos(KernelContext&); void Tan(KernelContext&); void Asin(KernelContext&);
void Acos(KernelContext&); void Atan(KernelContext&); void Sinh(KernelContext&); void Cosh(KernelContext&);
void Asinh(KernelContext&); void Acosh(KernelContext&); void Atanh(KernelContext&); void Tanh(KernelContext&);
void Erf(KernelContext&);
// math/bias_add.cpp (com.microsoft)
void BiasAdd(KernelContext&);
// math/variadic.cpp
void Max(KernelContext&); void Min(KernelContext&); void Sum(KernelContext&); void Mean(KernelContext&);
// --- nn
// nn/activations.cpp
void Sigmoid(KernelContext&); void Relu(KernelContext&); void Softsign(KernelContext&);
void Softplus(KernelContext&); void Mish(KernelContext&); void LeakyRelu(KernelContext&);
void Elu(KernelContext&); void Selu(KernelContext&); void Celu(KernelContext&);
void HardSigmoid(KernelContext&); void HardSwish(KernelContext&); void ThresholdedRelu(KernelContext&);
void Shrink(KernelContext&); void Gelu(KernelContext&); void Swish(KernelContext&);
void QuickGelu(KernelContext&);  // com.microsoft
// nn/bias_gelu.cpp (com.microsoft)
void BiasGelu(KernelContext&); void FastGelu(KernelContext&);
// nn/bias_split_gelu.cpp (com.microsoft)
void BiasSplitGelu(KernelContext&);
// nn/attention.cpp
void Attention(KernelContext&);
// nn/contrib_attention.cpp, nn/multi_head_attention.cpp, nn/group_query_attention.cpp (com.microsoft)
void ContribAttention(KernelContext&); void MultiHeadAttention(KernelContext&); void GroupQueryAttention(KernelContext&);
// nn/batch_normalization.cpp
void BatchNormalization(KernelContext&);
// nn/causal_conv_with_state.cpp
void CausalConvWithState(KernelContext&);
// nn/col2im.cpp
void Col2Im(KernelContext&);
// nn/fused_conv.cpp (com.microsoft)
void FusedConv(KernelContext&);
// nn/conv.cpp
void Conv(KernelContext&);
// nn/conv_transpose.cpp
void ConvTranspose(KernelContext&);
// nn/deform_conv.cpp
void DeformConv(KernelContext&);
// nn/dropout.cpp
void Dropout(KernelContext&);
// nn/embed_layer_normalization.cpp (com.microsoft)
void EmbedLayerNormalization(KernelContext&);
// nn/flex_attention.cpp
void FlexAttention(KernelContext&);
// nn/global_pool.cpp
void GlobalMaxPool(KernelContext&); void GlobalAveragePool(KernelContext&); void GlobalLpPool(KernelContext&);
// nn/group_normalization.cpp
void GroupNormalization(KernelContext&);
// nn/instance_normalization.cpp
void InstanceNormalization(KernelContext&);
// nn/layer_normalization.cpp
void LayerNormalization(KernelContext&);
// nn/linear_attention.cpp
void LinearAttention(KernelContext&);
// nn/lp_normalization.cpp
void LpNormalization(KernelContext&);
// nn/lrn.cpp
void LRN(KernelContext&);
// nn/max_unpool.cpp
void MaxUnpool(KernelContext&);
// nn/mean_variance_normalization.cpp
void MeanVarianceNormalization(KernelContext&);
// nn/negative_log_likelihood_loss.cpp
void NegativeLogLikelihoodLoss(KernelContext&);
// nn/nhwc_conv.cpp (com.microsoft)
void NhwcConv(KernelContext&);
// nn/pool.cpp
void MaxPool(KernelContext&); void AveragePool(KernelContext&); void LpPool(KernelContext&);
// nn/prelu.cpp
void PRelu(KernelContext&);
// nn/rms_normalization.cpp
void RMSNormalization(KernelContext&);
// nn/rotary_embedding.cpp
void RotaryEmbedding(KernelContext&); void RotaryEmbeddingContrib(KernelContext&);
// nn/skip_layer_normalization.cpp (com.microsoft)
void SkipLayerNormalization(KernelContext&); void SkipSimplifiedLayerNormalization(KernelContext&);
// nn/softmax_cross_entropy_loss.cpp
void SoftmaxCrossEntropyLoss(KernelContext&);
// nn/swiglu.cpp
void SwiGLU(KernelContext&);
// --- tensor
// tensor/affine_grid.cpp
void AffineGrid(KernelContext&);
// tensor/bit_cast.cpp
void BitCast(KernelContext&);
// tensor/cast.cpp
void Cast(KernelContext&); void CastLike(KernelContext&);
// tensor/center_crop_pad.cpp
void CenterCropPad(KernelContext&);
// tensor/compress.cpp
void Compress(KernelContext&);
// tensor/concat.cpp
void Concat(KernelContext&);
// tensor/constant.cpp
void Constant(KernelContext&);
// tensor/depth_to_space.cpp
void DepthToSpace(KernelContext&); void SpaceToDepth(KernelContext&);
// tensor/expand.cpp
void Expand(KernelContext&);
// tensor/flatten.cpp
void Flatten(KernelContext&);
// tensor/gather.cpp
void Gather(KernelContext&);
// tensor/gather_elements.cpp
void GatherElements(KernelContext&);
// tensor/gather_nd.cpp
void GatherND(KernelContext&);
// tensor/grid_sample.cpp
void GridSample(KernelContext&);
// tensor/identity.cpp
void Identity(KernelContext&);
// tensor/non_zero.cpp
void NonZero(KernelContext&);
// tensor/one_hot.cpp
void OneHot(KernelContext&);
// tensor/pad.cpp
void Pad(KernelContext&);
// tensor/reshape.cpp
void Reshape(KernelContext&);
// tensor/resize.cpp
void Resize(KernelContext&); void Upsample(KernelContext&);
// tensor/reverse_sequence.cpp
void ReverseSequence(KernelContext&);
// tensor/scatter_elements.cpp
void Scatter(KernelContext&); void ScatterElements(KernelContext&);
// tensor/scatter_nd.cpp
void ScatterND(KernelContext&);
// tensor/shape.cpp
void ShapeOp(KernelContext&);
// tensor/size.cpp
void Size(KernelContext&);
// tensor/slice.cpp
void Slice(KernelContext&);
// tensor/split.cpp
void Split(KernelContext&);
// tensor/squeeze.cpp
void Squeeze(KernelContext&);
// tensor/tensor_scatter.cpp
void TensorScatter(KernelContext&);
// tensor/tile.cpp
void Tile(KernelContext&);
// tensor/transpose.cpp
void Transpose(KernelContext&);
// tensor/trilu.cpp
void Trilu(KernelContext&);
// tensor/unique.cpp
void Unique(KernelContext&);
// tensor/unsqueeze.cpp
void Unsqueeze(KernelContext&);
// tensor/where.cpp
void Where(KernelContext&);
// --- reduction
// reduction/arg_max.cpp
void ArgMax(KernelContext&); void ArgMin(KernelContext&);
// reduction/reduce.cpp
void ReduceSum(KernelContext&); void ReduceMean(KernelContext&); void ReduceProd(KernelContext&);
void ReduceMax(KernelContext&); void ReduceMin(KernelContext&); void ReduceL1(KernelContext&);
void ReduceL2(KernelContext&); void ReduceLogSum(KernelContext&); void ReduceLogSumExp(KernelContext&);
void ReduceSumSquare(KernelContext&);
// --- rnn
// rnn/gru.cpp
void GRU(KernelContext&);
// rnn/lstm.cpp
void LSTM(KernelContext&);
// rnn/rnn.cpp
void RNN(KernelContext&);
// --- controlflow
// controlflow/if.cpp
void If(KernelContext&);
// controlflow/loop.cpp
void Loop(KernelContext&);
// controlflow/scan.cpp
void Scan8(KernelContext&); void Scan9(KernelContext&);
// --- sequence
// sequence/concat_from_sequence.cpp
void ConcatFromSequence(KernelContext&);
// sequence/sequence_map.cpp
void SequenceMap(KernelContext&);
// sequence/sequence_ops.cpp
void SequenceConstruct(KernelContext&); void SequenceEmpty(KernelContext&); void SequenceAt(KernelContext&);
void SequenceInsert(KernelContext&); void SequenceErase(KernelContext&); void SequenceLength(KernelContext&);
// sequence/split_to_sequence.cpp
void SplitToSequence(KernelContext&);
// --- optional
// optional/optional.cpp
void Optional(KernelContext&); void OptionalHasElement(KernelContext&);
void OptionalGetElement(KernelContext&);
// --- quantization
// quantization/conv_integer.cpp
void ConvInteger(KernelContext&);
// quantization/dequantize_linear.cpp
void DequantizeLinear(KernelContext&);
// quantization/dynamic_quantize_linear.cpp
void DynamicQuantizeLinear(KernelContext&);
// quantization/gather_block_quantized.cpp (com.microsoft)
void GatherBlockQuantized(KernelContext&);
// quantization/matmul_integer.cpp
void MatMulInteger(KernelContext&);
// quantization/matmul_integer_to_float.cpp (com.microsoft)
void MatMulIntegerToFloat(KernelContext&); void DynamicQuantizeMatMul(KernelContext&);
// quantization/matmul_nbits.cpp (com.microsoft)
void MatMulNBits(KernelContext&);
// quantization/qgemm.cpp (com.microsoft)
void QGemm(KernelContext&);
// quantization/qlinear_activation.cpp (com.microsoft)
void QLinearSigmoid(KernelContext&); void QLinearLeakyRelu(KernelContext&);
// quantization/qlinear_binary.cpp (com.microsoft)
void QLinearAdd(KernelContext&); void QLinearMul(KernelContext&);
// quantization/qlinear_average_pool.cpp (com.microsoft)
void QLinearAveragePool(KernelContext&);
// quantization/qlinear_concat.cpp (com.microsoft)
void QLinearConcat(KernelContext&);
// quantization/qattention.cpp (com.microsoft)
void QAttention(KernelContext&);
// quantization/qlinear_global_average_pool.cpp (com.microsoft)
void QLinearGlobalAveragePool(KernelContext&);
// quantization/qlinear_conv.cpp
void QLinearConv(KernelContext&);
// quantization/qlinear_matmul.cpp
void QLinearMatMul(KernelContext&);
// quantization/qlinear_softmax.cpp (com.microsoft)
void QLinearSoftmax(KernelContext&);
// quantization/quantize_linear.cpp
void QuantizeLinear(KernelContext&);
// --- signal
// signal/dft.cpp
void DFT(KernelContext&);
// signal/mel_weight_matrix.cpp
void MelWeightMatrix(KernelContext&);
// signal/stft.cpp
void STFT(KernelContext&);
// signal/window_functions.cpp
void HannWindow(KernelContext&); void HammingWindow(KernelContext&); void BlackmanWindow(KernelContext&);
// --- text
// text/regex_full_match.cpp
void RegexFullMatch(KernelContext&);
// text/string_concat.cpp
void StringConcat(KernelContext&);
// text/string_normalizer.cpp
void StringNormalizer(KernelContext&);
// text/string_split.cpp
void StringSplit(KernelContext&);
// text/tfidf_vectorizer.cpp
void TfIdfVectorizer(KernelContext&);
// --- generator
// generator/bernoulli.cpp
void Bernoulli(KernelContext&);
// generator/constant_of_shape.cpp
void ConstantOfShape(KernelContext&);
// generator/eye_like.cpp
void EyeLike(KernelContext&);
// generator/multinomial.cpp
void Multinomial(KernelContext&);
// generator/random.cpp
void RandomNormal(KernelContext&); void RandomUniform(KernelContext&); void RandomNormalLike(KernelContext&);
void RandomUniformLike(KernelContext&);
// generator/range.cpp
void Range(KernelContext&);
// --- object_detection
// object_detection/max_roi_pool.cpp
void MaxRoiPool(KernelContext&);
// object_detection/non_max_suppression.cpp
void NonMaxSuppression(KernelContext&);
// object_detection/roi_align.cpp
void RoiAlign(KernelContext&);
// --- image
// image/image_decoder.cpp
void ImageDecoder(KernelContext&);
// --- ml
// ml/array_feature_extractor.cpp
void ArrayFeatureExtractor(KernelContext&);
// ml/binarizer.cpp
void Binarizer(KernelContext&);
// ml/cast_map.cpp
void CastMap(KernelContext&);
// ml/category_mapper.cpp
void CategoryMapper(KernelContext&);
// ml/dict_vectorizer.cpp
void DictVectorizer(KernelContext&);
// ml/feature_vectorizer.cpp
void FeatureVectorizer(KernelContext&);
// ml/imputer.cpp
void Imputer(KernelContext&);
// ml/label_encoder.cpp
void LabelEncoderV1(KernelContext&); void LabelEncoder(KernelContext&);
// ml/linear_classifier.cpp
void LinearClassifier(KernelContext&);
// ml/linear_regressor.cpp
void LinearRegressor(KernelContext&);
// ml/normalizer.cpp
void Normalizer(KernelContext&);
// ml/one_hot_encoder.cpp
void OneHotEncoder(KernelContext&);
// ml/scaler.cpp
void Scaler(KernelContext&);
// ml/svm_classifier.cpp
void SVMClassifier(KernelContext&);
// ml/svm_regressor.cpp
void SVMRegressor(KernelContext&);
// ml/tree_ensemble.cpp
void TreeEnsemble(KernelContext&);
// ml/tree_ensemble_classifier.cpp
void TreeEnsembleClassifier(KernelContext&);
// ml/tree_ensemble_regressor.cpp
void TreeEnsembleRegressor(KernelContext&);
// ml/zip_map.cpp
void ZipMap(KernelContext&);
// --- training
// training/adagrad.cpp
void Adagrad(KernelContext&);
// training/adam.cpp
void Adam(KernelContext&);
// training/gradient.cpp
void GradientOp(KernelContext&);
// training/momentum.cpp
void Momentum(KernelContext&);

}  // namespace onnxscope::ref
