// Runs a model node by node with kernels from a registry: the execution core
// of the reference engine (and of any engine's per-node fallback). Handles
// scopes for subgraphs, model-local functions, value lifetimes, observers.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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
  // it: the main graph's and its subgraphs' plans (with their initializers),
  // node locations and kernel lists. Optional; runs are the same without it.
  void plan_ahead();
  // From now on, runs without an observer compute the main graph's
  // shape-determined nodes (shape_values.h) once per signature of the input
  // shapes and hand out the kept values on later runs. `follows_input_shapes`
  // names the engine's own operators whose output shapes follow from their
  // inputs' shapes. Off by default: the reference runs every node.
  void cache_shape_values(const std::function<bool(const Node&)>& follows_input_shapes);
  std::vector<NodeSupport> supports() const;

  // Per node: its kernels in dispatch order (looked up once) and the state
  // each keeps between runs (KernelContext::kernel_state).
  struct NodeKernels {
    int64_t version = -1;
    std::vector<const KernelDef*> candidates;
    std::vector<std::shared_ptr<void>> states;  // parallel to candidates
  };

  // What exec_graph works out once per graph instead of per node and run:
  // each node's opset version and kernels, a slot per value the graph
  // defines, where each node finds its inputs, and the values each node is
  // the last reader of.
  struct GraphPlan {
    const std::vector<OpsetImport>* opsets = nullptr;
    std::vector<int64_t> versions;
    std::vector<NodeKernels*> kernels;
    std::unordered_map<std::string, int32_t> slot_of;  // graph inputs, sparse initializers, node outputs
    size_t value_slots = 0;
    std::deque<Value> constants;  // the dense initializers, sharing the model's bytes (a deque: stable addresses)
    std::unordered_map<std::string, const Value*> constant_of;
    std::vector<int32_t> input_slots;   // per graph input
    std::vector<int32_t> sparse_slots;  // per sparse initializer
    // Per node input: its slot (-1: none, or a name this graph does not
    // define) and, for an initializer, its constant (read when the slot
    // holds nothing: a graph input of the same name overrides it).
    struct Read {
      int32_t slot = -1;
      const Value* constant = nullptr;
    };
    std::vector<std::vector<Read>> reads;
    std::vector<std::vector<int32_t>> output_slots;  // per node and output: its slot, -1 for none
    std::vector<std::vector<int32_t>> dead;          // per node: the slots of the values it reads last
  };

  // A scope of values; subgraphs see their parents', functions do not. The
  // values a graph defines (its inputs, sparse initializers and node outputs)
  // sit in slots its plan numbers, so a node finds its inputs and leaves its
  // outputs without hashing their names; its dense initializers are the
  // plan's constants. Names from enclosing scopes are found through `parent`.
  struct Frame {
    Frame(const GraphPlan& p, const Frame* up) : parent(up), plan(&p), slots(p.value_slots) {}
    const Frame* parent = nullptr;
    const GraphPlan* plan = nullptr;
    std::vector<std::optional<Value>> slots;  // per value slot; empty: not (or no longer) held
    const Value* find(const std::string& name) const;
  };

  // The plan of g run with these opsets (made on first use).
  const GraphPlan& graph_plan(const Graph& g, const std::vector<OpsetImport>& opsets);
  // Executes a graph's nodes in `frame` (made with its plan) and returns its outputs in order.
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

 private:
  void plan_graph(const Graph& g, const std::string& path);
  void exec_node(const Graph& g, const GraphPlan& plan, size_t index, Frame& frame, const std::string& path,
                 const std::vector<OpsetImport>& opsets, int64_t iteration, const Location& where);
  // Each node's Location for error reports, made once per graph and path
  // (not per node and run: four strings each).
  const std::vector<Location>& node_locations(const Graph& g, const std::string& path);
  void call_function(const Function& f, const Node& call, std::vector<const Value*>& inputs,
                     std::vector<Value>& outputs, const std::string& path);
  // The spec's function body for this node's operator, if it has one.
  const Function* schema_function(const Node& node, int64_t version, const std::vector<OpsetImport>& opsets);
  // The function body with the call's attributes substituted (cached per call node).
  const Graph& expanded_body(const Function& f, const Node& call);
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
  std::vector<uint8_t> shape_nodes_;  // per main-graph node: shape-determined (empty: no caching)
  // Per shape-determined node: the nodes that read its outputs, kAnyReader
  // among them where one is a graph output. A kept node's values are put in
  // the frame only when one of them runs this time (is not kept itself).
  static constexpr uint32_t kAnyReader = ~uint32_t{0};
  std::vector<std::vector<uint32_t>> shape_readers_;
  bool kept_values_needed(size_t node) const;
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
