// Reading NumPy .npy arrays and .npz archives (for inputs given on the
// command line).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxscope/diagnostics.h"
#include "onnxscope/tensor.h"

namespace onnxscope {

// Throws onnxscope::Error naming the file for anything it cannot read exactly.
Tensor read_npy(const std::filesystem::path& path);
// One .npy array held in memory; `where` names it in errors.
Tensor parse_npy(std::string_view bytes, const std::filesystem::path& where);

// Every array of an .npz archive (numpy.savez or savez_compressed), by name
// ("x" for the member "x.npy"), in archive order. Sizes are checked against
// `max_bytes` before anything is inflated or allocated.
std::vector<std::pair<std::string, Tensor>> read_npz(const std::filesystem::path& path,
                                                     uint64_t max_bytes = uint64_t{1} << 32);

}  // namespace onnxscope
