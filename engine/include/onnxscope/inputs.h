// Inputs for a run: seeded random values that respect each input's element
// type and shape (symbolic dims given by name), or values read from .pb files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "onnxscope/engine.h"
#include "onnxscope/ir.h"

namespace onnxscope {

struct InputSpec {
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims;                    // symbolic dim name -> value
  int64_t unknown_dim = 1;                                // for dims with no name and no value
  std::map<std::string, std::filesystem::path> files;     // input name -> .pb (TensorProto...) or .npy file
  std::map<std::string, Tensor> from_dump;                // input name -> value (e.g. a dump's /inputs)
  uint64_t max_bytes = uint64_t{1} << 32;                 // refuse larger random inputs
};

// Every graph input that no initializer provides. Throws onnxscope::Error
// (naming the input) for a bad file, an unknown input name, or a shape that
// would exceed max_bytes.
NamedValues make_inputs(const Model& model, const InputSpec& spec);

}  // namespace onnxscope
