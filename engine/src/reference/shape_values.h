// Values a graph computes from its inputs' shapes alone: the Shape ->
// Gather -> Unsqueeze -> Concat -> Reshape chains exporters write for every
// dynamic dimension (a TorchScript export of ShuffleNet has some 300 such
// nodes, a small BERT half of its 190). For the same input shapes they give
// the same values on every run, so an engine that opts in
// (Interpreter::cache_shape_values) computes them once per input-shape
// signature and hands the kept values out on later runs instead of running
// those nodes again.
//
// A node's outputs are shape-determined when it is a deterministic operator
// (ai.onnx, or one the engine names) without subgraphs, and either it is
// Shape or Size of a value whose shape follows from the inputs' shapes, or
// every input it reads is itself shape-determined (initializers that no
// input overrides and Constant outputs are). Whether a value's shape follows
// from the inputs' shapes is decided per operator: elementwise math,
// convolutions, products, normalizations, pooling, Transpose, Concat, Gather
// and the like take it from their inputs' shapes; Reshape, Expand, Tile,
// Slice, Split, Squeeze, Unsqueeze, Pad, Resize, the reductions and TopK
// also need their shape-giving inputs to be shape-determined; anything else
// (NonZero, Unique, Compress, control flow, unknown domains) does not.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "onnxscope/ir.h"
#include "onnxscope/value.h"

namespace onnxscope::ref {

// Per node of the model's main graph: 1 when its outputs are shape-determined.
// `follows_input_shapes` names further operators (another domain's) whose
// output shapes follow from their inputs' shapes alone and whose results are
// deterministic.
std::vector<uint8_t> shape_determined_nodes(const Model& m, const std::function<bool(const Node&)>& follows_input_shapes);

// The kept values of the shape-determined nodes, for one signature of the
// graph inputs (element type and shape of each, in graph order).
class ShapeValueCache {
 public:
  // Largest output (all of a node's outputs together) kept; larger ones run each time.
  static constexpr uint64_t kMaxNodeBytes = 64 * 1024;

  // Starts a run with these inputs: keeps what was kept for the same
  // signature, forgets it for another. False (nothing is kept or handed out
  // this run) when an input is not a tensor.
  bool begin_run(const std::vector<const Value*>& inputs, size_t nodes);
  bool active() const { return active_; }
  void pause() { active_ = false; }  // this run neither keeps nor hands out
  // The kept outputs of node i, or nullptr.
  const std::vector<Value>* find(size_t i) const;
  // Keeps copies of node i's outputs (tensors of at most kMaxNodeBytes in all).
  void keep(size_t i, const std::vector<const Value*>& outputs);

 private:
  struct Key {
    DataType type;
    Shape shape;
    bool operator==(const Key&) const = default;
  };
  std::vector<Key> signature_;
  std::vector<std::vector<Value>> kept_;  // per node; empty: not kept
  std::vector<uint8_t> has_;
  bool active_ = false;
};

}  // namespace onnxscope::ref
