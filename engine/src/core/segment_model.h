// A run of consecutive nodes of a model's main graph as a model of its own:
// what a device engine hands to the CPU engine for the nodes it cannot run
// (core/partition.h), one prepared model per host segment.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "onnxscope/ir.h"

namespace onnxscope {

// Nodes [begin, end) of m.graph. Its inputs are the values those nodes read
// (subgraph captures included) that they do not make and that are not
// initializers, typed as m declares or inferred them; initializers they read
// stay initializers (sharing their storage); its outputs are the values they
// make that are in `outputs`, in node order. Opset imports, local functions
// and the value_info of the values inside come along; an unnamed node is
// named by its label in m ("Relu#7"), so messages name it as m would.
std::shared_ptr<Model> segment_model(const Model& m, size_t begin, size_t end, const std::set<std::string>& outputs);

// The values nodes [begin, end) make that a later node reads (subgraph
// captures included) or that are graph outputs: what a segment must hand on.
std::set<std::string> values_read_after(const Model& m, size_t begin, size_t end);

}  // namespace onnxscope
