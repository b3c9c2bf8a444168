// Reading ONNX models: ModelProto bytes -> checked onnxscope::Model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"

namespace onnxscope {

class PluginSet;

struct LoadOptions {
  // Folder external-data locations are relative to. Set from the path for
  // files; empty for bytes, which then may not reference external data.
  std::filesystem::path base_dir;
  bool allow_external_data = true;
  // Nodes out of topological order are sorted (with a warning) or reported as errors.
  bool sort_nodes = true;
  bool infer_shapes = true;
  // Operators plugins supply: validated and shape-inferred through the plugins
  // instead of being reported as unknown custom-domain operators.
  const PluginSet* plugins = nullptr;
  int max_subgraph_depth = 32;       // nested If/Loop/Scan bodies
  int max_function_call_depth = 100; // chains of model-local function calls
  // Protobuf cannot represent more; larger models must use external data.
  uint64_t max_model_bytes = (uint64_t{1} << 31) - 1;
};

struct LoadResult {
  // Null when the bytes could not be understood as a ModelProto at all.
  std::unique_ptr<Model> model;
  Diagnostics diagnostics;
  // True when a model was read and no error was found.
  bool ok() const { return model && !diagnostics.has_errors(); }
};

// Never throws for bad input: every problem becomes a diagnostic.
LoadResult load_model_file(const std::filesystem::path& path, LoadOptions options = {});
LoadResult load_model_bytes(std::span<const std::byte> bytes, LoadOptions options = {},
                            std::string display_name = "<bytes>");

// Re-runs all structural checks on an in-memory model (after edits).
void validate_model(Model& model, const LoadOptions& options, Diagnostics& out);

}  // namespace onnxscope
