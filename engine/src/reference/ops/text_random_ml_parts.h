// The parts of the text_random_ml family (strings, images, random, ai.onnx.ml,
// ai.onnx.preview.training); register_text_random_ml_ops calls each of them.
#pragma once

#include "onnxscope/kernel.h"

namespace onnxscope::ref {

void register_text_random_ml_image_ops(KernelRegistry& r);  // text_random_ml_image.cpp: ImageDecoder
void register_text_random_ml_ml_ops(KernelRegistry& r);     // text_random_ml_ml.cpp: ai.onnx.ml, training

}  // namespace onnxscope::ref
