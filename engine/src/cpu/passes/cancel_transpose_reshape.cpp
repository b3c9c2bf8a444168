// Layout no-ops: Transpose(Transpose(x)) whose permutations compose to the
// identity reads x (two permutations that do not cancel become one
// Transpose); a Transpose with the identity permutation is dropped;
// Reshape(Reshape(x, s1), s2) becomes Reshape(x, s2) when s2 does not copy
// dims from its input (no 0 unless allowzero); a Reshape whose result has the
// input's own static shape is dropped. Values that are graph outputs are kept.
#include <algorithm>
#include <numeric>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// The permutation of a Transpose (reversed dims when absent; needs the rank).
std::optional<std::vector<int64_t>> perm_of(const Graph& g, const Node& t) {
  if (const Attribute* a = t.attribute("perm")) return a->ints;
  auto rank = known_rank(g, t.inputs[0]);
  if (!rank) return std::nullopt;
  std::vector<int64_t> p(*rank);
  for (size_t i = 0; i < *rank; ++i) p[i] = static_cast<int64_t>(*rank - 1 - i);
  return p;
}

bool is_identity(const std::vector<int64_t>& p) {
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] != static_cast<int64_t>(i)) return false;
  return true;
}

bool valid_perm(const std::vector<int64_t>& p) {
  std::vector<bool> seen(p.size(), false);
  for (int64_t v : p) {
    if (v < 0 || v >= static_cast<int64_t>(p.size()) || seen[static_cast<size_t>(v)]) return false;
    seen[static_cast<size_t>(v)] = true;
  }
  return true;
}

// The shape input (or, before opset 5, attribute) of a Reshape, when constant.
std::optional<std::vector<int64_t>> reshape_target(const Model& m, const Node& r) {
  if (r.inputs.size() >= 2) return int_constant(m, r.inputs[1]);
  if (const Attribute* a = r.attribute("shape")) return a->ints;
  return std::nullopt;
}

bool allowzero(const Node& r) {
  const Attribute* a = r.attribute("allowzero");
  return a && a->i != 0;
}

// True when Reshape(x, target) certainly returns x's own shape.
bool reshape_is_noop(const Graph& g, const Node& r, const std::vector<int64_t>& target) {
  const auto t = tensor_type(g, r.inputs[0]);
  if (!t || !t->shape || t->shape->size() != target.size()) return false;
  const auto& dims = *t->shape;
  int inferred = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero(r)) continue;  // copies dim i
    if (target[i] >= 0 && dims[i].is_known() && dims[i].value == target[i]) continue;
    if (target[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
      continue;
    }
    return false;
  }
  if (inferred < 0) return true;
  // -1 resolves to dim i only if the others are known and nonzero.
  for (size_t i = 0; i < dims.size(); ++i)
    if (static_cast<int>(i) != inferred && (!dims[i].is_known() || dims[i].value == 0)) return false;
  return true;
}

// Makes readers of `from` read `to` and drops node i (and the producer
// `pred`, if that leaves it unread). False when `from` is a graph output.
bool bypass(Graph& g, size_t i, std::string from, std::string to, int pred, PassContext& ctx) {
  for (const auto& o : g.outputs)
    if (o.name == from) return false;
  if (!ctx.allow(g.nodes[i].name)) return false;
  rename_uses(g, from, to);
  std::vector<bool> remove(g.nodes.size(), false);
  remove[i] = true;
  if (pred >= 0) {
    const auto& pout = g.nodes[static_cast<size_t>(pred)].outputs[0];
    g.nodes[i].inputs.clear();
    if (use_count(g, pout) == 0) remove[static_cast<size_t>(pred)] = true;
  }
  erase_nodes(g, remove);
  return true;
}

// One rewrite at a time; returns true if the graph changed.
bool rewrite_once(Model& m, PassContext& ctx) {
  Graph& g = m.graph;
  GraphIndex idx(g);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    if (n.inputs.empty() || n.inputs[0].empty() || n.outputs.size() != 1) continue;
    if (is_op(n, "Transpose")) {
      auto p2 = perm_of(g, n);
      if (!p2 || !valid_perm(*p2)) continue;
      if (is_identity(*p2)) {
        if (bypass(g, i, n.outputs[0], n.inputs[0], -1, ctx)) return true;
        continue;
      }
      const int pi = idx.producer_index(n.inputs[0]);
      if (pi < 0 || !is_op(g.nodes[static_cast<size_t>(pi)], "Transpose")) continue;
      Node& prev = g.nodes[static_cast<size_t>(pi)];
      auto p1 = prev.inputs.empty() ? std::nullopt : perm_of(g, prev);
      if (!p1 || !valid_perm(*p1) || p1->size() != p2->size()) continue;
      // y[j] = t[p2[j]] = x[p1[p2[j]]]
      std::vector<int64_t> composed(p2->size());
      for (size_t j = 0; j < composed.size(); ++j) composed[j] = (*p1)[static_cast<size_t>((*p2)[j])];
      if (is_identity(composed)) {
        if (bypass(g, i, n.outputs[0], prev.inputs[0], pi, ctx)) return true;
        continue;
      }
      if (!idx.only_read_by(prev.outputs[0], i) || !ctx.allow(n.name)) continue;
      // Two transposes that do not cancel: one transpose with the composed perm.
      set_fused_from(n, {&prev, &n});
      n.inputs[0] = prev.inputs[0];
      std::erase_if(n.attributes, [](const Attribute& a) { return a.name == "perm"; });
      n.attributes.push_back(make_attr_ints("perm", composed));
      std::vector<bool> remove(g.nodes.size(), false);
      remove[static_cast<size_t>(pi)] = true;
      erase_nodes(g, remove);
      return true;
    }
    if (is_op(n, "Reshape")) {
      auto target = reshape_target(m, n);
      if (!target) continue;
      if (reshape_is_noop(g, n, *target)) {
        if (bypass(g, i, n.outputs[0], n.inputs[0], -1, ctx)) return true;
        continue;
      }
      const int pi = idx.producer_index(n.inputs[0]);
      if (pi < 0 || !is_op(g.nodes[static_cast<size_t>(pi)], "Reshape")) continue;
      Node& prev = g.nodes[static_cast<size_t>(pi)];
      if (prev.inputs.empty() || prev.inputs[0].empty() || !idx.only_read_by(prev.outputs[0], i)) continue;
      const bool copies = !allowzero(n) && std::find(target->begin(), target->end(), 0) != target->end();
      if (copies || !ctx.allow(n.name)) continue;  // (a 0 copies a dim of the intermediate shape)
      set_fused_from(n, {&prev, &n});
      n.inputs[0] = prev.inputs[0];
      std::vector<bool> remove(g.nodes.size(), false);
      remove[static_cast<size_t>(pi)] = true;
      erase_nodes(g, remove);
      return true;
    }
  }
  return false;
}

}  // namespace

bool cancel_transpose_reshape(Model& model, PassContext& ctx) {
  size_t rewrites = 0;
  while (rewrite_once(model, ctx)) ++rewrites;
  if (rewrites) log_pass(ctx, model, "cancel-transpose-reshape: " + std::to_string(rewrites) + " rewrites");
  return rewrites > 0;
}

}  // namespace onnxscope::cpu
