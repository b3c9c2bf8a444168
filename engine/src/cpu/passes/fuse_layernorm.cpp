// The layer normalization PyTorch exporters emit before opset 17,
//   m = ReduceMean(x, axes); d = Sub(x, m); v = ReduceMean(Pow(d, 2), axes)
//   y = Add(Mul(Div(d, Sqrt(Add(v, eps))), gamma), beta)
// -> LayerNormalization(x, gamma, beta, axis, epsilon): ai.onnx's when the
// default-domain opset is >= 17, else the CPU engine's
// onnxscope.cpu::LayerNormalization (the same contract, fused_ops.h); the
// axes are the trailing ones, x is float32 and gamma/beta broadcast to x. The final Add is optional (LayerNormalization's B is).
// Every intermediate must be private to the pattern (d is read by Pow and Div).
#include <algorithm>
#include <cmath>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

struct Matcher {
  const Model& m;
  const Graph& g;
  const GraphIndex& idx;

  // The only node reading `value` (nothing else reads it), if it is `op`.
  const Node* sole(const std::string& value, const char* op, size_t* at = nullptr) const {
    auto it = idx.readers.find(value);
    if (it == idx.readers.end() || it->second.size() != 1 || !idx.only_read_by(value, it->second[0])) return nullptr;
    const Node& n = g.nodes[it->second[0]];
    if (!is_op(n, op) || n.outputs.size() != 1) return nullptr;
    if (at) *at = it->second[0];
    return &n;
  }
  // For a binary node reading `value`, its other operand.
  static std::string other(const Node& n, const std::string& value) {
    if (n.inputs.size() != 2) return {};
    if (n.inputs[0] == value && n.inputs[1] != value) return n.inputs[1];
    if (n.inputs[1] == value && n.inputs[0] != value) return n.inputs[0];
    return {};
  }
  // ReduceMean axes (attribute, or constant input from opset 18); keepdims must be 1.
  std::optional<std::vector<int64_t>> mean_axes(const Node& r) const {
    if (const Attribute* k = r.attribute("keepdims"); k && k->i != 1) return std::nullopt;
    if (r.inputs.size() >= 2 && !r.inputs[1].empty()) return int_constant(m, r.inputs[1]);
    if (const Attribute* a = r.attribute("axes")) return a->ints;
    return std::nullopt;  // all axes: not a layer norm over trailing dims we can name
  }
};

// Number k of trailing axes `axes` covers exactly (as -k..-1), or 0.
int64_t trailing_count(std::vector<int64_t> axes, std::optional<size_t> rank) {
  const auto k = static_cast<int64_t>(axes.size());
  for (auto& a : axes) {
    if (a >= 0) {
      if (!rank) return 0;
      a -= static_cast<int64_t>(*rank);
    }
  }
  std::sort(axes.begin(), axes.end());
  for (int64_t i = 0; i < k; ++i)
    if (axes[static_cast<size_t>(i)] != -k + i) return 0;
  return k;
}

// `p` (a scale or bias) broadcasts unidirectionally to x's shape.
bool broadcasts_to(const Graph& g, const std::string& p, const std::string& x) {
  auto ps = static_shape(g, p);
  const auto xt = tensor_type(g, x);
  if (!ps || !xt || !xt->shape || ps->size() > xt->shape->size() || elem_type(g, p) != DataType::Float) return false;
  for (size_t i = 0; i < ps->size(); ++i) {
    const Dim& d = (*xt->shape)[xt->shape->size() - ps->size() + i];
    const int64_t v = (*ps)[i];
    if (v != 1 && !(d.is_known() && d.value == v)) return false;
  }
  return true;
}

}  // namespace

bool fuse_layernorm(Model& model, PassContext& ctx) {
  const bool onnx_ln = model.opset_version("") >= 17;
  Graph& g = model.graph;
  GraphIndex idx(g);
  Matcher mt{model, g, idx};
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& r1 = g.nodes[i];
    if (!is_op(r1, "ReduceMean") || r1.outputs.size() != 1 || r1.inputs.empty() || remove[i]) continue;
    const std::string& x = r1.inputs[0];
    if (elem_type(g, x) != DataType::Float) continue;
    auto axes = mt.mean_axes(r1);
    if (!axes) continue;
    const int64_t k = trailing_count(*axes, known_rank(g, x));
    if (k == 0) continue;
    const Node* sub = mt.sole(r1.outputs[0], "Sub");
    if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != r1.outputs[0]) continue;
    const std::string& d = sub->outputs[0];
    auto dr = idx.readers.find(d);
    if (dr == idx.readers.end() || dr->second.size() != 2 || idx.graph_outputs.count(d) || idx.subgraph_reads.count(d))
      continue;
    const Node* pow = nullptr;
    const Node* div = nullptr;
    for (size_t r : dr->second) {
      const Node& n = g.nodes[r];
      if (is_op(n, "Pow") && n.inputs.size() == 2 && n.inputs[0] == d) pow = &n;
      if (is_op(n, "Div") && n.inputs.size() == 2 && n.inputs[0] == d) div = &n;
    }
    if (!pow || !div || pow->outputs.size() != 1) continue;
    if (auto e = scalar_constant(model, pow->inputs[1]); !e || *e != 2.0) continue;
    const Node* r2 = mt.sole(pow->outputs[0], "ReduceMean");
    if (!r2 || r2->inputs[0] != pow->outputs[0]) continue;
    auto axes2 = mt.mean_axes(*r2);
    if (!axes2 || trailing_count(*axes2, known_rank(g, x)) != k) continue;
    const Node* add_eps = mt.sole(r2->outputs[0], "Add");
    if (!add_eps) continue;
    auto eps = scalar_constant(model, Matcher::other(*add_eps, r2->outputs[0]));
    if (!eps) continue;
    const Node* sqrt = mt.sole(add_eps->outputs[0], "Sqrt");
    if (!sqrt || mt.sole(sqrt->outputs[0], "Div") != div || div->inputs[1] != sqrt->outputs[0]) continue;
    const Node* mul = mt.sole(div->outputs[0], "Mul");
    if (!mul) continue;
    const std::string gamma = Matcher::other(*mul, div->outputs[0]);
    if (gamma.empty() || !broadcasts_to(g, gamma, x)) continue;
    std::vector<const Node*> chain = {&r1, sub, pow, r2, add_eps, sqrt, div, mul};
    std::string beta, y = mul->outputs[0];
    if (const Node* add = mt.sole(mul->outputs[0], "Add")) {
      const std::string b = Matcher::other(*add, mul->outputs[0]);
      if (!b.empty() && broadcasts_to(g, b, x)) {
        beta = b;
        y = add->outputs[0];
        chain.push_back(add);
      }
    }
    Node ln;
    ln.name = unique_node_name(g, (r1.name.empty() ? "LayerNormalization" : r1.name + "_LayerNormalization"));
    ln.op_type = "LayerNormalization";
    if (!onnx_ln) ln.domain = kCpuDomain;
    ln.inputs = {x, gamma};
    if (!beta.empty()) ln.inputs.push_back(beta);
    ln.outputs = {y};
    ln.attributes = {make_attr_int("axis", -k), make_attr_float("epsilon", static_cast<float>(*eps))};
    if (replace_chain(g, remove, chain, std::move(ln))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused && !onnx_ln) add_cpu_opset(model);
  if (fused) log_pass(ctx, model, "fuse-layernorm: " + std::to_string(fused) + " LayerNormalization");
  return fused > 0;
}

}  // namespace onnxscope::cpu
