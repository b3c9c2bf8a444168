// The CPU engine's graph passes (one file each) and helpers they share.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "cpu/optimizer.h"

namespace onnxscope::cpu {

bool eliminate_identity(Model& model, PassContext& ctx);    // passes/eliminate_identity.cpp
bool eliminate_dead_nodes(Model& model, PassContext& ctx);  // passes/eliminate_dead_nodes.cpp

// --- helpers (passes/pass_util.cpp) -----------------------------------------
// Replaces every read of value `from` by `to` (node inputs, nested subgraphs' captures).
void rename_uses(Graph& g, const std::string& from, const std::string& to);
// Names a node's subgraph attributes read from the enclosing scope.
std::set<std::string> names_read_by_subgraphs(const Node& n);
// Number of nodes (and graph outputs) reading a value.
size_t use_count(const Graph& g, const std::string& name);

}  // namespace onnxscope::cpu
