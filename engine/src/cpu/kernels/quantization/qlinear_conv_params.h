// QLinearConv's scales, zero points and bias as the CPU's int8 kernels take
// them (conv_integer.cpp: oneDNN's convolution; qlinear_conv_1x1.cpp and
// qlinear_conv_depthwise.cpp: the VNNI ones), and its requantization multipliers.
#pragma once

#include <cstdint>
#include <vector>

#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

// x_scale and y_scale float scalars, w_scale float scalar or one per output
// channel, y_zero_point an 8-bit scalar, the bias int32 [M] when given.
bool qlinear_conv_params_ok(const KernelContext& ctx);

// float(x_scale * w_scale[m] / y_scale) per output channel, as the reference forms it.
std::vector<double> qlinear_conv_multipliers(const KernelContext& ctx, int64_t M);

}  // namespace onnxscope::cpu
