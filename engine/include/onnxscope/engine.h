// The engine interface shared by the reference, CPU and CUDA engines:
// prepare a model, run it on named inputs, and report every node's outputs to
// an observer as they are produced (debugger, dumper, conformance runner).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onnxscope/ir.h"
#include "onnxscope/value.h"

namespace onnxscope {

using NamedValues = std::vector<std::pair<std::string, Value>>;

// One executed node. Pointers are valid only during the callback.
struct NodeEvent {
  std::string_view graph_path;  // "main", "main/loop:body"
  size_t node_index = 0;        // in that graph's (sorted) node list
  const Node* node = nullptr;
  std::string_view kernel;      // implementation that ran it: "reference", "onednn", "function", ...
  std::span<const Value* const> inputs;  // nullptr for omitted inputs
  std::span<const Value> outputs;
  double seconds = 0;
  int64_t iteration = -1;       // loop/scan iteration for body nodes, else -1
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_node(const NodeEvent& e) = 0;
  // Called just before a node runs, in every graph (bodies included): where a
  // run was when it died (the isolated engine's worker records it).
  virtual void on_node_start(std::string_view graph_path, size_t node_index, const Node& node) {
    (void)graph_path, (void)node_index, (void)node;
  }
  // Polled between nodes: true stops the run with a "cancelled" error.
  virtual bool should_stop() { return false; }
  // False when the observer reads no tensor bytes, only which node ran, its
  // kernel, time and the values' types and shapes (a profiler, --explain):
  // engines may then write a node's output over a dead input's bytes and
  // (CPU) serve node outputs from the activation arena, as in an unobserved
  // run, so a profiled run costs what an unobserved one does.
  virtual bool reads_values() const { return true; }
};

struct RunOptions {
  Observer* observer = nullptr;
  // With an observer: report the outputs of every ORIGINAL model node (an
  // engine that fuses may run unfused to do so). False: report nodes as the
  // engine runs them, fused ones under their own names (for --explain).
  bool capture_original = true;
  bool observe_subgraphs = true;  // also report nodes inside If/Loop/Scan bodies
  uint64_t seed = 0;              // random ops without a seed attribute
};

struct NodeSupport {
  std::string graph_path;
  size_t node_index = 0;
  bool supported = false;
  std::string detail;  // implementation name, or why not
};

// What the last run of a prepared model measured.
struct RunStats {
  // Largest total size of node outputs alive at one time (activations; the
  // model's weights and the inputs are not counted).
  uint64_t peak_live_bytes = 0;
  // Bytes of the activation arena the run took its node outputs from (CPU
  // engine, runs after the first); 0 when they came from the heap.
  uint64_t arena_bytes = 0;
  // Engines that plan repeated runs (cuda, cuda-sim): how this run went,
  // e.g. "memory recorded for planning", "planned memory", "captured run
  // replayed"; empty for the others.
  std::string how;
  // Device memory a device engine keeps across runs besides the weights
  // themselves (cuda in fp16: the weights' float16 copies); 0 for the others.
  uint64_t device_kept_bytes = 0;
  // CPU engine: nodes that compute values from the inputs' shapes alone
  // (Shape, and the Gather / Unsqueeze / Concat after it) whose results,
  // kept from an earlier run with the same input shapes, this run reused
  // instead of running them; 0 for the other engines.
  uint64_t shape_nodes_reused = 0;
};

// Limits of one run, enforced between nodes and by every allocation; each is
// an error naming the node, the limit and the option that raises it.
struct RunLimits {
  uint64_t max_tensor_bytes = 0;  // one tensor; 0: half the machine's memory
  uint64_t max_live_bytes = 0;    // all node outputs alive at once; 0: three quarters of the machine's memory
  double timeout_seconds = 0;     // wall time of one run; 0: none
};

class PreparedModel {
 public:
  virtual ~PreparedModel() = default;
  virtual RunStats last_run_stats() const { return {}; }
  // Where an engine that splits a model across devices runs each node (and
  // why a node falls back to the host), and every copy between them, in
  // words, for --explain; empty for an engine that runs everything itself.
  virtual std::string placement() const { return {}; }
  // Inputs by graph input name; returns the graph outputs in order.
  // Throws onnxscope::Error (located at the failing node) on failure.
  virtual NamedValues run(const NamedValues& inputs, const RunOptions& options = {}) = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // Which nodes this engine can run (before running anything).
  virtual std::vector<NodeSupport> supports(const Model& model) const = 0;
  virtual std::unique_ptr<PreparedModel> prepare(std::shared_ptr<const Model> model) = 0;
};

}  // namespace onnxscope
