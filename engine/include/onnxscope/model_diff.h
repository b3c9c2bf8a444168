// Comparing two models of one network (`diff A --against B`): the same
// inputs fed to both, B's values renamed to A's tensors through a graph
// match (graph_match.h), compared along A's order, and blame: the piece of B
// that computes each paired value, re-run on A's values.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include "onnxscope/diff.h"
#include "onnxscope/engine.h"
#include "onnxscope/graph_match.h"
#include "onnxscope/reduce.h"

namespace onnxscope {

// B's inputs made from A's: by name when both models name their inputs
// alike, else by position; float values converted to B's declared float
// type. Throws onnxscope::Error naming both files when the inputs do not
// pair (another count, a type or shape B's declaration refuses).
NamedValues inputs_for_other(const Model& a, const Model& b, const NamedValues& a_inputs);

// B's run as if it were A's: each value under the name of the A tensor it is
// paired with (every alias of a paired A value included).
Capture capture_in_a_names(const GraphMatch& m, const Capture& b);

// The quantization step of each A tensor whose partner in B is quantized
// (B's QuantizeLinear/DequantizeLinear of the value, quantization_steps()),
// with A's own quantized tensors: what --quant-steps and the report's
// "N quantization steps" use.
std::map<std::string, double> quantization_steps_against(const Model& a, const Model& b, const GraphMatch& m);

// The comparison along A's data nodes (constants and shape plumbing, which
// no run of B renames, left out): each output paired or "only in A".
// Fills NodeDiff::partners with the B tensor each output was compared with.
DiffReport diff_against(const Model& a, const GraphMatch& m, const Capture& ca, const Capture& cb_in_a_names,
                        const DiffTolerance& tol);

// Blame across models: for each compared A node, the nodes of B that compute
// its partners from paired values and constants (at most max_nodes), run in
// engine_b on A's values (converted to B's float types), compared with A's
// outputs. A node whose piece reaches an unpaired input of B, or is larger,
// gets no blame. Returns false when should_stop ended it early.
bool blame_against(const Model& a, const Model& b, const GraphMatch& m, const Capture& ca, const Capture& cb,
                   Engine& engine_b, const DiffTolerance& tol, DiffReport& report, size_t max_nodes = 64,
                   const std::function<bool()>& should_stop = {});

// reduce A --against B: the piece of B for the most-blamed A node (else for
// the first divergent one) that still diverges, written as a backend-style
// test folder: B's nodes, A's values as inputs (in B's types), A's outputs
// as the expected outputs (in the type B's piece gives them).
ReduceResult reduce_against(const Model& a, const Model& b, const GraphMatch& m, const Capture& ca, const Capture& cb,
                            Engine& engine_b, const DiffTolerance& tol, const DiffReport& report,
                            const std::filesystem::path& out_dir);

}  // namespace onnxscope
