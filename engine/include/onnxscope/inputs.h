// Inputs for a run: seeded random values that respect each input's element
// type and shape (symbolic dims given by name), or values read from files
// (.pb, .npy, .npz) or from a dump's inputs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "onnxscope/engine.h"
#include "onnxscope/ir.h"

namespace onnxscope {

struct InputSpec {
  uint64_t seed = 0;
  std::map<std::string, int64_t> dims;                    // symbolic dim name -> value
  int64_t unknown_dim = 1;                                // for dims with no name and no value
  std::map<std::string, std::filesystem::path> files;     // input name -> .pb (TensorProto...) or .npy file
  std::vector<std::filesystem::path> archives;            // .npz files: each array feeds the input of its name
  std::map<std::string, Tensor> from_dump;                // input name -> value (e.g. a dump's /inputs)
  uint64_t max_bytes = uint64_t{1} << 32;                 // refuse larger random inputs
};

// Every graph input that no initializer provides. Sources in order of
// precedence: `files`, `archives`, `from_dump`, then seeded random values.
// Throws onnxscope::Error (naming the input and file) for a bad file, an
// unknown input name, a value whose element type or shape contradicts the
// model's declaration, or a shape that would exceed max_bytes.
NamedValues make_inputs(const Model& model, const InputSpec& spec);

}  // namespace onnxscope
