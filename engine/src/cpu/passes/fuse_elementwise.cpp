// Chains of float32 elementwise operators -> one FusedElementwise node
// (fused_ops.h), for devices, where each operator is a pass over memory and
// a launch: Add + Relu after a residual block, Div + Add of attention logits
// and their mask. A node joins the chain of an input when that input is made
// by a chainable node and read by nothing else; chains stop at 8 operators
// and 4 distinct outside inputs. Each operator computes in float32 as it
// would alone, so the fused result is the unfused one (up to a device's
// contraction of multiply-add). Runs for devices only (PassInfo::device_only):
// the CPU engine keeps its own elementwise kernels and layouts.
#include <algorithm>

#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// A chainable node: a kChainOps operator of the default domain, float32
// inputs and output, Max/Min of exactly two inputs, known attributes only.
bool chainable(const Graph& g, const Node& n) {
  if (!(n.domain.empty() || n.domain == "ai.onnx") || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  const ChainOp* op = chain_op(n.op_type);
  if (!op || n.inputs.size() != static_cast<size_t>(op->arity)) return false;
  for (const auto& in : n.inputs)
    if (in.empty() || elem_type(g, in) != DataType::Float) return false;
  if (elem_type(g, n.outputs[0]) != DataType::Float) return false;
  for (const auto& a : n.attributes) {
    if (n.op_type == "Gelu" && a.name == "approximate" && (a.s == "none" || a.s == "tanh")) continue;
    bool known = false;
    for (const char* name : op->attrs)
      if (name && a.name == name && a.type == AttrType::Float) known = true;
    if (!known) return false;
  }
  return true;
}

// The three params of a chained node (fused_ops.h).
std::vector<float> params_of(const Node& n) {
  const ChainOp* op = chain_op(n.op_type);
  std::vector<float> p(3, 0.f);
  if (n.op_type == "Gelu") {
    const Attribute* a = n.attribute("approximate");
    p[0] = a && a->s == "tanh" ? 1.f : 0.f;
    return p;
  }
  for (size_t k = 0; k < 3; ++k) {
    if (!op->attrs[k]) continue;
    const Attribute* a = n.attribute(op->attrs[k]);
    p[k] = a ? a->f : op->defaults[k];
  }
  return p;
}

struct Chain {
  std::vector<size_t> nodes;  // in graph order; the last makes the chain's result
  bool merged = false;        // taken into a later chain
};

// The values the chain reads that it does not make, in first-read order.
std::vector<std::string> outside_inputs(const Graph& g, const std::vector<size_t>& nodes) {
  std::vector<std::string> made, in;
  for (size_t i : nodes) made.push_back(g.nodes[i].outputs[0]);
  for (size_t i : nodes)
    for (const auto& v : g.nodes[i].inputs)
      if (std::find(made.begin(), made.end(), v) == made.end() && std::find(in.begin(), in.end(), v) == in.end())
        in.push_back(v);
  return in;
}

Node fused_node(const Graph& g, const std::vector<size_t>& nodes) {
  const std::vector<std::string> in = outside_inputs(g, nodes);
  std::vector<std::string> places = in;  // [inputs..., results...]
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  std::vector<float> params;
  for (size_t i : nodes) {
    const Node& n = g.nodes[i];
    ops.push_back(n.op_type);
    for (size_t k = 0; k < 2; ++k) {
      if (k >= n.inputs.size()) {
        operands.push_back(-1);
        continue;
      }
      operands.push_back(std::find(places.begin(), places.end(), n.inputs[k]) - places.begin());
    }
    const std::vector<float> p = params_of(n);
    params.insert(params.end(), p.begin(), p.end());
    places.push_back(n.outputs[0]);
  }
  const Node& last = g.nodes[nodes.back()];
  Node f;
  f.name = unique_node_name(g, last.name + "_Chain");
  f.op_type = kFusedElementwise;
  f.domain = kCpuDomain;
  f.inputs = in;
  f.outputs = {last.outputs[0]};
  Attribute a;
  a.name = "ops";
  a.type = AttrType::Strings;
  a.strings = ops;
  f.attributes = {a, make_attr_ints("operands", operands), make_attr_floats("params", params)};
  return f;
}

}  // namespace

bool fuse_elementwise(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<Chain> chains;
  std::vector<int> chain_of(g.nodes.size(), -1);  // the chain a node's result ends
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!chainable(g, n)) continue;
    Chain c{{i}};
    for (const auto& v : n.inputs) {
      const int p = idx.producer_index(v);
      if (p < 0 || chain_of[static_cast<size_t>(p)] < 0 || !idx.only_read_by(v, i)) continue;
      Chain& before = chains[static_cast<size_t>(chain_of[static_cast<size_t>(p)])];
      if (before.merged) continue;
      std::vector<size_t> joined = before.nodes;
      joined.insert(joined.end(), c.nodes.begin(), c.nodes.end());
      std::sort(joined.begin(), joined.end());
      if (joined.size() > static_cast<size_t>(kChainMaxOps) ||
          outside_inputs(g, joined).size() > static_cast<size_t>(kChainMaxInputs))
        continue;
      c.nodes = std::move(joined);
      before.merged = true;
    }
    chain_of[i] = static_cast<int>(chains.size());
    chains.push_back(std::move(c));
  }
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0, ops = 0;
  for (const Chain& c : chains) {
    if (c.merged || c.nodes.size() < 2) continue;
    std::vector<const Node*> parts;
    for (size_t i : c.nodes) parts.push_back(&g.nodes[i]);
    if (replace_chain(ctx, g, remove, parts, fused_node(g, c.nodes))) {
      ++fused;
      ops += c.nodes.size();
    }
  }
  if (!fused) return false;
  erase_nodes(g, remove);
  add_cpu_opset(model);
  log_pass(ctx, model, "fuse-elementwise: " + std::to_string(fused) + " FusedElementwise of " + std::to_string(ops) + " operators");
  return true;
}

}  // namespace onnxscope::cpu
