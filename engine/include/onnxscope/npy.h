// Reading NumPy .npy arrays (for inputs given on the command line).
#pragma once

#include <filesystem>

#include "onnxscope/diagnostics.h"
#include "onnxscope/tensor.h"

namespace onnxscope {

// Throws onnxscope::Error naming the file for anything it cannot read exactly.
Tensor read_npy(const std::filesystem::path& path);

}  // namespace onnxscope
