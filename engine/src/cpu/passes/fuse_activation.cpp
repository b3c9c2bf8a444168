// Conv / Gemm / MatMul (+ bias Add) followed by one activation of
// fused_ops.h's kFusableActivations (Gelu: ai.onnx or onnxscope.cpu; Swish:
// ai.onnx Swish-24 or x * Sigmoid(x), the SiLU every exporter writes; HardSwish also
// as x * HardSigmoid(x) with alpha 1/6 and beta 0.5) -> FusedConv / FusedGemm / FusedMatMul in
// domain "onnxscope.cpu" (contract in fused_ops.h). Only float32, and only
// when each absorbed intermediate has no other reader and is not a graph
// output. The fused node takes the position of the last node it replaces, so
// every input (a bias computed late included) is already available there.
#include <algorithm>
#include <cstring>
#include <limits>

#include "cpu/fused_ops.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

struct Activation {
  std::string op;
  std::vector<float> params;
};

float attr_or(const Node& n, const char* name, float fallback) {
  const Attribute* a = n.attribute(name);
  return a && a->type == AttrType::Float ? a->f : fallback;
}

// The activation `n` computes, with its parameters, if it is fusable.
std::optional<Activation> activation_of(const Model& m, const Node& n) {
  if (n.inputs.empty() || n.outputs.size() != 1 || n.outputs[0].empty()) return std::nullopt;
  // Gelu: ai.onnx Gelu (opset >= 20) or the one fuse-gelu makes below that.
  if (n.op_type == kGelu && n.inputs.size() == 1 &&
      (n.domain == kCpuDomain || (is_default_domain(n.domain) && m.opset_version("") >= 20))) {
    const Attribute* a = n.attribute("approximate");
    const std::string approx = a && a->type == AttrType::String ? a->s : "none";
    if (approx != "none" && approx != "tanh") return std::nullopt;
    return Activation{n.op_type, {approx == "tanh" ? 1.f : 0.f}};
  }
  if (!is_default_domain(n.domain)) return std::nullopt;
  // Swish-24: x * sigmoid(alpha * x).
  if (n.op_type == "Swish") {
    if (n.inputs.size() != 1 || m.opset_version("") < 24) return std::nullopt;
    return Activation{n.op_type, {attr_or(n, "alpha", 1.0f)}};
  }
  bool listed = false;
  for (const auto& a : kFusableActivations) listed = listed || n.op_type == a.op;
  if (!listed) return std::nullopt;
  if (n.op_type == "LeakyRelu") return Activation{n.op_type, {attr_or(n, "alpha", 0.01f)}};
  if (n.op_type == "HardSigmoid") return Activation{n.op_type, {attr_or(n, "alpha", 0.2f), attr_or(n, "beta", 0.5f)}};
  if (n.op_type == "Clip") {
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    if (m.opset_version("") < 11) {
      lo = attr_or(n, "min", lo);
      hi = attr_or(n, "max", hi);
    } else {
      for (size_t k = 1; k < n.inputs.size() && k < 3; ++k) {
        if (n.inputs[k].empty()) continue;
        const Tensor* t = constant_tensor(m, n.inputs[k]);
        if (!t || t->dtype() != DataType::Float || t->element_count() != 1) return std::nullopt;
        (k == 1 ? lo : hi) = t->data<float>()[0];
      }
    }
    return Activation{n.op_type, {lo, hi}};
  }
  if (n.inputs.size() != 1) return std::nullopt;
  return Activation{n.op_type, {}};
}

void add_activation_attrs(Node& fused, const Activation& a) {
  fused.attributes.push_back(make_attr_string("activation", a.op));
  if (!a.params.empty()) fused.attributes.push_back(make_attr_floats("activation_params", a.params));
}

std::string fused_name(const Graph& g, const Node& base, const std::string& act) {
  return unique_node_name(g, (base.name.empty() ? base.op_type : base.name) + (act.empty() ? "" : "_" + act));
}

