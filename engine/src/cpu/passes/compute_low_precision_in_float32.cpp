// float16 and bfloat16 nodes compute in float32 between Casts, as ONNX
// Runtime's CPU provider does for the operators it has no half kernels for:
// Cast(x -> float32), the node on float32, Cast(y -> x's type). The engine's
// float32 kernels then run them (and the later passes fuse them) instead of
// the reference's per-element kernels; every value of the model keeps its
// name and its float16/bfloat16 type, so each result is rounded where the
// model rounds it. Which nodes: cpu/low_precision.h (the "cpu-float32"
// kernels do the same for the plan that keeps every original node). Half
// weights are widened once, here.
#include <map>
#include <set>
#include <unordered_map>

#include "cpu/low_precision.h"
#include "cpu/passes/passes.h"
#include "onnxscope/op_schema.h"
#include "onnxscope/shape_inference.h"

namespace onnxscope::cpu {

bool compute_low_precision_in_float32(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  // Nothing to do unless some value is float16/bfloat16 (declared, a weight, or made by a Cast or a Constant).
  bool any = false;
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_info})
    for (const auto& v : *list) any = any || (v.type.is_tensor() && low_precision(v.type.elem));
  for (const auto& i : g.initializers) any = any || low_precision(i.value.dtype());
  for (const auto& n : g.nodes) {
    const Attribute* to = n.op_type == "Cast" ? n.attribute("to") : nullptr;
    const Attribute* value = n.op_type == "Constant" ? n.attribute("value") : nullptr;
    any = any || (to && low_precision(static_cast<DataType>(to->i))) || (value && low_precision(value->t.dtype()));
  }
  if (!any) return false;
  bool untyped = false;
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs) untyped = untyped || (!o.empty() && !tensor_type(g, o));
  if (untyped) {
    Diagnostics quiet;
    infer_shapes(model, quiet);
  }
  // The values' types, looked up once (Graph::type_of scans the lists).
  std::unordered_map<std::string, TypeInfo> types;
  for (const auto* list : {&g.inputs, &g.outputs, &g.value_info})
    for (const auto& v : *list)
      if (v.type.is_tensor() && v.type.elem != DataType::Undefined) types.emplace(v.name, v.type);
  for (const auto& i : g.initializers) types.emplace(i.name, *tensor_type(g, i.name));
  auto type_of = [&](const std::string& v) { auto it = types.find(v); return it == types.end() ? DataType::Undefined : it->second.elem; };
  auto half = [&](const std::string& v) { return !v.empty() && low_precision(type_of(v)); };
  std::set<std::string> names;
  for (const auto& n : g.nodes) {
    names.insert(n.name);
    for (const auto& o : n.outputs) names.insert(o);
  }
  for (const auto& i : g.initializers) names.insert(i.name);
  for (const auto& i : g.inputs) names.insert(i.name);
  auto fresh = [&](const std::string& base) {
    std::string s = base;
    for (int k = 1; names.count(s); ++k) s = base + "_" + std::to_string(k);
    names.insert(s);
    return s;
  };
  auto float_type = [&](const std::string& v) {
    TypeInfo t = types.at(v);
    t.elem = DataType::Float;
    return t;
  };
  std::map<std::string, std::string> widened;  // value -> its float32 copy
  std::vector<Node> nodes;
  std::vector<ValueInfo> infos;
  size_t converted = 0;
  for (Node& n : g.nodes) {
    bool eligible = (n.domain.empty() || n.domain == "ai.onnx" || n.domain == "com.microsoft") && !keeps_its_type(n);
    bool touches = false;
    const OpSchema* s = eligible ? find_schema(n.domain == "ai.onnx" ? "" : n.domain, n.op_type, model.opset_version(n.domain)) : nullptr;
    if (!s) eligible = false;
    for (size_t k = 0; eligible && k < n.inputs.size(); ++k)
      if (half(n.inputs[k])) {
        touches = true;
        eligible = allows_float(*s, s->input_param(k));
      }
    for (size_t k = 0; eligible && k < n.outputs.size(); ++k)
      if (half(n.outputs[k])) {
        touches = true;
        eligible = allows_float(*s, s->output_param(k));
      }
    // A float16 node the engine computes as it is (cpu/low_precision.h).
    bool float16_only = true;
    for (const auto* list : {&n.inputs, &n.outputs})
      for (const auto& v : *list) float16_only = float16_only && (!half(v) || type_of(v) == DataType::Float16);
    if (eligible && touches && float16_only && computes_float16_itself(n, [&](const std::string& v) { return constant_tensor(model, v); }))
      eligible = false;
    if (!eligible || !touches || !ctx.allow(n.name)) {
      nodes.push_back(std::move(n));
      continue;
    }
    for (auto& v : n.inputs) {
      if (!half(v)) continue;
      auto it = widened.find(v);
      if (it == widened.end()) {
        const std::string w = fresh(v + "/float32");
        if (const Tensor* c = constant_tensor(model, v)) {
          g.initializers.push_back({w, widened_to_float(*c), {}});  // a weight: converted once, here
        } else {
          nodes.push_back(make_cast(fresh(v + "/to_float32"), v, w, DataType::Float));
          infos.push_back({w, float_type(v), {}});
        }
        it = widened.emplace(v, w).first;
      }
      v = it->second;
    }
    std::vector<Node> after;
    for (auto& o : n.outputs) {
      if (!half(o)) continue;
      const std::string w = fresh(o + "/float32");
      after.push_back(make_cast(fresh(n.name + "/round_" + o), w, o, type_of(o)));
      infos.push_back({w, float_type(o), {}});
      o = w;
    }
    nodes.push_back(std::move(n));
    for (auto& c : after) nodes.push_back(std::move(c));
    ++converted;
  }
  g.nodes = std::move(nodes);
  for (auto& i : infos) g.value_info.push_back(std::move(i));
  if (converted)
    log_pass(ctx, model, "compute-low-precision-in-float32: " + std::to_string(converted) + " float16/bfloat16 nodes compute in float32");
  return converted > 0;
}

}  // namespace onnxscope::cpu
