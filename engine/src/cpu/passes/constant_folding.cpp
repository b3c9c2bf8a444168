// Constant folding: a node whose inputs are all constants (initializers the
// caller cannot override, or outputs of nodes folded before it) is run once at
// prepare time with the reference kernels and its outputs become initializers.
// Skipped: random operators (each run must draw anew), operators with
// subgraphs, model-local functions and custom domains, and any node whose
// results are not plain tensors or would exceed PassContext::max_fold_bytes
// (the interpreter enforces that bound on every allocation, so a hostile
// ConstantOfShape fails fast instead of allocating gigabytes). A node that
// fails to evaluate is left in place: running it reports the error there.
#include <map>
#include <memory>

#include "cpu/passes/passes.h"
#include "onnxscope/reference.h"
#include "reference/interpreter.h"

namespace onnxscope::cpu {
namespace {

bool never_folded(const Node& n) {
  static const std::set<std::string> random = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                               "RandomUniformLike", "Multinomial",   "Bernoulli",
                                               "Dropout"};
  if (!is_default_domain(n.domain) && n.domain != "ai.onnx.ml") return true;
  if (random.count(n.op_type)) return true;
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return n.outputs.empty();
}

// Runs one node on constant inputs; nullopt when it cannot or may not be folded.
std::optional<std::vector<Tensor>> evaluate(const Model& m, const Node& n,
                                            const std::map<std::string, Tensor>& constants, uint64_t max_bytes) {
  auto tiny = std::make_shared<Model>();
  tiny->ir_version = m.ir_version;
  tiny->opset_imports = m.opset_imports;
  tiny->source = m.source;
  for (const auto& in : n.inputs) {
    if (in.empty() || tiny->graph.initializer(in)) continue;
    tiny->graph.initializers.push_back({in, constants.at(in), {}});
  }
  tiny->graph.nodes.push_back(n);
  for (const auto& o : n.outputs)
    if (!o.empty()) tiny->graph.outputs.push_back({o, {}, {}});
  try {
    ref::Interpreter interp(tiny, reference_kernels(), max_bytes);
    NamedValues out = interp.run({}, RunOptions{});
    std::vector<Tensor> result;
    for (auto& [name, v] : out) {
      if (!v.is_tensor() || v.tensor().byte_size() > max_bytes) return std::nullopt;
      result.push_back(std::move(v.tensor()));
    }
    return result;
  } catch (const std::exception&) {
    return std::nullopt;  // left to fail (with its location) at run time
  }
}

}  // namespace

bool constant_folding(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  std::map<std::string, Tensor> constants;
  for (const auto& init : g.initializers)
    if (constant_tensor(model, init.name)) constants[init.name] = init.value;
  std::vector<bool> remove(g.nodes.size(), false);
  size_t folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (never_folded(n) || model.function(n.domain, n.op_type, n.overload)) continue;
    bool all_constant = true;
    for (const auto& in : n.inputs) all_constant = all_constant && (in.empty() || constants.count(in));
    if (!all_constant || !ctx.allow(n.name)) continue;
    std::vector<Tensor> values;
    const Attribute* value = is_op(n, "Constant") ? n.attribute("value") : nullptr;
    if (value && value->type == AttrType::Tensor && n.outputs.size() == 1) {
      values.push_back(value->t);  // already in memory: no evaluation, no size limit
    } else {
      auto r = evaluate(model, n, constants, ctx.max_fold_bytes);
      if (!r) continue;
      values = std::move(*r);
    }
    size_t k = 0;
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      constants[o] = values[k];
      g.initializers.push_back({o, std::move(values[k]), {}});
      ++k;
    }
    remove[i] = true;
    ++folded;
  }
  erase_nodes(g, remove);
  if (folded) log_pass(ctx, model, "constant-folding: folded " + std::to_string(folded) + " nodes into initializers");
  return folded > 0;
}

}  // namespace onnxscope::cpu
