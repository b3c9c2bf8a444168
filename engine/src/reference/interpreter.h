// Runs a model node by node with kernels from a registry: the execution core
// of the reference engine (and of any engine's per-node fallback). Handles
// scopes for subgraphs, model-local functions, value lifetimes, observers.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph_util.h"
#include "onnxscope/engine.h"
#include "onnxscope/kernel.h"
#include "reference/shape_values.h"

namespace onnxscope::ref {

class Interpreter {
 public:
  Interpreter(std::shared_ptr<const Model> model, const KernelRegistry& kernels, uint64_t max_tensor_bytes);
  // Limits with 0 fields resolved to the defaults.
  Interpreter(std::shared_ptr<const Model> model, const KernelRegistry& kernels, const RunLimits& limits);

  NamedValues run(const NamedValues& inputs, const RunOptions& options);
  // Works out ahead of the first run what run() would otherwise work out on
  // it: the main graph's and its subgraphs' plans, node locations and kernel
  // lists, and the initializers' frame. Optional; runs are the same without it.
  void plan_ahead();
  // From now on, runs without an observer compute the main graph's
  // shape-determined nodes (shape_values.h) once per signature of the input
  // shapes and hand out the kept values on later runs. `follows_input_shapes`
  // names the engine's own operators whose output shapes follow from their
  // inputs' shapes. Off by default: the reference runs every node.
  void cache_shape_values(const std::function<bool(const Node&)>& follows_input_shapes);
  std::vector<NodeSupport> supports() const;

  // A scope of named values; subgraphs see their parents', functions do not.
  struct Frame {
    const Frame* parent = nullptr;
    std::unordered_map<std::string, Value> values;
    const Value* find(const std::string& name) const;
  };

  // Executes a graph's nodes in `frame` and returns its outputs in order.
  std::vector<Value> exec_graph(const Graph& g, Frame& frame, const std::string& path,
                                const std::vector<OpsetImport>& opsets, int64_t iteration);
  // Runs a subgraph with positional inputs, its parent scope being `parent`.
  std::vector<Value> exec_subgraph(const Graph& g, std::vector<Value> inputs, const Frame& parent,
                                   const std::string& path, const std::vector<OpsetImport>& opsets,
                                   int64_t iteration);

  const Model& model() const { return *model_; }
  uint64_t max_tensor_bytes() const { return max_tensor_bytes_; }
  const RunOptions& options() const { return options_; }
  const RunStats& last_run_stats() const { return stats_; }
  // For each node of g, the values whose last reader it is.
  const std::vector<std::vector<std::string>>& dead_after(const Graph& g);

  // Per node: its kernels in dispatch order (looked up once) and the state
  // each keeps between runs (KernelContext::kernel_state).
  struct NodeKernels {
    int64_t version = -1;
    std::vector<const KernelDef*> candidates;
    std::vector<std::shared_ptr<void>> states;  // parallel to candidates
  };

 private:
  // What exec_graph works out once per graph instead of per node and run:
  // each node's opset version and kernels, a slot per value a node
  // produces (for live-bytes accounting without a map), and the values each
  // node is the last reader of, with their slots.
  struct GraphPlan {
    const std::vector<OpsetImport>* opsets = nullptr;
    std::vector<int64_t> versions;
    std::vector<NodeKernels*> kernels;
    std::vector<std::vector<int32_t>> output_slots;  // per node and output: its slot, -1 for none
    std::vector<std::vector<std::pair<const std::string*, int32_t>>> dead;  // per node: (value, slot or -1)
    size_t slots = 0;
  };
  const GraphPlan& graph_plan(const Graph& g, const std::vector<OpsetImport>& opsets);
  void plan_graph(const Graph& g, const std::string& path);
  void load_main_initializers();
  void exec_node(const Graph& g, size_t index, Frame& frame, const std::string& path,
                 const std::vector<OpsetImport>& opsets, int64_t iteration, const Location& where, int64_t version,
                 NodeKernels& nk);
  // Each node's Location for error reports, made once per graph and path
  // (not per node and run: four strings each).
  const std::vector<Location>& node_locations(const Graph& g, const std::string& path);
  void call_function(const Function& f, const Node& call, std::vector<const Value*>& inputs,
                     std::vector<Value>& outputs, const std::string& path);
  // The spec's function body for this node's operator, if it has one.
  const Function* schema_function(const Node& node, int64_t version, const std::vector<OpsetImport>& opsets);
  // The function body with the call's attributes substituted (cached per call node).
  const Graph& expanded_body(const Function& f, const Node& call);
  void load_initializers(const Graph& g, Frame& frame) const;
  void load_sparse_initializers(const Graph& g, Frame& frame) const;  // densified per run
  // Live-bytes accounting and the deadline (limits_).
  void count_live(int64_t delta, const Location& where);
  void check_deadline(const Location& where) const;

  std::shared_ptr<const Model> model_;
  const KernelRegistry& kernels_;
  uint64_t max_tensor_bytes_;
  RunLimits limits_;
  RunOptions options_;
  RunStats stats_;
  uint64_t live_bytes_ = 0;
  std::chrono::steady_clock::time_point deadline_{};
  detail::FreeNames free_names_;
  std::unordered_map<const Graph*, std::vector<std::vector<std::string>>> dead_after_;
  std::unordered_map<const Node*, std::unique_ptr<Graph>> function_bodies_;
  NodeKernels& node_kernels(const Node& node, int64_t version);
  std::unordered_map<const Node*, NodeKernels> node_kernels_;
  std::unordered_map<const Graph*, GraphPlan> plans_;
  std::map<std::pair<const Graph*, std::string>, std::vector<Location>> locations_;
  struct NodeSlots {
    std::vector<const Value*> inputs;
    std::vector<Value> outputs;
  };
  std::deque<NodeSlots> slots_;  // exec_node's, per nesting depth
  size_t depth_ = 0;
  Frame main_initializers_;  // the main graph's dense initializers (run()'s frame's parent)
  bool main_initializers_ready_ = false;
  std::vector<uint8_t> shape_nodes_;  // per main-graph node: shape-determined (empty: no caching)
  ShapeValueCache shape_cache_;
  // Operator function bodies from the schemas, parsed on first use.
  std::unordered_map<const void*, std::shared_ptr<const Function>> schema_functions_;
};

// Largest tensor a kernel may allocate by default: half the machine's memory.
uint64_t default_max_tensor_bytes();
// Largest total of live node outputs by default: three quarters of it.
uint64_t default_max_live_bytes();
// Bytes a value holds (tensor data; a sequence's or map's tensors).
uint64_t value_bytes(const Value& v);

}  // namespace onnxscope::ref
