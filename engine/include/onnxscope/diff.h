// Comparing two sources of the same model's tensors (two engines, or an
// engine and a dump): per-tensor error statistics, the first node whose
// outputs leave the tolerance, and blame: the error a node introduces
// (itself, re-run on the first source's inputs) versus the error it inherits.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/engine.h"

namespace onnxscope {

struct DiffTolerance {
  double rtol = 1e-4;
  double atol = 1e-5;
  int64_t max_ulp = -1;  // >= 0: compare by ULP distance instead of rtol/atol
};

struct TensorDiff {
  bool comparable = true;   // false: dtype, shape or kind differ (see `problem`)
  std::string problem;
  uint64_t elements = 0;
  double max_abs = 0, max_rel = 0, mean_abs = 0, rmse = 0;
  double cosine = 1;        // cosine similarity of the two tensors as vectors
  uint64_t max_ulp = 0;     // for float types
  uint64_t out_of_tolerance = 0;
  uint64_t nan_a = 0, nan_b = 0, inf_a = 0, inf_b = 0;
  uint64_t worst_index = 0;  // flat index of the largest |a-b|
  double worst_a = 0, worst_b = 0;
  bool within() const { return comparable && out_of_tolerance == 0; }
};

// Element statistics of b against a (a is the baseline).
TensorDiff diff_tensors(const Tensor& a, const Tensor& b, const DiffTolerance& tol);
TensorDiff diff_values(const Value& a, const Value& b, const DiffTolerance& tol);

// Every value a run produced, by name, with the node that produced it.
struct Capture {
  std::string source;  // "reference", "cpu", a dump file
  std::map<std::string, Value> values;
  std::map<std::string, std::string> kernel_of;  // value -> kernel that produced it
};

// Runs `engine` on `model` with `inputs`, capturing the outputs of every node
// of the main graph (graph inputs included).
Capture capture_run(Engine& engine, std::shared_ptr<const Model> model, const NamedValues& inputs);

struct NodeDiff {
  size_t node_index = 0;
  std::string node, op_type;
  std::vector<std::pair<std::string, TensorDiff>> outputs;  // per output present on both sides
  bool diverges = false;
  // Blame: error of this node alone, re-run in engine B on A's inputs.
  std::optional<TensorDiff> introduced;
  double introduced_score = 0;  // max_abs of the introduced error over its outputs
  double total_score = 0;       // max_abs of the observed error
};

struct DiffReport {
  std::string a, b;
  std::vector<NodeDiff> nodes;          // main graph, topological order
  std::optional<size_t> first_divergence;  // index into nodes
  std::vector<size_t> blame_order;      // indices into nodes, largest introduced error first
};

// Compares two captures along the model's topological order.
DiffReport diff_captures(const Model& model, const Capture& a, const Capture& b, const DiffTolerance& tol);

// Fills `introduced` for each node: its inputs taken from capture `a`, the
// node re-run alone in `engine_b`, its outputs compared with `a`'s.
// `should_stop` (polled between nodes) ends it early: nodes not reached get no
// blame, and the function returns false.
bool blame_nodes(const Model& model, const Capture& a, Engine& engine_b, const DiffTolerance& tol, DiffReport& report,
                 const std::function<bool()>& should_stop = {});

}  // namespace onnxscope
