// The GPU runtime (cuda_runtime.cpp), in CUDA builds only.
#pragma once

#include <memory>

#include "cuda/runtime.h"

namespace onnxscope::cuda {

// Throws std::runtime_error when the device, cuBLAS or the stream cannot be set up.
std::shared_ptr<Runtime> make_gpu_runtime(int device);

}  // namespace onnxscope::cuda
