// Pairing the tensors of two models of one network (an fp32 export and its
// fp16 or quantized version, a TorchScript export and a dynamo export, a
// model before and after an optimizer) that stand for the same value, so
// `diff A --against B` can compare them node by node.
//
// Pairs come from, strongest first: a mapping file the user wrote (or
// edited), the graph inputs, equal names, the graph outputs by position,
// nodes whose weights hold the same values, the module the exporter says a
// node came from (dynamo's name scopes, TorchScript's node names), and the
// structure (a node whose
// data inputs are paired with a B node's, of the same operator, pairs with
// it; paired nodes pair their inputs and outputs). Identity, Dropout, Cast
// between float types and QuantizeLinear -> DequantizeLinear pass a value on:
// they are aliases of their input, so inserted casts and Q/DQ pairs do not
// break a match. What stays unpaired is listed, never skipped in silence.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "onnxscope/diff.h"
#include "onnxscope/ir.h"

namespace onnxscope {

// How a pair was found.
enum class MatchHow { Mapping, Input, Name, Output, Weights, Scope, Structure };
const char* match_how_name(MatchHow h);  // "mapping", "input", "name", "output", "weights", "scope", "structure"

struct TensorPair {
  std::string a, b;
  MatchHow how = MatchHow::Structure;
};

// A node of one model with nothing paired: its label and operator.
struct MatchNode {
  std::string node, op_type;
};

// A pair the matcher found and dropped, and why ("shape [1,768] vs [768]").
struct RejectedPair {
  std::string a, b, why;
};

struct GraphMatch {
  std::vector<TensorPair> pairs;            // value roots, in A's topological order
  std::map<std::string, std::string> b_of;  // every A tensor paired (aliases included) -> the B tensor compared with it
  // Data nodes (nodes whose outputs depend on the inputs' values, not on
  // constants or shapes only) of each model:
  size_t data_nodes_a = 0, data_nodes_b = 0;
  size_t paired_a = 0, paired_b = 0;  // with an output paired one to one (aliases of a paired value included)
  // Unpaired, but between paired values on both sides (a decomposed
  // LayerNorm against a fused one): inside a rewritten region.
  std::vector<MatchNode> region_a, region_b;
  std::vector<MatchNode> unmatched_a, unmatched_b;  // the rest, in topological order
  std::vector<RejectedPair> rejected;
  // Share of A's and B's data nodes paired or inside a rewritten region.
  double coverage_a() const;
  double coverage_b() const;
  // "A: 120 data nodes, 100 paired, 15 in rewritten regions, 5 unmatched; B: ..."
  std::string summary() const;
};

// A user's mapping: one pair per line, "A_TENSOR <tab or spaces> B_TENSOR",
// or "A_TENSOR -" to keep A_TENSOR unpaired; '#' starts a comment. A third
// column (how the pair was found, as tensor_mapping_text writes it) is
// ignored. Its pairs come before every automatic one.
struct TensorMapping {
  std::string source;  // the file, for messages
  std::vector<std::pair<std::string, std::string>> pairs;
};
// Throws onnxscope::Error naming the file and line for an unreadable file or a malformed line.
TensorMapping read_tensor_mapping(const std::string& path);
// The pairs of `m` in that format, with a header naming both models: what
// --write-mapping writes, for the user to check and edit.
std::string tensor_mapping_text(const GraphMatch& m, const std::string& a_path, const std::string& b_path);

struct MatchOptions {
  const TensorMapping* mapping = nullptr;
  // Values of a run of each model (capture_run): the weights a graph
  // computes (DequantizeLinear of int8 weights, folded constants) are read
  // from them, and a pair whose two values differ in shape is dropped.
  const Capture* a_values = nullptr;
  const Capture* b_values = nullptr;
  bool by_name = true;  // false: equal names are no evidence (two unrelated exports reuse "add_1")
  // false: weights are not compared (every weight of both decoded): for a B
  // made from A that keeps A's value names, where the names pair everything.
  bool by_weights = true;
};

// Throws onnxscope::Error when a mapping names a tensor neither model has.
GraphMatch match_graphs(const Model& a, const Model& b, const MatchOptions& options = {});

}  // namespace onnxscope
