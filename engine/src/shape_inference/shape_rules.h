// Per-operator shape rules used by infer_shapes (shape_inference.cpp).
// The driver works out element types from the schemas; a rule only computes
// output shapes (and folds small integer values) from what is known about
// its inputs. A rule never throws on odd input: it leaves outputs unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onnxscope/ir.h"

namespace onnxscope::shape_rules {

// Largest integer value we fold (elements); bigger tensors are data, not shapes.
inline constexpr size_t kMaxFoldElems = 64;
// A rank read from data beyond this is corrupt; never allocate for it.
inline constexpr int64_t kMaxRank = 1024;

// One element of a folded integer value: a number (any sign), a symbolic
// dimension (from Shape of a symbolically shaped tensor), or unknown.
struct SymInt {
  std::optional<int64_t> num;
  std::string sym;  // used when num is empty; empty too means unknown

  static SymInt of(int64_t v) { return SymInt{v, {}}; }
  static SymInt of_dim(const Dim& d);
  bool is_num() const { return num.has_value(); }
  bool is_sym() const { return !num && !sym.empty(); }
  // Dim view: numbers >= 0 known, symbols symbolic, the rest unknown.
  Dim to_dim() const;
  bool operator==(const SymInt&) const = default;
};

// Contents of a small integer tensor of rank 0 or 1.
struct Folded {
  std::vector<SymInt> elems;
  bool scalar = false;
  // All elements as numbers, or nullopt if any is not a number.
  std::optional<std::vector<int64_t>> numbers() const;
};

// Integer contents of a constant tensor (rank <= 1, <= kMaxFoldElems).
std::optional<Folded> fold_tensor(const Tensor& t);
// Real contents of a small constant tensor (rank <= 1, any numeric type).
std::optional<std::vector<double>> reals_of_tensor(const Tensor& t);

struct InputView {
  const TypeInfo* type = nullptr;                // nullptr: omitted or unknown
  const Folded* value = nullptr;                 // folded integer contents
  const std::vector<double>* reals = nullptr;    // small constant real contents
  bool present = false;                          // named in the node (not "")
};

// What a rule sees and writes.
struct RuleIO {
  const Node& node;
  int64_t opset = 0;  // opset of the default domain
  std::vector<InputView> in;
  std::vector<std::optional<std::vector<Dim>>> out;  // per node output; nullopt = rank unknown
  std::vector<std::optional<Folded>> out_value;      // folded result, integer outputs only
  std::string note;                                  // why the rule gave up on bad input

  RuleIO(const Node& n, int64_t op_set) : node(n), opset(op_set) {}

  size_t num_inputs() const { return in.size(); }
  size_t num_outputs() const { return out.size(); }
  bool has(size_t i) const { return i < in.size() && in[i].present; }
  const std::vector<Dim>* shape(size_t i) const;  // nullptr if rank unknown
  const Folded* value(size_t i) const { return i < in.size() ? in[i].value : nullptr; }
  const std::vector<double>* reals(size_t i) const { return i < in.size() ? in[i].reals : nullptr; }
  // Numbers of a folded integer input, nullopt if absent or not all numbers.
  std::optional<std::vector<int64_t>> ints_in(size_t i) const;

  const Attribute* attr(std::string_view name) const { return node.attribute(name); }
  int64_t attr_i(std::string_view name, int64_t def) const;
  float attr_f(std::string_view name, float def) const;
  std::string attr_s(std::string_view name, std::string def) const;
  std::optional<std::vector<int64_t>> attr_ints(std::string_view name) const;
  std::optional<std::vector<float>> attr_floats(std::string_view name) const;

