// Static type and shape inference, good enough to label every edge of common
// models: element types from the operator schemas' type constraints, shapes
// from per-operator rules, symbolic dims carried by name, small integer
// shape computations (Shape -> Gather -> Concat -> Reshape) folded.
// What cannot be worked out stays unknown; nothing is guessed.
#pragma once

#include "onnxscope/diagnostics.h"
#include "onnxscope/ir.h"

namespace onnxscope {

class PluginSet;

// Adds a value_info entry for every node output of the main graph and of every
// subgraph whose type it can infer and that has no declared type yet.
// Conflicts between a declared and an inferred type become warnings.
// Operators a plugin supplies get their types from the plugin's shape function;
// a shape function that rejects its inputs is an error.
void infer_shapes(Model& model, Diagnostics& diags, const PluginSet* plugins = nullptr);

}  // namespace onnxscope
