// Model reduction: cut a model down to the smallest piece that still shows a
// divergence between two engines, fed with the baseline's captured tensors,
// and write it as a backend-style test folder (model.onnx +
// test_data_set_0/input_K.pb, output_K.pb with the baseline's outputs), which
// `onnxscope conformance` and other runners can run.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "onnxscope/diff.h"

namespace onnxscope {

struct ReduceResult {
  bool reproduced = false;
  std::vector<std::string> nodes;  // original node labels kept, in order
  std::string how;                 // "single node (top blame)", "window of 4 nodes ending at the first divergence"
  TensorDiff diff;                 // the divergence the piece shows
};

// The declared type of a graph input fed with `v`: its element type and
// exact shape (a sequence, map or optional by kind).
TypeInfo type_of_value(const Value& v);
// An empty model to cut a piece of `from` into: its IR version, opsets and
// functions, the producer and the source (for messages) given.
std::shared_ptr<Model> piece_model(const Model& from, std::string producer, std::string source);

// `report` comes from diff_captures (+ blame_nodes) of captures `a` (baseline)
// and b. Tries the most-blamed node alone, then growing windows of ancestors
// ending at the first divergence. Writes the folder only when reproduced.
ReduceResult reduce_divergence(const Model& model, const Capture& a, Engine& engine_b, const DiffTolerance& tol,
                               const DiffReport& report, const std::filesystem::path& out_dir);

}  // namespace onnxscope
