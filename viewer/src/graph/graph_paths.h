// Graph paths ("main", "main/If_3:then_branch", "main/MyFunc_2" for a
// model-local function body) resolved to the graph they name, and the nested
// bodies a node opens. Node labels may themselves hold '/', so paths are
// resolved by matching labels, not by splitting.
#pragma once

#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "onnxscope/ir.h"

namespace onnxscope::viewer::graph {

struct GraphRef {
  QString path;
  const Graph* graph = nullptr;
  std::shared_ptr<const Graph> owned;  // a function body rebuilt as a Graph
  std::vector<const Graph*> outer;     // enclosing graphs whose values a body may read, innermost last
  QStringList crumbs;                  // "main", "node If_3", "then_branch", ...
  QStringList crumb_paths;             // the graph each crumb opens
};

struct NestedBody {
  QString label;  // "then_branch", "body", "function MyFunc"
  QString path;
};

// Subgraph attributes of the node, or the model-local function it calls.
std::vector<NestedBody> nested_bodies(const Model& m, const Graph& g, const QString& graph_path, size_t node_index);

std::optional<GraphRef> resolve_graph(const Model& m, const QString& path);

// A value's type in the graph or, for a body, in the graphs around it.
const TypeInfo* find_type(const GraphRef& ref, std::string_view value);

}  // namespace onnxscope::viewer::graph