// An activation reading `value`: the node that computes it (whose output the
// fused node takes over), and for a gated one (x * gate(x)) the gate absorbed with it.
struct ActNode {
  size_t node = 0;
  Activation act;
  std::optional<size_t> extra;
};

// x * Sigmoid(x) or x * HardSigmoid(x) on `value`: nothing else reads
// `value` or the gate's result. The first is SiLU / Swish as the exporters
// write it; the second, with HardSigmoid's alpha 1/6 and beta 0.5, is
// HardSwish's own function body: the TorchScript exporter below opset 14
// writes HardSwish so, and ONNX Runtime's saved and quantized models carry it
// inlined (MobileNetV3's `_inlfunc_HardSwish_HS_X`). Any other alpha or beta
// is a different function and stays two nodes.
std::optional<ActNode> gated_on(const Model& m, const GraphIndex& idx, const std::string& value) {
  auto it = idx.readers.find(value);
  if (it == idx.readers.end() || it->second.size() != 2 || idx.graph_outputs.count(value) ||
      idx.subgraph_reads.count(value))
    return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const size_t si = it->second[static_cast<size_t>(k)], mi = it->second[static_cast<size_t>(1 - k)];
    const Node& gate = m.graph.nodes[si];
    const Node& mul = m.graph.nodes[mi];
    if (gate.inputs.size() != 1 || gate.outputs.size() != 1 || gate.outputs[0].empty()) continue;
    std::optional<Activation> act;
    if (is_op(gate, "Sigmoid")) {
      act = Activation{"Swish", {1.0f}};
    } else if (is_op(gate, "HardSigmoid") && attr_or(gate, "alpha", 0.2f) == 1.0f / 6.0f &&
               attr_or(gate, "beta", 0.5f) == 0.5f) {
      act = Activation{"HardSwish", {}};
    }
    if (!act) continue;
    const std::string& s = gate.outputs[0];
    if (!is_op(mul, "Mul") || mul.inputs.size() != 2 || mul.outputs.size() != 1 || mul.outputs[0].empty()) continue;
    if (!((mul.inputs[0] == value && mul.inputs[1] == s) || (mul.inputs[1] == value && mul.inputs[0] == s))) continue;
    if (!idx.only_read_by(s, mi)) continue;
    return ActNode{mi, *act, si};
  }
  return std::nullopt;
}

// The activation node that alone reads `value` (and its parameters), or a gated one (gated_on).
std::optional<ActNode> sole_activation(const Model& m, const GraphIndex& idx, const std::string& value) {
  auto it = idx.readers.find(value);
  if (it == idx.readers.end()) return std::nullopt;
  if (it->second.size() == 2) return gated_on(m, idx, value);
  if (it->second.size() != 1 || !idx.only_read_by(value, it->second[0])) return std::nullopt;
  const size_t j = it->second[0];
  const Node& n = m.graph.nodes[j];
  if (n.inputs[0] != value) return std::nullopt;
  auto a = activation_of(m, n);
  if (!a) return std::nullopt;
  return ActNode{j, *a, std::nullopt};
}

// Free to fuse: neither node was taken by an earlier fusion.
bool available(const std::optional<ActNode>& a, const std::vector<bool>& remove) {
  return a && !remove[a->node] && !(a->extra && remove[*a->extra]);
}

