// The CPU engine's graph passes (one file each) and helpers they share.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/optimizer.h"

namespace onnxscope::cpu {

bool eliminate_identity(Model& model, PassContext& ctx);    // passes/eliminate_identity.cpp
bool eliminate_dead_nodes(Model& model, PassContext& ctx);  // passes/eliminate_dead_nodes.cpp
bool constant_folding(Model& model, PassContext& ctx);      // passes/constant_folding.cpp
bool compute_low_precision_in_float32(Model& model, PassContext& ctx);  // passes/compute_low_precision_in_float32.cpp
bool common_subexpression_elimination(Model& model, PassContext& ctx);  // passes/common_subexpression_elimination.cpp
bool cancel_transpose_reshape(Model& model, PassContext& ctx);          // passes/cancel_transpose_reshape.cpp
bool fold_conv_batchnorm(Model& model, PassContext& ctx);   // passes/fold_conv_batchnorm.cpp
bool fold_conv_mul_add(Model& model, PassContext& ctx);     // passes/fold_conv_mul_add.cpp
bool matmul_add_to_gemm(Model& model, PassContext& ctx);    // passes/matmul_add_to_gemm.cpp
bool fuse_conv_activation(Model& model, PassContext& ctx);  // passes/fuse_activation.cpp
bool fuse_gemm_activation(Model& model, PassContext& ctx);  // passes/fuse_activation.cpp
bool fuse_matmul_bias_activation(Model& model, PassContext& ctx);  // passes/fuse_activation.cpp
bool fuse_layernorm(Model& model, PassContext& ctx);        // passes/fuse_layernorm.cpp
bool fuse_rmsnorm(Model& model, PassContext& ctx);          // passes/fuse_rmsnorm.cpp
bool fuse_rotary(Model& model, PassContext& ctx);           // passes/fuse_rotary.cpp
bool fuse_gelu(Model& model, PassContext& ctx);             // passes/fuse_gelu.cpp
bool expand_contrib_gelu(Model& model, PassContext& ctx);   // passes/expand_contrib_gelu.cpp
bool expand_contrib_fused(Model& model, PassContext& ctx);  // passes/expand_contrib_fused.cpp
bool fuse_sdpa(Model& model, PassContext& ctx);             // passes/fuse_sdpa.cpp
bool fuse_masked_sdpa(Model& model, PassContext& ctx);      // passes/fuse_masked_sdpa.cpp (devices only)
bool fuse_attention_transposes(Model& model, PassContext& ctx);  // passes/fuse_attention_transposes.cpp (devices only)
bool fuse_add_layernorm(Model& model, PassContext& ctx);    // passes/fuse_add_layernorm.cpp (devices only)
bool fuse_conv_residual(Model& model, PassContext& ctx);    // passes/fuse_conv_residual.cpp (devices only)
bool fuse_elementwise(Model& model, PassContext& ctx);      // passes/fuse_elementwise.cpp (devices only)
bool nchwc_layout(Model& model, PassContext& ctx);          // passes/nchwc_layout.cpp (runs last)
bool fuse_squeeze_excitation(Model& model, PassContext& ctx);  // passes/fuse_squeeze_excitation.cpp (after nchwc-layout)
bool nhwc_int8_layout(Model& model, PassContext& ctx);      // passes/nhwc_int8_layout.cpp (runs last)
bool fuse_quantized_lookup(Model& model, PassContext& ctx);  // passes/fuse_quantized_lookup.cpp
bool fuse_matmul_integer_to_float(Model& model, PassContext& ctx);  // passes/fuse_matmul_integer_to_float.cpp
bool fuse_qdq(Model& model, PassContext& ctx);              // passes/fuse_qdq.cpp (before constant-folding)

// --- helpers (passes/pass_util.cpp) -----------------------------------------
// Replaces every read of value `from` by `to` (node inputs, nested subgraphs' captures).
void rename_uses(Graph& g, const std::string& from, const std::string& to);
// Names a node's subgraph attributes read from the enclosing scope.
std::set<std::string> names_read_by_subgraphs(const Node& n);
// Number of nodes (and graph outputs) reading a value.
size_t use_count(const Graph& g, const std::string& name);

// Who produces and who reads each value of a graph, built once per scan.
struct GraphIndex {
  explicit GraphIndex(const Graph& g);
  std::unordered_map<std::string, size_t> producer;                  // value -> node index
  std::unordered_map<std::string, std::vector<size_t>> readers;      // value -> reading nodes (once per input slot)
  std::set<std::string> graph_outputs;
  std::set<std::string> subgraph_reads;  // captured by some If/Loop/Scan body
  // The node producing `value`, or nullptr (graph input, initializer).
  const Node* producer_of(const Graph& g, const std::string& value) const;
  int producer_index(const std::string& value) const;
  // True when `value` is read by exactly one input slot of node `reader` and
  // nothing else (no other node, no graph output, no subgraph): fusing it away is safe.
  bool only_read_by(const std::string& value, size_t reader) const;
  size_t reader_count(const std::string& value) const;
  // The one node reading `value` (and nothing else reads it), if it is a
  // single-output `op` of the default domain; else nullptr.
  const Node* sole_reader(const Graph& g, const std::string& value, const char* op) const;
};

// A value whose content is fixed at prepare time: an initializer the caller
// cannot override (not a graph input, or IR < 4), or a Constant node's 'value'.
const Tensor* constant_tensor(const Model& m, const std::string& name);
// The per-channel values of a float constant `t` broadcast against an
// [N, C, ...] value of `rank` with `channels` channels ([C,1,1], [1,C,1,1],
// [1], a scalar...), or nullopt when `t` varies along another axis.
std::optional<std::vector<float>> per_channel(const Tensor* t, size_t rank, int64_t channels);
// The one element of a numeric constant (any rank with one element).
std::optional<double> scalar_constant(const Model& m, const std::string& name);
// Input i of n is a constant with one element (or absent, where `optional`):
// a scale or zero point that means the same in any layout.
bool scalar_parameter(const Model& m, const Node& n, size_t i, bool optional);
// A DequantizeLinear or QuantizeLinear with one constant scale (and zero point): elementwise.
bool per_tensor_quantization(const Model& m, const Node& n);
// A one-input float activation (HardSigmoid, HardSwish, Sigmoid, Relu,
// LeakyRelu, Tanh, Elu, Selu, Softsign; Clip with constant bounds):
// elementwise, each output value a function of its input value alone.
bool is_float_activation(const Model& m, const Node& n);
// Integer values of a 1-D (or scalar) constant.
std::optional<std::vector<int64_t>> int_constant(const Model& m, const std::string& name);

// The declared/inferred tensor type of a value (initializers included), if its element type is known.
std::optional<TypeInfo> tensor_type(const Graph& g, const std::string& name);
DataType elem_type(const Graph& g, const std::string& name);  // Undefined if unknown
// Every dim known (a number): the static shape.
std::optional<Shape> static_shape(const Graph& g, const std::string& name);
// Rank if known.
std::optional<size_t> known_rank(const Graph& g, const std::string& name);

bool is_op(const Node& n, const char* op_type);  // default domain
// Add, or a Sum of two inputs (older exporters write residuals as Sum: the
// model zoo's ResNet-50), with one named output.
bool is_two_input_add(const Node& n);
// A node name that no node of g uses yet, derived from `base`.
std::string unique_node_name(const Graph& g, const std::string& base);
// A value name no node output, input or initializer of g uses yet.
std::string unique_value_name(const Graph& g, const std::string& base);
// Names for the nodes and values a layout pass adds, taken once from the
// graph before its nodes move into the new list: none is used by g (node
// names, inputs, outputs, initializers) or was given out before.
class FreshNames {
 public:
  explicit FreshNames(const Graph& g);
  std::string operator()(const std::string& base);

