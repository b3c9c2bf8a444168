// One NchwcConv on the blocked layout (ToNchwc -> NchwcConv -> FromNchwc,
// in domain onnxscope.cpu) against the reference's Conv, Add of the residual
// and activation written as plain ONNX operators; used by the tests of the
// CPU engine's own blocked convolution kernels (the grouped kernel in
// cpu_ops_nn_test.cpp, the Winograd kernel in cpu_winograd_conv_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxscope/engine.h"
#include "onnxscope/tensor.h"
#include "ops_harness.h"

namespace onnxscope::test {

struct BlockedConvCase {
  Shape x;                 // [N, C, H, W]
  int64_t out_channels = 0, group = 1, block = 8;
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: when auto_pad is NOTSET
  std::string auto_pad = "NOTSET";
  std::string act;         // "" or an activation NchwcConv fuses (fused_ops.h)
  std::vector<float> act_params;
  bool bias = false, residual = false, w_constant = true;
  bool odd_values = false;  // NaN and infinities sprinkled into X
  std::string text() const;
};

// The activations NchwcConv fuses, with parameters: {op, params}.
const std::vector<std::pair<std::string, std::vector<float>>>& blocked_conv_activations();

// The output's spatial size as the reference works it out; an empty vector
// where the window leaves no output pixel.
std::vector<int64_t> blocked_conv_out(const BlockedConvCase& c);

struct BlockedConvRun {
  Tensor want;                       // the reference's
  std::vector<Tensor> got;           // each engine's
  std::vector<std::string> kernels;  // the implementation that ran NchwcConv on each
};

// Draws X, W, the bias and the residual from rng and runs the case.
BlockedConvRun run_blocked_conv(const BlockedConvCase& c, harness::Rng& rng, const std::vector<Engine*>& engines);

// Every output of `got` against `want`: NaN meets NaN, an infinity the same
// infinity, the rest within tol * (1 + |want|). Empty when all hold, else
// the first that does not.
std::string blocked_conv_mismatch(const Tensor& want, const Tensor& got, double tol);

}  // namespace onnxscope::test
