// The root-mean-square normalization Llama-style exports write (transformers'
// LlamaRMSNorm, T5LayerNorm, Qwen, Mistral, Gemma... through either
// torch.onnx exporter):
//   p = Pow(x, 2) or Mul(x, x); m = ReduceMean(p, trailing axes, keepdims=1)
//   s = Sqrt(Add(m, eps))
//   n = Mul(x, Reciprocal(s)) or Mul(x, Div(1, s)) or Div(x, s)
//   y = Mul(n, weight)                                    (either operand order)
//       or Mul(Cast(n, to=float), weight)                 (the TorchScript exporter)
// -> RMSNormalization(x, weight, axis, epsilon): ai.onnx's when the
// default-domain opset is >= 23, else the CPU engine's
// onnxscope.cpu::RMSNormalization (the same contract, fused_ops.h). x is
// float32, eps a constant, the weight broadcasts to x; every intermediate is
// private to the pattern (x itself may have other readers: the residual).
#include <cmath>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

// x squared: Pow(x, 2) or Mul(x, x).
bool squares(const Model& m, const Node& n, const std::string& x) {
  if (n.outputs.size() != 1 || n.inputs.size() != 2 || n.inputs[0] != x) return false;
  if (is_op(n, "Mul")) return n.inputs[1] == x;
  if (!is_op(n, "Pow")) return false;
  auto e = scalar_constant(m, n.inputs[1]);
  return e && *e == 2.0;
}

}  // namespace

bool fuse_rmsnorm(Model& model, PassContext& ctx) {
  const bool onnx_rms = model.opset_version("") >= 23;
  Graph& g = model.graph;
  GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& sq = g.nodes[i];
    if (remove[i] || sq.inputs.empty()) continue;
    const std::string& x = sq.inputs[0];
    if (!squares(model, sq, x) || elem_type(g, x) != DataType::Float) continue;
    const Node* mean = idx.sole_reader(g, sq.outputs[0], "ReduceMean");
    if (!mean || mean->inputs[0] != sq.outputs[0]) continue;
    auto axes = reduce_mean_axes(model, *mean);
    if (!axes) continue;
    const int64_t k = trailing_axes_count(*axes, known_rank(g, x));
    if (k == 0) continue;
    const Node* add_eps = idx.sole_reader(g, mean->outputs[0], "Add");
    if (!add_eps) continue;
    auto eps = scalar_constant(model, other_operand(*add_eps, mean->outputs[0]));
    if (!eps || !std::isfinite(*eps) || *eps < 0) continue;
    const Node* sqrt = idx.sole_reader(g, add_eps->outputs[0], "Sqrt");
    if (!sqrt) continue;
    std::vector<const Node*> chain = {&sq, mean, add_eps, sqrt};
    // x times the reciprocal of s, in one of the three ways it is written.
    const std::string& s = sqrt->outputs[0];
    const Node* normalized = nullptr;
    if (const Node* div = idx.sole_reader(g, s, "Div"); div && div->inputs[1] == s) {
      if (div->inputs[0] == x) {
        normalized = div;  // Div(x, s)
      } else if (auto one = scalar_constant(model, div->inputs[0]); one && *one == 1.0) {
        const Node* mul = idx.sole_reader(g, div->outputs[0], "Mul");  // Mul(x, Div(1, s))
        if (mul && other_operand(*mul, div->outputs[0]) == x) {
          chain.push_back(div);
          normalized = mul;
        }
      }
    } else if (const Node* rec = idx.sole_reader(g, s, "Reciprocal")) {
      const Node* mul = idx.sole_reader(g, rec->outputs[0], "Mul");  // Mul(x, Reciprocal(s))
      if (mul && other_operand(*mul, rec->outputs[0]) == x) {
        chain.push_back(rec);
        normalized = mul;
      }
    }
    if (!normalized) continue;
    chain.push_back(normalized);
    // The TorchScript exporter keeps LlamaRMSNorm's .to(input_dtype): a Cast
    // to float32 of a float32 value, which changes nothing.
    std::string n = normalized->outputs[0];
    if (const Node* cast = idx.sole_reader(g, n, "Cast")) {
      const Attribute* to = cast->attribute("to");
      if (!to || to->i != static_cast<int64_t>(DataType::Float)) continue;
      chain.push_back(cast);
      n = cast->outputs[0];
    }
    const Node* scale = idx.sole_reader(g, n, "Mul");
    if (!scale) continue;
    const std::string weight = other_operand(*scale, n);
    if (weight.empty() || weight == x || !broadcasts_to(g, weight, x)) continue;
    chain.push_back(scale);
    Node rms;
    rms.name = unique_node_name(g, sq.name.empty() ? "RMSNormalization" : sq.name + "_RMSNormalization");
    rms.op_type = "RMSNormalization";
    if (!onnx_rms) rms.domain = kCpuDomain;
    rms.inputs = {x, weight};
    rms.outputs = {scale->outputs[0]};
    rms.attributes = {make_attr_int("axis", -k), make_attr_float("epsilon", static_cast<float>(*eps))};
    if (replace_chain(ctx, g, remove, chain, std::move(rms))) ++fused;
  }
  erase_nodes(g, remove);
  if (fused && !onnx_rms) add_cpu_opset(model);
  if (fused) log_pass(ctx, model, "fuse-rmsnorm: " + std::to_string(fused) + " RMSNormalization");
  return fused > 0;
}

}  // namespace onnxscope::cpu
