// Float32 -> float16/bfloat16 conversion of a model with some nodes kept in
// float32, and the ranges a float32 run's values span (onnxscope/precision.h).
#include <cmath>
#include <functional>
#include <map>

#include "cpu/low_precision.h"
#include "cpu/thread_pool.h"
#include "debug/graph_match_index.h"
#include "onnxscope/diagnostics.h"
#include "onnxscope/float_formats.h"
#include "onnxscope/op_schema.h"
#include "onnxscope/precision.h"

namespace onnxscope {
namespace {

struct Limits {
  double max_finite, flush_below;  // overflow past the first (rounding included), 0 below the second
};
Limits limits_of(DataType t) {
  if (t == DataType::BFloat16) return {3.3961775292304e38, std::ldexp(1.0, -134)};  // 2^128 (1 - 2^-9); half of 2^-133
  return {65520.0, std::ldexp(1.0, -25)};  // 65504 + half a step rounds to inf; half of 2^-24 rounds to 0
}

const char* short_name(DataType t) { return t == DataType::BFloat16 ? "bf16" : "fp16"; }
const char* type_string(DataType t) { return t == DataType::BFloat16 ? "tensor(bfloat16)" : "tensor(float16)"; }

// The same values as float32 again: numbers of `to`, stored as float32.
Tensor rounded_copy(const Tensor& t, DataType to) {
  Tensor out = Tensor::zeros(DataType::Float, t.shape());
  const float* s = t.data<float>();
  float* p = out.mutable_data<float>();
  const uint64_t n = t.element_count();
  if (to == DataType::BFloat16)
    for (uint64_t i = 0; i < n; ++i) p[i] = bfloat16_to_float(float_to_bfloat16(s[i]));
  else
    for (uint64_t i = 0; i < n; ++i) p[i] = half_to_float(float_to_half(s[i]));
  return out;
}

// Whether a formal parameter of `s` may be of type `type_str` ("tensor(float16)").
bool allows(const OpSchema& s, const FormalParam* p, const char* type_str) {
  if (!p) return false;
  const std::string t = p->type_str;
  if (t.rfind("tensor(", 0) == 0 || t.rfind("seq(", 0) == 0) return t == type_str;
  const TypeConstraint* c = s.constraint(t);
  return c && std::string(c->allowed).find(type_str) != std::string::npos;
}

bool has_subgraph(const Node& n) {
  for (const auto& a : n.attributes)
    if (a.g || !a.graphs.empty()) return true;
  return false;
}

}  // namespace

std::vector<NodeRange> node_ranges(const Model& model, const Capture& fp32, DataType target) {
  const match::GraphIndex index(model, &fp32);
  const Limits lim = limits_of(target);
  std::vector<NodeRange> out;
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    if (!index.data_node[i]) continue;
    const Node& n = model.graph.nodes[i];
    NodeRange r;
    r.node_index = i;
    r.node = n.label(i);
    r.op_type = n.op_type;
    bool any = false;
    for (const auto& o : n.outputs) {
      auto it = fp32.values.find(o);
      if (o.empty() || it == fp32.values.end() || !it->second.is_tensor() || it->second.tensor().dtype() != DataType::Float)
        continue;
      const Tensor& t = it->second.tensor();
      // Over the float32 values in place, blocks shared out to the threads
      // (maxima, minima and counts: the same at any thread count).
      struct Part {
        double max_abs = 0, min_nz = 0;
        uint64_t nonfinite = 0, overflow = 0, underflow = 0;
      };
      constexpr uint64_t kBlock = uint64_t{1} << 16;
      const uint64_t count = t.element_count(), blocks = (count + kBlock - 1) / kBlock;
      std::vector<Part> parts(static_cast<size_t>(blocks));
      const float* v = t.data<float>();
      cpu::parallel_for(static_cast<int64_t>(blocks), 1, [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) {
          Part& p = parts[static_cast<size_t>(b)];
          float mx = 0, mn = INFINITY;
          for (uint64_t k = static_cast<uint64_t>(b) * kBlock; k < std::min(count, static_cast<uint64_t>(b + 1) * kBlock); ++k) {
            const float x = v[k];
            if (!std::isfinite(x)) {
              ++p.nonfinite;
              continue;
            }
            const float a = std::fabs(x);
            mx = std::max(mx, a);
            if (a > 0) mn = std::min(mn, a);
            p.overflow += a >= lim.max_finite;
            p.underflow += a > 0 && a < lim.flush_below;
          }
          p.max_abs = mx;
          p.min_nz = std::isinf(mn) ? 0 : mn;
        }
      });
      double max_abs = 0, min_nz = 0;
      for (const Part& p : parts) {
        r.nonfinite += p.nonfinite;
        r.overflow += p.overflow;
        r.underflow += p.underflow;
        max_abs = std::max(max_abs, p.max_abs);
        if (p.min_nz > 0 && (min_nz == 0 || p.min_nz < min_nz)) min_nz = p.min_nz;
      }
      r.elements += count;
      if (!any || max_abs > r.max_abs) r.output = o;
      r.max_abs = std::max(r.max_abs, max_abs);
      if (min_nz > 0 && (r.min_nonzero == 0 || min_nz < r.min_nonzero)) r.min_nonzero = min_nz;
      any = true;
    }
    if (any) out.push_back(std::move(r));
  }
  return out;
}