  void set(size_t i, std::vector<Dim> s) {
    if (i < out.size()) out[i] = std::move(s);
  }
  void set_value(size_t i, Folded v) {
    if (i < out_value.size()) out_value[i] = std::move(v);
  }
  void fail(std::string why) { note = std::move(why); }
};

using ShapeRule = void (*)(RuleIO&);
// Rule for an ai.onnx op, or nullptr.
ShapeRule find_rule(std::string_view op_type);

// --- dim arithmetic shared by the rules -------------------------------------
// Axis in [-rank, rank) -> [0, rank), nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);
Dim dim_mul(const Dim& a, const Dim& b);
Dim dim_product(std::span<const Dim> dims);
// Known + known; x + 0 = x; otherwise unknown (v may be negative).
Dim dim_add(const Dim& a, int64_t v);
// Multidirectional (numpy) broadcast of several shapes; nullopt on a clear mismatch.
std::optional<std::vector<Dim>> broadcast_shapes(std::span<const std::vector<Dim>* const> shapes);
// More specific of two dims that should be equal (known beats symbolic beats unknown).
Dim dim_merge(const Dim& a, const Dim& b);
std::vector<Dim> known_dims(std::span<const int64_t> v);
// Known dim for v >= 0, unknown otherwise (attribute values may be anything).
inline Dim dim_of(int64_t v) { return v >= 0 ? Dim::known(v) : Dim{}; }
// floor() of a real size, unknown when negative, NaN or out of int64 range.
Dim dim_from_real(double v);
// `rank` unknown dims, or nullopt for a negative or absurd rank.
std::optional<std::vector<Dim>> unknown_dims(int64_t rank);

// --- rule families (defined in shape_rules*.cpp) -----------------------------
// elementwise and misc (shape_rules.cpp)
void rule_same_as_input0(RuleIO&);
void rule_broadcast(RuleIO&);
void rule_prelu(RuleIO&);
void rule_identity(RuleIO&);
void rule_cast(RuleIO&);
void rule_constant(RuleIO&);
void rule_constant_of_shape(RuleIO&);
void rule_dropout(RuleIO&);
void rule_range(RuleIO&);
void rule_quantize(RuleIO&);
void rule_dynamic_quantize(RuleIO&);
void rule_arith_fold(RuleIO&);
void rule_equal(RuleIO&);
void rule_where(RuleIO&);
void rule_random(RuleIO&);
void rule_nonzero(RuleIO&);
void rule_one_hot(RuleIO&);
void rule_depth_to_space(RuleIO&);
void rule_space_to_depth(RuleIO&);
void rule_nms(RuleIO&);
void rule_compress(RuleIO&);
void rule_det(RuleIO&);
void rule_neg(RuleIO&);
void rule_scalar(RuleIO&);
void rule_unique(RuleIO&);
void rule_loss(RuleIO&);
void rule_window(RuleIO&);
void rule_mel_weight_matrix(RuleIO&);
void rule_bitcast(RuleIO&);
void rule_affine_grid(RuleIO&);
void rule_col2im(RuleIO&);

// NN ops (shape_rules_nn.cpp)
void rule_conv(RuleIO&);
void rule_conv_integer(RuleIO&);
void rule_qlinear_conv(RuleIO&);
void rule_conv_transpose(RuleIO&);
void rule_pool(RuleIO&);
void rule_max_unpool(RuleIO&);
void rule_global_pool(RuleIO&);
void rule_batch_norm(RuleIO&);
void rule_layer_norm(RuleIO&);
void rule_gemm(RuleIO&);
void rule_matmul(RuleIO&);
void rule_qlinear_matmul(RuleIO&);
void rule_resize(RuleIO&);
void rule_upsample(RuleIO&);
void rule_einsum(RuleIO&);
void rule_rnn(RuleIO&);
void rule_grid_sample(RuleIO&);
void rule_roi_align(RuleIO&);
void rule_max_roi_pool(RuleIO&);
void rule_topk(RuleIO&);

// shape manipulation and folding (shape_rules_tensor.cpp)
void rule_shape(RuleIO&);
void rule_size(RuleIO&);
void rule_reshape(RuleIO&);
void rule_flatten(RuleIO&);
void rule_transpose(RuleIO&);
void rule_concat(RuleIO&);
void rule_split(RuleIO&);
void rule_squeeze(RuleIO&);
void rule_unsqueeze(RuleIO&);
void rule_gather(RuleIO&);
void rule_gather_elements(RuleIO&);
void rule_gather_nd(RuleIO&);
void rule_slice(RuleIO&);
void rule_expand(RuleIO&);
void rule_tile(RuleIO&);
void rule_pad(RuleIO&);
void rule_reduce(RuleIO&);
void rule_arg_reduce(RuleIO&);
void rule_center_crop_pad(RuleIO&);

}  // namespace onnxscope::shape_rules
