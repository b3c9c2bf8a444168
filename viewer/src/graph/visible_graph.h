// What the graph view draws for one graph: boxes (nodes, collapsed scope
// groups, graph inputs and outputs) and the edges between them, with
// initializers and Constant nodes folded into their consumers and nodes of
// collapsed scopes merged into one box. Pure data: no Qt widgets, so it is
// built and laid out on a worker thread.
#pragma once

#include <QHash>
#include <QSet>
#include <QString>
#include <QStringList>
#include <vector>

#include "graph/op_category.h"
#include "onnxscope/ir.h"

namespace onnxscope::viewer::graph {

// The scope exporters encode in node names: "/encoder/layer.3/attention/MatMul"
// -> "/encoder/layer.3/attention"; "" for unscoped names.
QString node_scope(const std::string& name);
// The name's scope, else the module path the PyTorch dynamo exporter records
// in metadata ("pkg.torch.onnx.name_scopes" -> "/inner/encoder/layer.0/attention").
QString node_scope(const Node& n);
// "/a/b/c" -> {"/a", "/a/b", "/a/b/c"}
QStringList scope_chain(const QString& scope);

struct Box {
  enum class Kind { Node, Group, Input, Output };
  Kind kind = Kind::Node;
  int node_index = -1;     // Kind::Node
  QString scope;           // Kind::Group: the group; Kind::Node: the node's scope
  QString tensor;          // Kind::Input / Output: the value
  QString title, subtitle;
  OpCategory category = OpCategory::Other;
  std::vector<int> members;   // Kind::Group: node indices inside
  QStringList folded;         // initializers / constants folded into this node
  QString cluster;            // innermost expanded scope drawn around it ("" none)
  bool has_body = false;      // If/Loop/Scan/function: opens a nested view
  double width = 0, height = 0;  // points, filled by measure_boxes
};

struct Edge {
  int from = 0, to = 0;  // box indices
  QString tensor;        // the value (first one when several are merged)
  QString label;         // "float[1,3,224,224]", or "3 tensors"
  int count = 1;
  double label_width = 0;  // points, filled by measure_boxes
};

struct Cluster {
  QString scope;
  QString parent;  // enclosing cluster scope, "" for top level
};

struct VisibleGraph {
  std::vector<Box> boxes;
  std::vector<Edge> edges;
  std::vector<Cluster> clusters;  // parents before children
  std::vector<int> box_of_node;   // node index -> box, -1 when folded
  QHash<QString, int> box_of_group;
  QHash<QString, int> box_of_io;  // graph input/output name -> box
  QSet<QString> folded_values;    // initializer and Constant outputs
};

struct GroupingState {
  bool enabled = false;       // scope grouping is on (large graphs)
  QSet<QString> collapsed;    // scopes drawn as one box
  // Many nodes without a scope are grouped in runs, in graph order:
  // per node the run's name ("/nodes 0-99"), empty for scoped nodes.
  std::vector<QString> run_of_node;
};

// The scope a node is grouped by: its own (node_scope), or its run.
QString group_scope(const GroupingState& s, const Graph& g, size_t node_index);

// Grouping for a graph first shown: on above `threshold` nodes, collapsing
// the deepest scope level that keeps the number of boxes under it. When more
// than threshold/2 nodes have no scope, they are grouped in runs of 100.
GroupingState default_grouping(const Graph& g, int threshold = 300);
// Expanding a group collapses its child scopes (so a 20,000-node layer opens
// one level at a time); collapsing one removes its descendants.
void expand_scope(const Graph& g, GroupingState& s, const QString& scope);
void collapse_scope(GroupingState& s, const QString& scope);
// The collapsed group hiding a node, "" when the node is drawn itself.
QString hiding_group(const GroupingState& s, const Graph& g, size_t node_index);

// `outer`: the graphs around a body, innermost last (types of the values it reads from them).
VisibleGraph build_visible_graph(const Model& m, const Graph& g, const GroupingState& s,
                                 const std::vector<const Graph*>& outer = {});
// Fills Box::width/height and Edge::label_width for the view's fonts (usable
// off the UI thread).
void measure_boxes(VisibleGraph& vg);

}  // namespace onnxscope::viewer::graph