namespace {

// convert_precision, or with `alone` (node_error_model) the model as it is
// plus each node that would be converted again beside it, on its own inputs.
std::shared_ptr<Model> convert_impl(const Model& model, const Capture& fp32, DataType target, const std::set<std::string>& keep,
                                    std::vector<std::string>* auto_kept, bool emulate, ConvertedWeights* weights,
                                    std::vector<NodeAlone>* alone) {
  auto out = std::make_shared<Model>(model);
  Graph& g = out->graph;
  const char* low_type = type_string(target);
  auto original_type = [&](const std::string& v) {
    if (auto it = fp32.values.find(v); it != fp32.values.end() && it->second.is_tensor()) return it->second.tensor().dtype();
    if (const Initializer* init = model.graph.initializer(v)) return init->value.dtype();
    return DataType::Undefined;
  };
  std::map<std::string, DataType> type;  // the values' types in the converted model
  auto type_of = [&](const std::string& v) {
    auto it = type.find(v);
    return it != type.end() ? it->second : original_type(v);
  };
  std::map<std::string, const Tensor*> constants;  // float32 initializers and Constant values
  for (const auto& init : model.graph.initializers)
    if (init.value.dtype() == DataType::Float) constants[init.name] = &init.value;
  static const std::set<std::string> typed_by_attribute = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                            "RandomUniformLike", "EyeLike", "Multinomial", "Bernoulli"};
  std::set<std::string> names;
  for (const auto& n : model.graph.nodes) {
    names.insert(n.name);
    for (const auto& o : n.outputs) names.insert(o);
  }
  for (const auto& i : model.graph.initializers) names.insert(i.name);
  for (const auto& i : model.graph.inputs) names.insert(i.name);
  auto fresh = [&](const std::string& base) {
    std::string s = base;
    for (int k = 1; names.count(s); ++k) s = base + "_" + std::to_string(k);
    names.insert(s);
    return s;
  };
  std::vector<Node> nodes;
  std::map<std::pair<std::string, DataType>, std::string> made;
  auto cast_node = [&](const std::string& from, const std::string& to_name, DataType to_type) {
    Node cast;
    cast.name = fresh(to_name + "_Cast");
    cast.op_type = "Cast";
    cast.inputs = {from};
    cast.outputs = {to_name};
    Attribute to;
    to.name = "to";
    to.type = AttrType::Int;
    to.i = static_cast<int64_t>(to_type);
    cast.attributes.push_back(to);
    return cast;
  };
  // Constant `v` converted (or, emulated, rounded), once per `weights`.
  auto weight = [&](const std::string& v, const Tensor& t, bool rounded) {
    auto make = [&] { return rounded ? rounded_copy(t, target) : cpu::narrowed(t, target); };
    if (!weights) return make();
    const auto key = std::make_tuple(v, target, rounded);
    auto it = weights->made.find(key);
    if (it == weights->made.end()) it = weights->made.emplace(key, make()).first;
    return it->second;
  };
  // Emulation: float32 values that hold numbers of the low type (rounded
  // constants, the low nodes' rounded outputs), and `v` rounded so.
  std::set<std::string> rounded;
  auto round_trip = [&](const std::string& v) -> std::string {
    if (rounded.count(v)) return v;
    if (auto it = made.find({v, target}); it != made.end()) return it->second;
    const std::string low = fresh(v + "_" + short_name(target));
    const std::string name = fresh(low + "r");
    if (auto c = constants.find(v); c != constants.end()) {
      g.initializers.push_back({name, weight(v, *c->second, true), {}});
    } else {
      nodes.push_back(cast_node(v, low, target));
      nodes.push_back(cast_node(low, name, DataType::Float));
    }
    rounded.insert(name);
    return made[{v, target}] = name;
  };
  // `v` as type `want` (float32 <-> the low type only): a converted
  // constant, or a Cast made once per value and type.
  auto as = [&](const std::string& v, DataType want) -> std::string {
    const DataType have = type_of(v);
    if (v.empty() || have == want || (have != DataType::Float && have != target)) return v;
    if (auto it = made.find({v, want}); it != made.end()) return it->second;
    std::string name;
    if (auto c = constants.find(v); c != constants.end() && want == target) {
      name = fresh(v + "_" + short_name(target));
      g.initializers.push_back({name, weight(v, *c->second, false), {}});
    } else {
      name = fresh(v + (want == DataType::Float ? "_fp32" : std::string("_") + short_name(target)));
      nodes.push_back(cast_node(v, name, want));
    }
    type[name] = want;
    return made[{v, want}] = name;
  };
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    Node n = model.graph.nodes[i];
    bool touches = false;
    for (const auto& v : n.inputs) touches = touches || (!v.empty() && original_type(v) == DataType::Float);
    for (const auto& v : n.outputs) touches = touches || (!v.empty() && original_type(v) == DataType::Float);
    if (n.op_type == "Constant" && n.domain.empty()) {
      if (const Attribute* a = n.attribute("value"); a && a->t.dtype() == DataType::Float && n.outputs.size() == 1)
        constants[n.outputs[0]] = &model.graph.nodes[i].attribute("value")->t;
      nodes.push_back(std::move(n));
      continue;
    }
    const std::string label = model.graph.nodes[i].label(i);
    bool low = touches && !keep.count(label);
    const OpSchema* s = nullptr;
    if (low) {
      std::string why;
      if (!(n.domain.empty() || n.domain == "ai.onnx")) why = "operator outside ai.onnx";
      else if (has_subgraph(n)) why = "subgraphs";
      else if (typed_by_attribute.count(n.op_type)) why = "output type set by an attribute";
      else if (!(s = find_schema("", n.op_type, model.opset_version("")))) why = "no schema";
      else {
        for (size_t k = 0; k < n.outputs.size() && why.empty(); ++k)
          if (original_type(n.outputs[k]) == DataType::Float && !allows(*s, s->output_param(k), low_type))
            why = std::string("its output cannot be ") + low_type;
      }
      if (!why.empty()) {
        low = false;
        if (auto_kept) auto_kept->push_back(label + " (" + n.op_type + "): " + why);
      }
    }
    if (low && alone) {
      // The node as it is, then again on its inputs in the low type (emulated:
      // rounded), its results in the low type and back: its own error.
      Node again = n;
      again.name = fresh((n.name.empty() ? label : n.name) + "/alone");
      for (size_t k = 0; k < again.inputs.size(); ++k) {
        std::string& v = again.inputs[k];
        if (v.empty() || original_type(v) != DataType::Float || !allows(*s, s->input_param(k), low_type)) continue;
        v = emulate ? round_trip(v) : as(v, target);
      }
      NodeAlone record{label, {}};
      std::vector<Node> after;
      for (size_t k = 0; k < again.outputs.size(); ++k) {
        std::string& o = again.outputs[k];
        if (o.empty() || original_type(o) != DataType::Float) {
          if (!o.empty()) o = fresh(o + "/alone");
          continue;
        }
        const std::string original = o, result = fresh(original + "/alone");
        o = fresh(original + "/alone_" + short_name(target));
        if (emulate) {
          const std::string lowered = fresh(o + "r");
          after.push_back(cast_node(o, lowered, target));
          after.push_back(cast_node(lowered, result, DataType::Float));
        } else {
          type[o] = target;
          after.push_back(cast_node(o, result, DataType::Float));
        }
        record.outputs.emplace_back(original, result);
      }
      nodes.push_back(std::move(n));
      nodes.push_back(std::move(again));
      for (auto& c : after) nodes.push_back(std::move(c));
      for (const auto& [original, result] : record.outputs) g.outputs.push_back({result, TypeInfo::tensor(DataType::Float), {}});
      alone->push_back(std::move(record));
      continue;
    }
    if (alone) {
      nodes.push_back(std::move(n));
      continue;
    }
    if (low && emulate) {
      // The node computes in float32 on numbers of the low type, and its
      // results are rounded to it: what storing every value in the low type does.
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (!n.inputs[k].empty() && original_type(n.inputs[k]) == DataType::Float && allows(*s, s->input_param(k), low_type))
          n.inputs[k] = round_trip(n.inputs[k]);
      std::vector<Node> after;
      for (auto& o : n.outputs) {
        if (o.empty() || original_type(o) != DataType::Float) continue;
        const std::string raw = fresh(o + "_unrounded"), low = fresh(o + "_" + short_name(target));
        after.push_back(cast_node(raw, low, target));
        after.push_back(cast_node(low, o, DataType::Float));
        rounded.insert(o);
        o = raw;
      }
      nodes.push_back(std::move(n));
      for (auto& c : after) nodes.push_back(std::move(c));
      continue;
    }
    if (emulate) {
      nodes.push_back(std::move(n));  // float32 as it was
      continue;
    }
    if (low) {
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const DataType have = type_of(n.inputs[k]);
        if (have != DataType::Float && have != target) continue;
        n.inputs[k] = as(n.inputs[k], allows(*s, s->input_param(k), low_type) ? target : DataType::Float);
      }
      for (auto& a : n.attributes) {
        if (n.op_type == "Cast" && a.name == "to" && a.i == static_cast<int64_t>(DataType::Float)) a.i = static_cast<int64_t>(target);
        if (n.op_type == "ConstantOfShape" && a.name == "value" && a.t.dtype() == DataType::Float) a.t = cpu::narrowed(a.t, target);
      }
      // ConstantOfShape without a value makes float32 zeros: made explicit in the low type.
      if (n.op_type == "ConstantOfShape" && !n.attribute("value")) {
        Attribute v;
        v.name = "value";
        v.type = AttrType::Tensor;
        v.t = cpu::narrowed(Tensor::zeros(DataType::Float, {1}), target);
        n.attributes.push_back(std::move(v));
      }
      for (const auto& o : n.outputs)
        if (!o.empty() && original_type(o) == DataType::Float) type[o] = target;
    } else {
      for (auto& v : n.inputs)
        if (!v.empty() && original_type(v) == DataType::Float) v = as(v, DataType::Float);
    }
    nodes.push_back(std::move(n));
  }
  // Graph outputs keep their float32 type: the low value under another name, cast back.
  for (const auto& o : model.graph.outputs) {
    if (alone) break;  // the model's own nodes stayed float32
    if (type_of(o.name) != target) continue;
    const std::string low_name = fresh(o.name + "_" + short_name(target));
    for (auto& n : nodes) {
      for (auto& v : n.outputs)
        if (v == o.name) v = low_name;
      for (auto& v : n.inputs)
        if (v == o.name) v = low_name;
    }
    type[low_name] = target;
    Node cast;
    cast.name = fresh(o.name + "_Cast_fp32");
    cast.op_type = "Cast";
    cast.inputs = {low_name};
    cast.outputs = {o.name};
    Attribute to;
    to.name = "to";
    to.type = AttrType::Int;
    to.i = static_cast<int64_t>(DataType::Float);
    cast.attributes.push_back(to);
    nodes.push_back(std::move(cast));
  }
  g.nodes = std::move(nodes);
  g.value_info.clear();  // the types changed; inference gives them again
  // Float32 weights every reader now takes converted are dropped.
  std::set<std::string> read;
  std::function<void(const Graph&)> reads = [&](const Graph& sub) {
    for (const auto& n : sub.nodes) {
      for (const auto& v : n.inputs) read.insert(v);
      for (const auto& a : n.attributes) {
        if (a.g) reads(*a.g);
        for (const auto& one : a.graphs)
          if (one) reads(*one);
      }
    }
  };
  reads(g);
  for (const auto& o : g.outputs) read.insert(o.name);
  for (const auto& i : g.inputs) read.insert(i.name);
  std::erase_if(g.initializers, [&](const Initializer& i) { return !read.count(i.name); });
  out->source = model.source + " [" + short_name(target) + (keep.empty() ? "" : ", " + std::to_string(keep.size()) + " node(s) in float32") + "]";
  return out;
}

}  // namespace

std::shared_ptr<Model> convert_precision(const Model& model, const Capture& fp32, DataType target,
                                         const std::set<std::string>& keep, std::vector<std::string>* auto_kept,
                                         bool emulate, ConvertedWeights* weights) {
  return convert_impl(model, fp32, target, keep, auto_kept, emulate, weights, nullptr);
}

std::shared_ptr<Model> node_error_model(const Model& model, const Capture& fp32, DataType target,
                                        const std::set<std::string>& keep, bool emulate, ConvertedWeights* weights,
                                        std::vector<NodeAlone>& nodes) {
  auto m = convert_impl(model, fp32, target, keep, nullptr, emulate, weights, &nodes);
  m->source = model.source + " [each node alone in " + short_name(target) + "]";
  return m;
}

}  // namespace onnxscope