// Conv or Gemm followed by an activation -> FusedConv / FusedGemm.
bool fuse_base_activation(Model& model, PassContext& ctx, const char* base_op, const char* fused_op,
                          const char* pass_name) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& base = g.nodes[i];
    if (!is_op(base, base_op) || base.outputs.size() != 1 || base.outputs[0].empty()) continue;
    if (elem_type(g, base.outputs[0]) != DataType::Float) continue;
    auto act = sole_activation(model, idx, base.outputs[0]);
    if (!available(act, remove) || !ctx.allow(base.name)) continue;
    const Node& an = g.nodes[act->node];
    Node f;
    f.name = fused_name(g, base, act->act.op);
    f.op_type = fused_op;
    f.domain = kCpuDomain;
    f.inputs = base.inputs;
    f.outputs = an.outputs;
    f.attributes = base.attributes;
    add_activation_attrs(f, act->act);
    if (act->extra) set_fused_from(f, {&base, &g.nodes[*act->extra], &an});
    else set_fused_from(f, {&base, &an});
    g.nodes[act->node] = std::move(f);
    remove[i] = true;
    if (act->extra) remove[*act->extra] = true;
    ++fused;
  }
  erase_nodes(g, remove);
  if (fused) {
    add_cpu_opset(model);
    log_pass(ctx, model, std::string(pass_name) + ": fused " + std::to_string(fused) + " nodes");
  }
  return fused > 0;
}

}  // namespace

bool fuse_conv_activation(Model& model, PassContext& ctx) {
  return fuse_base_activation(model, ctx, "Conv", kFusedConv, "fuse-conv-activation");
}

bool fuse_gemm_activation(Model& model, PassContext& ctx) {
  if (model.opset_version("") < 7) return false;  // Gemm-6 had its own broadcast attribute
  return fuse_base_activation(model, ctx, "Gemm", kFusedGemm, "fuse-gemm-activation");
}

// MatMul [+ Add(1-D bias of size N)] [+ activation], at least one of the two.
bool fuse_matmul_bias_activation(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1 || mm.outputs[0].empty()) continue;
    if (elem_type(g, mm.outputs[0]) != DataType::Float) continue;
    std::vector<const Node*> chain = {&mm};
    std::string bias, value = mm.outputs[0];
    size_t last = i;
    // Bias: an Add whose other operand is 1-D of size N (B's last dim).
    auto it = idx.readers.find(value);
    const auto b_shape = known_rank(g, mm.inputs[1]);
    const auto bt = tensor_type(g, mm.inputs[1]);
    if (it != idx.readers.end() && it->second.size() == 1 && idx.only_read_by(value, it->second[0]) && b_shape &&
        *b_shape >= 2 && bt->shape->back().is_known()) {
      const size_t k = it->second[0];
      const Node& add = g.nodes[k];
      if (is_op(add, "Add") && add.inputs.size() == 2 && add.outputs.size() == 1 && !remove[k]) {
        const std::string& other = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
        auto s = static_shape(g, other);
        if (other != value && s && s->size() == 1 && (*s)[0] == bt->shape->back().value &&
            elem_type(g, other) == DataType::Float) {
          bias = other;
          value = add.outputs[0];
          chain.push_back(&add);
          last = k;
        }
      }
    }
    Activation activation;
    bool has_act = false;
    if (auto act = sole_activation(model, idx, value); available(act, remove)) {
      has_act = true;
      activation = act->act;
      if (act->extra) chain.push_back(&g.nodes[*act->extra]);
      chain.push_back(&g.nodes[act->node]);
      last = act->node;
      value = g.nodes[act->node].outputs[0];
    }
    if (chain.size() == 1 || !ctx.allow(mm.name)) continue;
    Node f;
    f.name = fused_name(g, mm, has_act ? activation.op : std::string("Bias"));
    f.op_type = kFusedMatMul;
    f.domain = kCpuDomain;
    f.inputs = {mm.inputs[0], mm.inputs[1]};
    if (!bias.empty()) f.inputs.push_back(bias);
    f.outputs = {value};
    add_activation_attrs(f, activation);
    set_fused_from(f, chain);
    for (const Node* n : chain) remove[static_cast<size_t>(n - g.nodes.data())] = true;
    remove[last] = false;
    g.nodes[last] = std::move(f);
    ++fused;
  }
  erase_nodes(g, remove);
  if (fused) {
    add_cpu_opset(model);
    log_pass(ctx, model, "fuse-matmul-bias-activation: fused " + std::to_string(fused) + " MatMul nodes");
  }
  return fused > 0;
}

}  // namespace onnxscope::cpu
