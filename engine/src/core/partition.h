// Splitting a graph between a device (the CUDA engine's GPU) and the host
// (the CPU engine, which runs every node the device cannot): where each node
// runs and why, the copies between the two memories and when they happen,
// and the runs of consecutive nodes on one side (segments). Engine-neutral:
// what the device can run comes in as rules, so the planning is tested
// without a GPU and the CUDA engine only supplies its kernel table.
//
// Residency: graph inputs and initializers start on the host; a node's
// outputs live where it ran. A value is copied the first time a reader needs
// it on the other side, and is then available on both. Initializers a device
// node reads are uploaded once, when the model is prepared. Graph outputs
// left on the device are downloaded at the end of the run.
//
// Reads that need no copy: Shape and Size read only an input's shape, which
// the host always knows. Reads that need the host copy even on the device:
// arguments a device kernel needs to size its work (Reshape's shape, Slice's
// starts, TopK's k...), as the rules declare.
//
// One refinement keeps shape arithmetic off the device: a node whose outputs
// are all integer tensors (int64, int32) read on the host only, and whose
// inputs are all on the host already (or read for their shape only), runs on
// the host, though the device could run it. Float work stays on the device
// even when a host node reads it: comparing the device's arithmetic is the
// point of running there.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/ir.h"

namespace onnxscope {

enum class Side { Host, Device };

struct PlacementRules {
  // Why the device cannot run this node (nullopt: it can), in a model of
  // ai.onnx version `opset`. Called for every node of the top-level graph;
  // a node with subgraphs always runs on the host.
  std::function<std::optional<std::string>(const Graph& g, const Node& n, int64_t opset)> refuse;
  // True when the device kernel of `n` reads input `i` from host memory.
  std::function<bool(const Node& n, size_t i)> reads_on_host;
};

// Shape and Size: only the input's shape is read (no copy either way).
bool reads_shape_only(const Node& n, size_t input);

struct NodePlace {
  Side side = Side::Host;
  std::string reason;  // for a host node the device could not run: why
};

struct Copy {
  std::string value;
  Side to = Side::Device;
  // Before node `before` runs; prepare-time uploads (initializers) have
  // at_prepare set, graph-output downloads have before == nodes.size().
  size_t before = 0;
  bool at_prepare = false;
};

struct Segment {
  Side side = Side::Host;
  size_t begin = 0, end = 0;  // nodes [begin, end)
};

struct PartitionPlan {
  std::vector<NodePlace> nodes;  // per node of the graph
  std::vector<Copy> copies;      // in the order they happen
  std::vector<Segment> segments;
};

// opset: the model's ai.onnx version (what the rules are asked in).
PartitionPlan partition(const Graph& g, const PlacementRules& rules, int64_t opset);

// A plan in words, one line per segment and copy, for --explain.
std::string describe(const Graph& g, const PartitionPlan& plan);

}  // namespace onnxscope
