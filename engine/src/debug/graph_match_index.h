// What the graph matcher (graph_match.cpp) knows about one model's main
// graph: producers and consumers, which values are data (they depend on the
// inputs' values) and which are constants or shape plumbing, and the root of
// each alias chain (Identity, Dropout, float Cast, QuantizeLinear ->
// DequantizeLinear pass their input's value on).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnxscope/diff.h"
#include "onnxscope/ir.h"

namespace onnxscope::match {

struct GraphIndex {
  GraphIndex(const Model& m, const Capture* values);

  const Model& model;
  const Graph& g;
  const Capture* values;
  std::map<std::string, int> producer;                 // tensor -> node index
  std::map<std::string, std::vector<int>> consumers;   // tensor -> node indices, in order
  std::set<std::string> statics;                       // initializers, constants, shape plumbing
  std::vector<bool> data_node;                         // some output is data
  std::vector<bool> alias_node;                        // passes its first input's value on
  std::map<std::string, std::string> root;             // data tensor -> root of its alias chain
  std::map<std::string, std::vector<std::string>> members;  // root -> the tensors whose root it is (itself first)
  std::vector<std::string> data_tensors;               // graph inputs, then node outputs, in order
  std::set<std::string> graph_outputs;

  bool is_data(const std::string& t) const { return !t.empty() && root.count(t) > 0; }
  const std::string& root_of(const std::string& t) const { return root.at(t); }
  // The data inputs of node n (static ones and empty names left out), as roots.
  std::vector<std::string> data_input_roots(int n) const;
  // A static tensor's value: from the run's capture, an initializer or a Constant; null if none.
  const Tensor* static_value(const std::string& t) const;
  // Nodes that read any member of root r (through aliases), in order, alias nodes left out.
  std::vector<int> readers(const std::string& r) const;
  std::string label(int n) const { return g.nodes[size_t(n)].label(size_t(n)); }
};

// Operators whose data inputs may come in either order.
bool commutative(const std::string& op_type);

}  // namespace onnxscope::match
