// The decomposed-attention matcher (cpu/passes/sdpa_match.h).
#include "cpu/passes/sdpa_match.h"

#include <algorithm>

namespace onnxscope::cpu {
namespace {

bool same_dim(const Dim& x, const Dim& y) { return (x.is_known() && x == y) || (x.is_symbolic() && x == y); }

// x and y are the same dim, or (unknown_dims) they are not two different
// numbers (an unknown dim, or symbolic names that may be one value): then
// *trusted is set.
bool same_or_unknown(const Dim& x, const Dim& y, bool unknown_dims, bool* trusted) {
  if (same_dim(x, y)) return true;
  if (!unknown_dims || (x.is_known() && y.is_known())) return false;
  *trusted = true;
  return true;
}

std::optional<std::vector<Dim>> dims_of(const Graph& g, const std::string& v) {
  auto t = tensor_type(g, v);
  if (!t || !t->shape) return std::nullopt;
  return *t->shape;
}

bool float_rank4(const Graph& g, const std::string& v) {
  return elem_type(g, v) == DataType::Float && known_rank(g, v) == size_t{4};
}

// A positive float32 constant with one element that keeps a 4-D operand's
// shape when it broadcasts into it.
std::optional<double> positive_scalar(const Model& m, const std::string& name) {
  const Tensor* t = constant_tensor(m, name);
  if (!t || t->rank() > 4 || t->dtype() != DataType::Float) return std::nullopt;
  auto c = scalar_constant(m, name);
  if (!c || !(*c > 0)) return std::nullopt;
  return c;
}

// `value` = Mul(x, c) or Mul(c, x) with c a positive scalar, its output read
// only by node `reader`: x and c, else nullopt.
std::optional<std::pair<std::string, double>> scaled(const Model& m, const GraphIndex& idx, const std::string& value,
                                                     size_t reader, const Node** node) {
  const Graph& g = m.graph;
  const Node* mul = idx.producer_of(g, value);
  if (!mul || !is_op(*mul, "Mul") || mul->inputs.size() != 2 || mul->outputs.size() != 1 || !idx.only_read_by(value, reader))
    return std::nullopt;
  for (size_t at : {size_t{1}, size_t{0}})
    if (auto c = positive_scalar(m, mul->inputs[at])) {
      *node = mul;
      return std::make_pair(mul->inputs[1 - at], *c);
    }
  return std::nullopt;
}

// One entry of a shape vector computed from Shape(x): a constant, or dim
// `dim` of x.
struct ShapeEntry {
  bool is_dim = false;
  int64_t v = 0;
  bool operator==(const ShapeEntry&) const = default;
};

// What the int64 vector `value` holds in terms of x's dims (x of rank
// `rank`): constants, Shape(x) (with start/end), Slice of such a vector by
// constant starts/ends on axis 0 with step 1, and Concat of such vectors.
std::optional<std::vector<ShapeEntry>> shape_vector(const Model& m, const GraphIndex& idx, const std::string& value,
                                                    const std::string& x, int64_t rank, int depth = 0) {
  if (depth > 8) return std::nullopt;
  if (auto c = int_constant(m, value)) {
    std::vector<ShapeEntry> out;
    for (int64_t v : *c) out.push_back({false, v});
    return out;
  }
  const Graph& g = m.graph;
  const Node* n = idx.producer_of(g, value);
  if (!n || !n->domain.empty() || n->outputs.size() != 1) return std::nullopt;
  // A start or end of Shape/Slice, clamped as the spec does.
  auto clamp = [](int64_t i, int64_t size) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
  if (n->op_type == "Shape") {
    if (n->inputs.size() != 1 || n->inputs[0] != x) return std::nullopt;
    const Attribute* s = n->attribute("start");
    const Attribute* e = n->attribute("end");
    const int64_t from = clamp(s ? s->i : 0, rank), to = clamp(e ? e->i : rank, rank);
    std::vector<ShapeEntry> out;
    for (int64_t d = from; d < to; ++d) out.push_back({true, d});
    return out;
  }
  if (n->op_type == "Slice") {
    if (n->inputs.size() < 3 || n->inputs.size() > 5 || m.opset_version("") < 10) return std::nullopt;
    auto starts = int_constant(m, n->inputs[1]), ends = int_constant(m, n->inputs[2]);
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    if (n->inputs.size() > 3 && !n->inputs[3].empty()) {
      auto axes = int_constant(m, n->inputs[3]);
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
    }
    if (n->inputs.size() > 4 && !n->inputs[4].empty()) {
      auto steps = int_constant(m, n->inputs[4]);
      if (!steps || *steps != std::vector<int64_t>{1}) return std::nullopt;
    }
    auto in = shape_vector(m, idx, n->inputs[0], x, rank, depth + 1);
    if (!in) return std::nullopt;
    const auto size = static_cast<int64_t>(in->size());
    const int64_t from = clamp((*starts)[0], size), to = clamp((*ends)[0], size);
    if (to <= from) return std::vector<ShapeEntry>{};
    return std::vector<ShapeEntry>(in->begin() + from, in->begin() + to);
  }
  if (n->op_type == "Concat") {
    const Attribute* axis = n->attribute("axis");
    if (!axis || (axis->i != 0 && axis->i != -1)) return std::nullopt;
    std::vector<ShapeEntry> out;
    for (const std::string& in : n->inputs) {
      auto part = shape_vector(m, idx, in, x, rank, depth + 1);
      if (!part) return std::nullopt;
      out.insert(out.end(), part->begin(), part->end());
    }
    return out;
  }
  return std::nullopt;
}

// `kt` = Reshape(Transpose(Reshape(k, [-1, k2, k3]), [0, 2, 1]), [k0, k1, k3, k2]),
// each intermediate read by the next alone, `kt` by node `reader` alone: k
// and the three nodes. That is Transpose(k, [0, 1, 3, 2]): the first Reshape
// merges the batch and head dims in order and the last splits them again.
// (With allowzero 0 and a dim of 0 in K, the unfused Reshapes would read the
// 0 as "copy this dim" and fail; the match then gives a result for an empty K.)
std::optional<std::string> reshaped_transpose(const Model& m, const GraphIndex& idx, const std::string& kt,
                                              size_t reader, std::vector<const Node*>& nodes) {
  const Graph& g = m.graph;
  const Node* back = idx.producer_of(g, kt);
  if (!back || !is_op(*back, "Reshape") || back->inputs.size() != 2 || !idx.only_read_by(kt, reader)) return std::nullopt;
  const int t_at = idx.producer_index(back->inputs[0]);
  if (t_at < 0) return std::nullopt;
  const Node& tr = g.nodes[static_cast<size_t>(t_at)];
  const Attribute* perm = tr.attribute("perm");
  if (!is_op(tr, "Transpose") || tr.inputs.size() != 1 || !perm || perm->ints != std::vector<int64_t>{0, 2, 1} ||
      !idx.only_read_by(back->inputs[0], static_cast<size_t>(idx.producer_index(kt))))
    return std::nullopt;
  const int f_at = idx.producer_index(tr.inputs[0]);
  if (f_at < 0) return std::nullopt;
  const Node& front = g.nodes[static_cast<size_t>(f_at)];
  if (!is_op(front, "Reshape") || front.inputs.size() != 2 || !idx.only_read_by(tr.inputs[0], static_cast<size_t>(t_at)))
    return std::nullopt;
  const std::string& k = front.inputs[0];
  if (!float_rank4(g, k)) return std::nullopt;
  using E = ShapeEntry;
  auto first = shape_vector(m, idx, front.inputs[1], k, 4);
  auto last = shape_vector(m, idx, back->inputs[1], k, 4);
  if (!first || *first != std::vector<E>{{false, -1}, {true, 2}, {true, 3}}) return std::nullopt;
  if (!last || *last != std::vector<E>{{true, 0}, {true, 1}, {true, 3}, {true, 2}}) return std::nullopt;
  nodes = {&front, &tr, back};
  return k;
}

// The mask adds into scores [q0, q1, q2, k2] without enlarging them: known
// rank at most 4, each dim (aligned from the right) 1 or the scores' own.
bool mask_fits(const Graph& g, const std::string& mask, const std::vector<Dim>& scores, bool unknown_dims,
               bool* trusted) {
  if (elem_type(g, mask) != DataType::Float) return false;
  auto md = dims_of(g, mask);
  if (!md || md->size() > 4) return false;
  for (size_t i = 0; i < md->size(); ++i) {
    const Dim& d = (*md)[md->size() - 1 - i];
    const Dim& s = scores[scores.size() - 1 - i];
    if (!(d.is_known() && d.value == 1) && !same_or_unknown(d, s, unknown_dims, trusted)) return false;
  }
  return true;
}

}  // namespace

std::optional<SdpaMatch> match_sdpa(const Model& model, const GraphIndex& idx, size_t at, bool unknown_dims) {
  const Graph& g = model.graph;
  const Node& qk = g.nodes[at];
  if (!is_op(qk, "MatMul") || qk.inputs.size() != 2 || qk.outputs.size() != 1) return std::nullopt;
  SdpaMatch r;
  // Q, or Q * sq.
  r.q = qk.inputs[0];
  const Node* mul = nullptr;
  if (auto s = scaled(model, idx, r.q, at, &mul)) {
    r.q = s->first;
    r.scale_q = s->second;
    r.chain.push_back(mul);
  }
  // K^T, or K^T * sk; K^T as a Transpose or the Reshape/Transpose/Reshape form.
  std::string kt = qk.inputs[1];
  size_t kt_reader = at;
  const Node* kmul = nullptr;
  if (auto s = scaled(model, idx, kt, at, &kmul)) {
    kt = s->first;
    r.scale_k = s->second;
    kt_reader = static_cast<size_t>(idx.producer_index(qk.inputs[1]));
  }
  const Node* tr = idx.producer_of(g, kt);
  const Attribute* perm = tr ? tr->attribute("perm") : nullptr;
  std::vector<const Node*> k_nodes;
  if (tr && is_op(*tr, "Transpose") && tr->inputs.size() == 1 && perm && perm->ints == std::vector<int64_t>{0, 1, 3, 2} &&
      idx.only_read_by(kt, kt_reader)) {
    r.k = tr->inputs[0];
    k_nodes = {tr};
  } else if (tr && is_op(*tr, "Transpose") && tr->inputs.size() == 1 && perm &&
             perm->ints == std::vector<int64_t>{0, 2, 3, 1} && idx.only_read_by(kt, kt_reader)) {
    r.k = tr->inputs[0];  // [B, T, H, D]: K's heads Transpose and K^T's, merged
    r.k_bshd = true;
    k_nodes = {tr};
  } else if (auto k = reshaped_transpose(model, idx, kt, kt_reader, k_nodes)) {
    r.k = *k;
    r.reshaped_transpose = true;
  } else {
    return std::nullopt;
  }
  r.chain.insert(r.chain.end(), k_nodes.begin(), k_nodes.end());
  if (kmul) r.chain.push_back(kmul);
  r.chain.push_back(&qk);
  if (!float_rank4(g, r.q) || !float_rank4(g, r.k)) return std::nullopt;
  const std::vector<Dim> qd = *dims_of(g, r.q);
  std::vector<Dim> kd = *dims_of(g, r.k);
  if (r.k_bshd) std::swap(kd[1], kd[2]);  // as [B, H, T, D]
  bool& trusted = r.unchecked_shapes;
  if (!same_or_unknown(qd[0], kd[0], unknown_dims, &trusted) || !same_or_unknown(qd[1], kd[1], unknown_dims, &trusted))
    return std::nullopt;

  // Logits * s or / s.
  std::string logits = qk.outputs[0];
  auto reader_of = [&](const std::string& v) -> const Node* {
    auto it = idx.readers.find(v);
    if (it == idx.readers.end() || it->second.size() != 1 || !idx.only_read_by(v, it->second[0])) return nullptr;
    const Node& n = g.nodes[it->second[0]];
    return n.domain.empty() && n.outputs.size() == 1 ? &n : nullptr;
  };
  const Node* next = reader_of(logits);
  if (next && (is_op(*next, "Mul") || is_op(*next, "Div")) && next->inputs.size() == 2) {
    const bool div = is_op(*next, "Div");
    const size_t c_at = next->inputs[0] == logits ? 1 : 0;
    auto c = positive_scalar(model, next->inputs[c_at]);
    if (c && next->inputs[1 - c_at] == logits && !(div && c_at != 1)) {
      r.scale = div ? 1.0 / *c : *c;
      r.chain.push_back(next);
      logits = next->outputs[0];
      next = reader_of(logits);
    }
  }
  // + Mask.
  if (next && is_op(*next, "Add") && next->inputs.size() == 2) {
    const size_t m_at = next->inputs[0] == logits ? 1 : 0;
    const std::vector<Dim> scores = {qd[0], qd[1], qd[2], kd[2]};
    if (next->inputs[1 - m_at] != logits || !mask_fits(g, next->inputs[m_at], scores, unknown_dims, &trusted))
      return std::nullopt;
    r.mask = next->inputs[m_at];
    r.chain.push_back(next);
    logits = next->outputs[0];
    next = reader_of(logits);
  }
  // Softmax over the keys (below opset 13 a missing axis means 1).
  if (!next || !is_op(*next, "Softmax") || next->inputs.size() != 1) return std::nullopt;
  const Attribute* axis = next->attribute("axis");
  if (axis ? (axis->i != -1 && axis->i != 3) : model.opset_version("") < 13) return std::nullopt;
  r.chain.push_back(next);
  std::string p = next->outputs[0];
  // Where(IsNaN(P), 0, P): P read by exactly those two.
  if (auto it = idx.readers.find(p); it != idx.readers.end() && it->second.size() == 2 && !idx.graph_outputs.count(p) &&
                                     !idx.subgraph_reads.count(p)) {
    const Node* isnan = nullptr;
    const Node* where = nullptr;
    for (size_t i : it->second) {
      const Node& n = g.nodes[i];
      if (is_op(n, "IsNaN") && n.inputs.size() == 1) isnan = &n;
      if (is_op(n, "Where") && n.inputs.size() == 3) where = &n;
    }
    if (!isnan || !where || isnan->outputs.size() != 1 || where->outputs.size() != 1 || where->inputs[0] != isnan->outputs[0] ||
        where->inputs[2] != p || where->inputs[1] == p)
      return std::nullopt;
    const Tensor* zero = constant_tensor(model, where->inputs[1]);
    auto z = scalar_constant(model, where->inputs[1]);
    const int w_at = idx.producer_index(where->outputs[0]);
    if (!zero || zero->rank() > 4 || zero->dtype() != DataType::Float || !z || *z != 0 ||
        !idx.only_read_by(isnan->outputs[0], static_cast<size_t>(w_at)))
      return std::nullopt;
    r.nan_guard = true;
    r.chain.push_back(isnan);
    r.chain.push_back(where);
    p = where->outputs[0];
  }
  const Node* pv = reader_of(p);
  if (!pv || !is_op(*pv, "MatMul") || pv->inputs.size() != 2 || pv->inputs[0] != p) return std::nullopt;
  r.v = pv->inputs[1];
  if (!float_rank4(g, r.v)) return std::nullopt;
  const std::vector<Dim> vd = *dims_of(g, r.v);
  if (!same_or_unknown(qd[0], vd[0], unknown_dims, &trusted) || !same_or_unknown(qd[1], vd[1], unknown_dims, &trusted))
    return std::nullopt;
  r.chain.push_back(pv);
  r.y = pv->outputs[0];
  return r;
}

}  // namespace onnxscope::cpu
