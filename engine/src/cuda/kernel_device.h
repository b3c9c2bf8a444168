// The CUDA engine's device for the offload engine (offload/device.h): the
// operator table (ops/op_table.h) over a Runtime, the GPU's or the host's.
#pragma once

#include <memory>
#include <string>

#include "cuda/runtime.h"
#include "offload/device.h"

namespace onnxscope::cuda {

// `name` is what the device reports ("cuda:0 NVIDIA H100", "cuda-sim (host)").
std::shared_ptr<offload::Device> make_kernel_device(std::shared_ptr<Runtime> rt, MathMode mode, std::string name);

// "fp32", "tf32" or "fp16"; throws onnxscope::Error ("bad-option") for anything else.
MathMode math_mode(const std::string& precision);

}  // namespace onnxscope::cuda
