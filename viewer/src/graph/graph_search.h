// Search over a model's nodes (by name and operator type) and tensors (by
// name), in the main graph and every If/Loop/Scan body.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

#include "onnxscope/ir.h"

namespace onnxscope::viewer::graph {

struct SearchHit {
  enum class Kind { Node, Tensor };
  Kind kind = Kind::Node;
  QString graph_path;
  int node_index = -1;  // Node: the node; Tensor: its producer, -1 for inputs/initializers
  QString tensor;
  QString display;  // "Conv  conv1  (main)"
};

class GraphSearch {
 public:
  void build(const Model& m);
  // Exact matches first (node name, tensor name, operator type), then
  // case-insensitive substrings. "op:Conv" searches operator types only.
  std::vector<SearchHit> find(const QString& query, size_t limit = 1000) const;
  // Nodes whose label (Node::label) is exactly `name`, in any graph.
  std::vector<SearchHit> find_node(const QString& name) const;
  // Every node name, tensor name and operator type once, for a completer.
  const QStringList& completions() const { return completions_; }

 private:
  struct Entry {
    QString graph_path;
    int node_index;
    QString name, op;  // node
    QString tensor;    // tensor entries: name
  };
  void add_graph(const Model& m, const Graph& g, const QString& path, int depth);
  std::vector<Entry> nodes_, tensors_;
  QStringList completions_;
};

}  // namespace onnxscope::viewer::graph
