// The rotary position embedding transformers' Llama-family models compute
// (apply_rotary_pos_emb with rotate_half), as both torch.onnx exporters write it:
//   x1 = Slice(x, 0, h, axis -1); x2 = Slice(x, h, end, axis -1)   (or Split(x) in two)
//   r = Concat(Neg(x2), x1, axis -1)
//   y = Add(Mul(x, cos), Mul(r, sin))                  (any operand order)
// -> onnxscope.cpu::RotaryHalf(x, cos, sin, split = h) (fused_ops.h): seven
// nodes and three intermediate copies of x become one pass over x. cos and
// sin are any values (the fused node broadcasts like the Muls and the Add
// did); h is a constant and the second half runs to the end of the axis.
// x float32; every intermediate private to the pattern.
#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// A Slice end this large reaches the end of any axis.
constexpr int64_t kToTheEnd = int64_t{1} << 30;

// The last axis of x, as a Slice/Split/Concat names it (-1, or rank - 1).
bool is_last_axis(const Graph& g, const std::string& x, int64_t axis) {
  if (axis == -1) return true;
  const auto rank = known_rank(g, x);
  return rank && *rank > 0 && axis == static_cast<int64_t>(*rank) - 1;
}

// Slice(x) over the last axis with unit step: its [start, end) (ends clamped later).
std::optional<std::pair<int64_t, int64_t>> last_axis_slice(const Model& m, const Graph& g, const Node& s, const std::string& x) {
  if (!is_op(s, "Slice") || s.inputs.size() < 3 || s.inputs[0] != x || s.outputs.size() != 1) return std::nullopt;
  auto starts = int_constant(m, s.inputs[1]);
  auto ends = int_constant(m, s.inputs[2]);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  if (s.inputs.size() > 3 && !s.inputs[3].empty()) {
    auto axes = int_constant(m, s.inputs[3]);
    if (!axes || axes->size() != 1 || !is_last_axis(g, x, (*axes)[0])) return std::nullopt;
  } else if (known_rank(g, x) != std::optional<size_t>(1)) {
    return std::nullopt;  // no axes: axis 0, the last only for a 1-D x
  }
  if (s.inputs.size() > 4 && !s.inputs[4].empty()) {
    auto steps = int_constant(m, s.inputs[4]);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
  }
  return std::make_pair((*starts)[0], (*ends)[0]);
}

// The halves x[..., :h] and x[..., h:] that `concat`'s inputs come from,
// appended to `chain`; h or nullopt.
std::optional<int64_t> halves(const Model& m, const Graph& g, const GraphIndex& idx, const std::string& x,
                              const std::string& first, const std::string& neg_in, std::vector<const Node*>& chain) {
  const Node* a = idx.producer_of(g, first);   // x[..., :h]
  const Node* b = idx.producer_of(g, neg_in);  // x[..., h:]
  if (!a || !b) return std::nullopt;
  if (a == b) {  // Split(x, axis -1) into two: [:h] and [h:]
    if (!is_op(*a, "Split") || a->inputs.empty() || a->inputs[0] != x || a->outputs.size() != 2 || a->outputs[0] != first ||
        a->outputs[1] != neg_in)
      return std::nullopt;
    const Attribute* axis = a->attribute("axis");
    if (!is_last_axis(g, x, axis ? axis->i : 0)) return std::nullopt;
    std::optional<std::vector<int64_t>> split;
    if (a->inputs.size() > 1 && !a->inputs[1].empty()) split = int_constant(m, a->inputs[1]);
    else if (const Attribute* s = a->attribute("split")) split = s->ints;
    if (!split) {  // equal halves (num_outputs 2 from opset 18): of a known, even last dim
      const auto t = tensor_type(g, x);
      if (!t || !t->shape || t->shape->empty() || !t->shape->back().is_known() || t->shape->back().value % 2 != 0)
        return std::nullopt;
      split = std::vector<int64_t>(2, t->shape->back().value / 2);
    }
    if (split->size() != 2 || (*split)[0] != (*split)[1] || (*split)[0] <= 0) return std::nullopt;
    chain.push_back(a);
    return (*split)[0];
  }
  auto sa = last_axis_slice(m, g, *a, x);
  auto sb = last_axis_slice(m, g, *b, x);
  if (!sa || !sb || sa->first != 0 || sa->second <= 0 || sb->first != sa->second || sb->second < kToTheEnd) return std::nullopt;
  chain.push_back(a);
  chain.push_back(b);
  return sa->second;
}

}  // namespace

bool fuse_rotary(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& cat = g.nodes[i];
    if (remove[i] || !is_op(cat, "Concat") || cat.inputs.size() != 2 || cat.outputs.size() != 1) continue;
    const Attribute* axis = cat.attribute("axis");
    const Node* neg = idx.producer_of(g, cat.inputs[0]);
    if (!axis || !neg || !is_op(*neg, "Neg") || neg->inputs.size() != 1 ||
        !idx.only_read_by(cat.inputs[0], i) || !idx.only_read_by(cat.inputs[1], i))
      continue;
    const Node* half_src = idx.producer_of(g, neg->inputs[0]);
    if (!half_src || half_src->inputs.empty()) continue;
    const std::string x = half_src->inputs[0];
    if (elem_type(g, x) != DataType::Float || !is_last_axis(g, x, axis->i)) continue;
    // The second half must be read by Neg alone (the first by Concat alone, checked above).
    if (!idx.only_read_by(neg->inputs[0], static_cast<size_t>(neg - g.nodes.data()))) continue;
    std::vector<const Node*> chain;
    const auto h = halves(model, g, idx, x, cat.inputs[1], neg->inputs[0], chain);
    if (!h) continue;
    chain.push_back(neg);
    chain.push_back(&cat);
    // Mul(r, sin) -> Add(Mul(x, cos), that).
    const Node* mul_sin = idx.sole_reader(g, cat.outputs[0], "Mul");
    if (!mul_sin) continue;
    const std::string sin = other_operand(*mul_sin, cat.outputs[0]);
    const Node* add = idx.sole_reader(g, mul_sin->outputs[0], "Add");
    if (sin.empty() || !add) continue;
    const Node* mul_cos = idx.producer_of(g, other_operand(*add, mul_sin->outputs[0]));
    if (!mul_cos || !is_op(*mul_cos, "Mul") || mul_cos->outputs.size() != 1 ||
        !idx.only_read_by(mul_cos->outputs[0], static_cast<size_t>(add - g.nodes.data())))
      continue;
    const std::string cos = other_operand(*mul_cos, x);
    if (cos.empty()) continue;
    chain.push_back(mul_sin);
    chain.push_back(mul_cos);
    chain.push_back(add);
    Node rot;
    rot.name = unique_node_name(g, cat.name.empty() ? "RotaryHalf" : cat.name + "_RotaryHalf");
    rot.op_type = kRotaryHalf;
    rot.domain = kCpuDomain;
    rot.inputs = {x, cos, sin};
    rot.outputs = {add->outputs[0]};
    rot.attributes = {make_attr_int("split", *h)};
    if (replace_chain(ctx, g, remove, chain, std::move(rot))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused) add_cpu_opset(model);
  if (fused) log_pass(ctx, model, "fuse-rotary: " + std::to_string(fused) + " RotaryHalf");
  return fused > 0;
}

}  // namespace onnxscope::cpu