 private:
  std::set<std::string> used_;
};
// Mul(x, alpha) writing `out`: alpha a new float scalar initializer named after `base`.
Node scale_node(Graph& g, const std::string& base, const std::string& x, float alpha, const std::string& out);
// Declares domain "onnxscope.cpu" version 1 in the model's opset imports.
void add_cpu_opset(Model& m);
// Replaces the nodes of `chain` (pointers into g.nodes) by `fused`, which takes
// the place of the last of them and records them as its provenance; the others
// are flagged in `remove`. False, and nothing changes, when one of them is
// already flagged (taken by an earlier replacement in the same scan), or
// when the rewrite budget is spent (PassContext::allow, anchored at the
// chain's first node).
bool replace_chain(PassContext& ctx, Graph& g, std::vector<bool>& remove, const std::vector<const Node*>& chain,
                   Node fused);
// Removes the nodes flagged in `remove` (same size as g.nodes), keeping order.
size_t erase_nodes(Graph& g, const std::vector<bool>& remove);
// For a binary node reading `value`, its other operand ("" when it reads `value` twice or is not binary).
std::string other_operand(const Node& n, const std::string& value);
// ReduceMean's axes (its attribute, or its constant input from opset 18)
// when keepdims is 1; nullopt otherwise (or for "all axes").
std::optional<std::vector<int64_t>> reduce_mean_axes(const Model& m, const Node& r);
// Number k of trailing axes `axes` covers exactly (as -k..-1), or 0.
int64_t trailing_axes_count(std::vector<int64_t> axes, std::optional<size_t> rank);
// Float32 `p` broadcasts unidirectionally to x's shape: its static dims match
// x's trailing ones or are 1 (a normalization's scale or bias).
bool broadcasts_to(const Graph& g, const std::string& p, const std::string& x);
// Attribute helpers for building nodes.
Attribute make_attr_int(const std::string& name, int64_t v);
// Node `name`: output = Cast(input, to=type).
Node make_cast(const std::string& name, const std::string& input, const std::string& output, DataType type);
Attribute make_attr_float(const std::string& name, float v);
Attribute make_attr_string(const std::string& name, const std::string& v);
Attribute make_attr_floats(const std::string& name, std::vector<float> v);
Attribute make_attr_ints(const std::string& name, std::vector<int64_t> v);
void log_pass(PassContext& ctx, const Model& m, const std::string& line);

}  // namespace onnxscope::cpu
