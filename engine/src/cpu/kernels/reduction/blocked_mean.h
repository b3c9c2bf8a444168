// The mean of one blocked plane (cpu/nchwc.h), as NchwcPool's
// GlobalAveragePool computes it (summed in double, in a fixed order): so a
// fused kernel that pools gets the same floats the unfused pooling would.
#pragma once

#include <cstdint>

namespace onnxscope::cpu {

// x: `plane` pixels of `block` (8 or 16) channels each; y: `block` means.
void blocked_plane_mean(const float* x, int64_t plane, int64_t block, float* y);

}  // namespace onnxscope::cpu
