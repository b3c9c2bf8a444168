// The first node that produced NaN or Inf, without a debug build: an
// Observer that looks at every node's outputs as the run goes, stops the
// run at the first one holding a non-finite value, and keeps what a user
// needs to see why: the node, the output, and every input that fed it,
// finite or not (a Log fed a negative, a Div fed a zero, an overflow in a
// MatMul's inputs). `run --check-finite`, `dump --check-finite` and the
// viewer's NaN breakpoint all report it through this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnxscope/engine.h"

namespace onnxscope {

// What a value holds: elements counted over a tensor (or a sequence's or
// map's tensors) of a floating-point type; others are never non-finite.
struct FiniteCounts {
  uint64_t elements = 0, nan = 0, pos_inf = 0, neg_inf = 0;
  double min = 0, max = 0;  // over the finite elements (when any)
  bool floating = false;    // some element was of a floating-point type
  bool finite() const { return nan + pos_inf + neg_inf == 0; }
  std::string text() const;  // "finite, in [-1.5, 2]" or "2 NaN, 1 +Inf of 6"
};
FiniteCounts count_finite(const Value& v);

struct NonFiniteNode {
  std::string graph_path;  // "main", or a subgraph's path
  int64_t iteration = -1;  // the loop/scan iteration inside a body, else -1
  size_t node_index = 0;
  std::string node, op_type, kernel;  // the node's label, its operator, the kernel that ran it
  std::string output;                 // the first output holding NaN or Inf
  FiniteCounts counts;                // of that output
  struct Input {
    size_t index = 0;
    std::string name;  // "" for an omitted optional input
    std::string type;  // "float[2,3]"
    FiniteCounts counts;
  };
  std::vector<Input> inputs;
  // Several lines: the node and output, then each input, finite or not.
  std::string text() const;
};

class FiniteCheck : public Observer {
 public:
  // stop: end the run at the first non-finite output (should_stop); false
  // keeps running and keeps the first one found.
  explicit FiniteCheck(bool stop = true) : stop_(stop) {}
  void on_node(const NodeEvent& e) override;
  bool should_stop() override { return stop_ && found_.has_value(); }
  const std::optional<NonFiniteNode>& found() const { return found_; }

 private:
  bool stop_;
  std::optional<NonFiniteNode> found_;
};

// Several observers as one: each is told of every node, and the run stops
// when any of them asks.
class Observers : public Observer {
 public:
  explicit Observers(std::vector<Observer*> list) : list_(std::move(list)) {}
  void on_node(const NodeEvent& e) override {
    for (Observer* o : list_) o->on_node(e);
  }
  void on_node_start(std::string_view graph_path, size_t node_index, const Node& node) override {
    for (Observer* o : list_) o->on_node_start(graph_path, node_index, node);
  }
  bool should_stop() override {
    bool stop = false;
    for (Observer* o : list_) stop = o->should_stop() || stop;
    return stop;
  }

 private:
  std::vector<Observer*> list_;
};

}  // namespace onnxscope
