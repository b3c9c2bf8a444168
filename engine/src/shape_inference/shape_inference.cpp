// infer_shapes: walks every graph in node order, works out element types from
// the operator schemas and shapes from the rules in shape_rules*.cpp, and
// records what it learns as value_info. Declared types are never overwritten;
// disagreements with them are reported.
#include "onnxscope/shape_inference.h"

#include <cstring>
#include <exception>
#include <string>
#include <unordered_map>

#include "onnxscope/op_schema.h"
#include "onnxscope/plugin.h"
#include "shape_inference/shape_rules.h"

namespace onnxscope {
namespace {

using shape_rules::Folded;
using shape_rules::InputView;
using shape_rules::RuleIO;

// What is known about one value while walking a graph.
struct ValueState {
  TypeInfo type;
  std::optional<Folded> value;                // small integer contents
  std::optional<std::vector<double>> reals;   // small constant real contents
};

// Values visible in a graph: its own, then the enclosing graphs' (outer scope).
struct Scope {
  const Scope* parent = nullptr;
  std::unordered_map<std::string, ValueState> values;

  const ValueState* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent)
      if (auto it = s->values.find(name); it != s->values.end()) return &it->second;
    return nullptr;
  }
};

TypeInfo unknown_type() { return TypeInfo{}; }

TypeInfo wrap(TypeInfo::Kind kind, TypeInfo inner) {
  if (inner.kind == TypeInfo::Kind::Unknown) return inner;
  TypeInfo t;
  t.kind = kind;
  t.inner = std::make_shared<TypeInfo>(std::move(inner));
  return t;
}

const TypeInfo* inner_of(const TypeInfo& t, TypeInfo::Kind kind) {
  return t.kind == kind && t.inner ? t.inner.get() : nullptr;
}

// Type both branches / iterations agree on: equal dims stay, others become unknown.
TypeInfo unify(const TypeInfo& a, const TypeInfo& b) {
  if (a == b) return a;
  if (a.kind != b.kind) return unknown_type();
  if ((a.kind == TypeInfo::Kind::Sequence || a.kind == TypeInfo::Kind::Optional) && a.inner && b.inner)
    return wrap(a.kind, unify(*a.inner, *b.inner));
  if (!a.is_tensor() || a.elem != b.elem) return unknown_type();
  TypeInfo out = TypeInfo::tensor(a.elem);
  if (a.shape && b.shape && a.shape->size() == b.shape->size()) {
    out.shape.emplace();
    for (size_t i = 0; i < a.shape->size(); ++i)
      out.shape->push_back((*a.shape)[i] == (*b.shape)[i] ? (*a.shape)[i] : Dim{});
  }
  return out;
}

// The type without its shapes (element type, kind and nesting only).
TypeInfo without_shapes(TypeInfo t) {
  t.shape.reset();
  if (t.inner) t.inner = std::make_shared<TypeInfo>(without_shapes(*t.inner));
  return t;
}

// Type parsed from a schema type string: "tensor(int64)", "seq(tensor(float))".
TypeInfo type_from_string(std::string_view s) {
  if (s.starts_with("tensor(")) {
    if (auto t = dtype_from_name(s)) return TypeInfo::tensor(*t);
  } else if (s.starts_with("seq(") && s.ends_with(")")) {
    TypeInfo inner = type_from_string(s.substr(4, s.size() - 5));
    if (inner.kind == TypeInfo::Kind::Unknown) return inner;
    TypeInfo seq;
    seq.kind = TypeInfo::Kind::Sequence;
    seq.inner = std::make_shared<TypeInfo>(std::move(inner));
    return seq;
  }
  return unknown_type();
}

TypeInfo tensor_of(DataType t) {
  return t == DataType::Undefined ? unknown_type() : TypeInfo::tensor(t);
}

DataType dtype_attr(const Node& n, std::string_view name, DataType def) {
  const Attribute* a = n.attribute(name);
  if (!a || a->type != AttrType::Int) return def;
  return a->i > 0 && is_known_dtype(static_cast<int32_t>(a->i)) ? static_cast<DataType>(a->i) : DataType::Undefined;
}

DataType elem_of(const ValueState* v) {
  return v && v->type.is_tensor() ? v->type.elem : DataType::Undefined;
}

// Sequence and optional ops: their type parameters cannot say how the
// container relates to its element.
std::optional<TypeInfo> sequence_output_type(const Node& n, const std::vector<const ValueState*>& ins) {
  using K = TypeInfo::Kind;
  const std::string& op = n.op_type;
  auto type_at = [&](size_t i) { return i < ins.size() && ins[i] ? ins[i]->type : unknown_type(); };
  auto inner_at = [&](size_t i, K kind) {
    TypeInfo t = type_at(i);
    const TypeInfo* in = inner_of(t, kind);
    return in ? *in : unknown_type();
  };
  if (op == "SequenceEmpty") return wrap(K::Sequence, tensor_of(dtype_attr(n, "dtype", DataType::Float)));
  if (op == "SequenceConstruct") {
    TypeInfo t = type_at(0);
    for (size_t i = 1; i < ins.size(); ++i) t = unify(t, type_at(i));
    return wrap(K::Sequence, std::move(t));
  }
  if (op == "SequenceAt") return inner_at(0, K::Sequence);
  if (op == "SequenceInsert") return wrap(K::Sequence, unify(inner_at(0, K::Sequence), type_at(1)));
  if (op == "ConcatFromSequence") {
    TypeInfo e = inner_at(0, K::Sequence);
    return e.is_tensor() ? tensor_of(e.elem) : unknown_type();
  }
  if (op == "SplitToSequence") {
    TypeInfo e = type_at(0);
    return e.is_tensor() ? wrap(K::Sequence, tensor_of(e.elem)) : unknown_type();
  }
  if (op == "Optional") {
    const Attribute* tp = n.attribute("type");
    return wrap(K::Optional, tp && tp->type == AttrType::TypeProto ? tp->tp : type_at(0));
  }
  if (op == "OptionalGetElement") {
    TypeInfo t = type_at(0);
    return t.kind == K::Optional ? inner_at(0, K::Optional) : t;
  }
  return std::nullopt;
}

// Element types of ops whose output type comes from an attribute or a rule
// the schema's type parameters cannot express. nullopt: use the schema.
std::optional<TypeInfo> special_output_type(const Node& n, size_t k, const std::vector<const ValueState*>& ins) {
  const std::string& op = n.op_type;
  auto in_elem = [&](size_t i) { return i < ins.size() ? elem_of(ins[i]) : DataType::Undefined; };
  if (op == "Cast") return tensor_of(dtype_attr(n, "to", DataType::Undefined));
  if (op == "ConstantOfShape") {
    const Attribute* v = n.attribute("value");
    return tensor_of(v && !v->t.empty() ? v->t.dtype() : DataType::Float);
  }
  if (op == "Constant") {
    for (const auto& a : n.attributes) {
      if (a.name == "value") return tensor_of(a.t.dtype());
      if (a.name == "sparse_value") return tensor_of(a.sparse.values.dtype());
      if (a.name == "value_float" || a.name == "value_floats") return tensor_of(DataType::Float);
      if (a.name == "value_int" || a.name == "value_ints") return tensor_of(DataType::Int64);
      if (a.name == "value_string" || a.name == "value_strings") return tensor_of(DataType::String);
    }
    return unknown_type();
  }
  if (op == "EyeLike" || op == "RandomNormalLike" || op == "RandomUniformLike" || op == "Bernoulli")
    return tensor_of(dtype_attr(n, "dtype", in_elem(0)));
  if (op == "RandomNormal" || op == "RandomUniform") return tensor_of(dtype_attr(n, "dtype", DataType::Float));
  if (op == "Multinomial") return tensor_of(dtype_attr(n, "dtype", DataType::Int32));
  if (op == "QuantizeLinear" && k == 0) {
    // Zero point's type, else output_dtype (opset 21), else uint8.
    if (DataType zp = in_elem(2); zp != DataType::Undefined) return tensor_of(zp);
    return tensor_of(dtype_attr(n, "output_dtype", DataType::Uint8) == DataType::Undefined
                         ? DataType::Uint8
                         : dtype_attr(n, "output_dtype", DataType::Uint8));
  }
  if (op == "DequantizeLinear" && k == 0) {
    DataType t = dtype_attr(n, "output_dtype", DataType::Undefined);
    return tensor_of(t != DataType::Undefined ? t : in_elem(1));
  }
  if (op == "LayerNormalization" && k > 0) return tensor_of(dtype_attr(n, "stash_type", DataType::Float));
  if (op == "BitCast") return tensor_of(dtype_attr(n, "to", DataType::Undefined));
  if (op == "HannWindow" || op == "HammingWindow" || op == "BlackmanWindow" || op == "MelWeightMatrix")
    return tensor_of(dtype_attr(n, "output_datatype", DataType::Float));
  return sequence_output_type(n, ins);
}

// Output k's type from the schema: concrete type strings as written, type
// parameters from the first input bound to the same parameter.
TypeInfo schema_output_type(const OpSchema& s, size_t k, const std::vector<const ValueState*>& ins) {
  const FormalParam* p = s.output_param(k);
  if (!p) return unknown_type();
  std::string_view ts = p->type_str;
  if (ts.find('(') != std::string_view::npos) return type_from_string(ts);
  for (size_t j = 0; j < ins.size(); ++j) {
    const FormalParam* ip = s.input_param(j);
    if (!ip || std::strcmp(ip->type_str, p->type_str) != 0 || !ins[j]) continue;
    const TypeInfo& t = ins[j]->type;
    if (t.kind == TypeInfo::Kind::Unknown || (t.is_tensor() && t.elem == DataType::Undefined)) continue;
    TypeInfo out = t;
    out.shape.reset();  // shape comes from the rule
    return out;
  }
  // A parameter allowed a single type needs no binding (TopK's I, Dropout's mask).
  if (const TypeConstraint* c = s.constraint(ts); c && !std::strchr(c->allowed, ','))
    return type_from_string(c->allowed);
  return unknown_type();
}

// Why a declared and an inferred type disagree, or "" if they do not.
std::string conflict(const TypeInfo& declared, const TypeInfo& inferred) {
  using K = TypeInfo::Kind;
  if (declared.kind == K::Unknown || inferred.kind == K::Unknown) return {};
  if (declared.kind != inferred.kind) return "kind differs";
  if (!declared.is_tensor()) return {};
  if (declared.elem != DataType::Undefined && inferred.elem != DataType::Undefined && declared.elem != inferred.elem)
    return "element type differs";
  if (!declared.shape || !inferred.shape) return {};
  if (declared.shape->size() != inferred.shape->size()) return "rank differs";
  for (size_t i = 0; i < declared.shape->size(); ++i) {
    const Dim &d = (*declared.shape)[i], &f = (*inferred.shape)[i];
    if (d.is_known() && f.is_known() && d.value != f.value) return "dimension " + std::to_string(i) + " differs";
  }
  return {};
}

// Declared type with the gaps (element type, rank, unknown dims) filled from inference.
TypeInfo fill_gaps(TypeInfo declared, const TypeInfo& inferred) {
  if (!declared.is_tensor() || !inferred.is_tensor()) return declared;
  if (declared.elem == DataType::Undefined) declared.elem = inferred.elem;
  if (!declared.shape) {
    declared.shape = inferred.shape;
  } else if (inferred.shape && inferred.shape->size() == declared.shape->size()) {
    for (size_t i = 0; i < declared.shape->size(); ++i) {
      Dim& d = (*declared.shape)[i];
      if (!d.is_known() && !d.is_symbolic()) d = (*inferred.shape)[i];
    }
  }
  return declared;
}

// Folded values live on shape-like tensors: int64/int32, and bool masks over them.
bool is_foldable_type(const TypeInfo& t) {
  return t.is_tensor() && (t.elem == DataType::Int64 || t.elem == DataType::Int32 || t.elem == DataType::Bool);
}

class Inferencer {
 public:
  Inferencer(Model& m, Diagnostics& d, const PluginSet* plugins) : m_(m), d_(d), plugins_(plugins) {}

  void run() {
    Scope root;
    infer_graph(m_.graph, "main", root, {});
  }

 private:
  Model& m_;
  Diagnostics& d_;
  const PluginSet* plugins_;

  Location at(const std::string& path, size_t i, const Node& n, const std::string& value) const {
    return Location{m_.source, path, static_cast<int64_t>(i), n.label(i), n.op_type, value};
  }

  // Seeds the scope, infers every node, and returns the graph outputs' types.
  std::vector<TypeInfo> infer_graph(Graph& g, const std::string& path, Scope& scope,
                                    const std::vector<TypeInfo>& input_hints) {
    for (const auto& init : g.initializers) {
      if (init.value.empty()) continue;
      ValueState& v = scope.values[init.name];
      v.type = TypeInfo::tensor(init.value.dtype(), shape_rules::known_dims(init.value.shape()));
      v.value = shape_rules::fold_tensor(init.value);
      v.reals = shape_rules::reals_of_tensor(init.value);
    }
    for (size_t i = 0; i < g.sparse_initializers.size() && i < g.sparse_initializer_names.size(); ++i) {
      const SparseTensor& sp = g.sparse_initializers[i];
      scope.values[g.sparse_initializer_names[i]].type =
          TypeInfo::tensor(sp.values.dtype(), shape_rules::known_dims(sp.dims));
    }
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      const ValueInfo& in = g.inputs[i];
      ValueState& v = scope.values[in.name];  // keeps an initializer's contents (IR < 4 style)
      if (in.type.kind != TypeInfo::Kind::Unknown) v.type = in.type;
      else if (i < input_hints.size()) v.type = input_hints[i];
    }
    // Declared types of values the nodes produce: checked, never overwritten.
    std::unordered_map<std::string, TypeInfo> declared;
    for (const auto* list : {&g.outputs, &g.value_info})
      for (const auto& vi : *list)
        if (vi.type.kind != TypeInfo::Kind::Unknown && declared.emplace(vi.name, vi.type).second &&
            !scope.values.count(vi.name))
          scope.values[vi.name].type = vi.type;

    for (size_t i = 0; i < g.nodes.size(); ++i) {
      try {
        infer_node(g, path, i, scope, declared);
      } catch (const std::exception& e) {
        d_.info("shape-inference", at(path, i, g.nodes[i], {}), std::string("shape inference stopped: ") + e.what());
      }
    }

    std::vector<TypeInfo> out;
    for (const auto& o : g.outputs) {
      const ValueState* v = scope.find(o.name);
      out.push_back(v ? v->type : o.type);
    }
    return out;
  }

  // Runs the node's subgraphs; returns each graph attribute's output types.
  std::unordered_map<std::string, std::vector<TypeInfo>> infer_subgraphs(const Node& n, size_t i,
                                                                         const std::string& path, Scope& scope,
                                                                         const std::vector<const ValueState*>& ins) {
    std::unordered_map<std::string, std::vector<TypeInfo>> results;
    for (const auto& a : n.attributes) {
      std::string sub = path + "/" + n.label(i) + ":" + a.name;
      if (a.g) {
        Scope child{&scope, {}};
        results[a.name] = infer_graph(*a.g, sub, child, body_input_hints(n, ins));
      }
      for (size_t k = 0; k < a.graphs.size(); ++k) {
        if (!a.graphs[k]) continue;
        Scope child{&scope, {}};
        infer_graph(*a.graphs[k], sub + "[" + std::to_string(k) + "]", child, {});
      }
    }
    return results;
  }

  // Types of Loop/Scan body inputs the body leaves undeclared.
  std::vector<TypeInfo> body_input_hints(const Node& n, const std::vector<const ValueState*>& ins) const {
    std::vector<TypeInfo> hints;
    auto type_at = [&](size_t i) { return i < ins.size() && ins[i] ? ins[i]->type : unknown_type(); };
    if (!is_default_domain(n.domain)) return hints;
    if (n.op_type == "Loop") {
      hints.push_back(TypeInfo::tensor(DataType::Int64, std::vector<Dim>{}));
      hints.push_back(TypeInfo::tensor(DataType::Bool, std::vector<Dim>{}));
      // Loop-carried shapes may change per iteration.
      for (size_t i = 2; i < ins.size(); ++i) hints.push_back(without_shapes(type_at(i)));
    } else if (n.op_type == "SequenceMap") {
      // The body sees one element of each sequence; tensors are passed whole.
      for (size_t i = 0; i < ins.size(); ++i) {
        TypeInfo t = type_at(i);
        const TypeInfo* e = inner_of(t, TypeInfo::Kind::Sequence);
        hints.push_back(e ? without_shapes(*e) : t);
      }
    } else if (n.op_type == "Scan" && m_.opset_version("") >= 9) {
      const Attribute* m = n.attribute("num_scan_inputs");
      if (!m || m->i < 0 || static_cast<size_t>(m->i) > ins.size()) return hints;
      size_t states = ins.size() - static_cast<size_t>(m->i);
      const Attribute* axes = n.attribute("scan_input_axes");
      for (size_t i = 0; i < ins.size(); ++i) {
        TypeInfo t = type_at(i);
        if (i >= states && t.is_tensor() && t.shape) {
          // Each iteration sees one slice along the scan axis.
          size_t j = i - states;
          int64_t axis = axes && j < axes->ints.size() ? axes->ints[j] : 0;
          auto ax = shape_rules::normalize_axis(axis, static_cast<int64_t>(t.shape->size()));
          if (ax) t.shape->erase(t.shape->begin() + *ax);
          else t.shape.reset();
        }
        hints.push_back(std::move(t));
      }
    }
    return hints;
  }

  // Output types of If/Loop/Scan from their bodies.
  std::vector<TypeInfo> control_flow_types(const Node& n, const std::vector<const ValueState*>& ins,
                                           std::unordered_map<std::string, std::vector<TypeInfo>>& bodies) {
    std::vector<TypeInfo> out(n.outputs.size());
    auto type_at = [&](size_t i) { return i < ins.size() && ins[i] ? ins[i]->type : unknown_type(); };
    if (n.op_type == "If") {
      const auto& t = bodies["then_branch"];
      const auto& e = bodies["else_branch"];
      for (size_t k = 0; k < out.size() && k < t.size() && k < e.size(); ++k) out[k] = unify(t[k], e[k]);
      return out;
    }
    const auto& body = bodies["body"];
    if (n.op_type == "SequenceMap") {  // one sequence per body output
      for (size_t k = 0; k < out.size() && k < body.size(); ++k) out[k] = wrap(TypeInfo::Kind::Sequence, body[k]);
      return out;
    }
    if (n.op_type == "Loop") {
      // Body outputs: cond, N loop-carried values, K scan outputs.
      size_t carried = ins.size() > 2 ? ins.size() - 2 : 0;
      for (size_t k = 0; k < out.size() && k + 1 < body.size(); ++k) {
        const TypeInfo& b = body[k + 1];
        if (k < carried) {
          out[k] = unify(b, type_at(k + 2));
        } else if (b.is_tensor()) {
          out[k] = TypeInfo::tensor(b.elem);
          if (b.shape) {  // stacked per iteration: one more leading dim
            out[k].shape = *b.shape;
            out[k].shape->insert(out[k].shape->begin(), Dim{});
          }
        }
      }
      return out;
    }
    if (n.op_type == "Scan") {
      bool v9 = m_.opset_version("") >= 9;
      size_t first_state = v9 ? 0 : 1;  // Scan-8 starts with sequence_lens
      const Attribute* m = n.attribute("num_scan_inputs");
      if (!m || m->i < 0 || static_cast<size_t>(m->i) + first_state > ins.size()) return out;
      size_t states = ins.size() - static_cast<size_t>(m->i) - first_state;
      // Sequence length: the first scan input's size along its scan axis.
      Dim seq_len;
      const Attribute* in_axes = n.attribute("scan_input_axes");
      if (TypeInfo first = type_at(states); v9 && m->i > 0 && first.is_tensor() && first.shape) {
        int64_t axis = in_axes && !in_axes->ints.empty() ? in_axes->ints[0] : 0;
        if (auto ax = shape_rules::normalize_axis(axis, static_cast<int64_t>(first.shape->size())))
          seq_len = (*first.shape)[static_cast<size_t>(*ax)];
      }
      const Attribute* out_axes = n.attribute("scan_output_axes");
      for (size_t k = 0; k < out.size() && k < body.size(); ++k) {
        const TypeInfo& b = body[k];
        if (k < states) {
          out[k] = unify(b, type_at(k + first_state));
        } else if (b.is_tensor()) {
          out[k] = TypeInfo::tensor(b.elem);
          if (!v9 || !b.shape) continue;
          size_t j = k - states;
          int64_t r = static_cast<int64_t>(b.shape->size()) + 1;
          int64_t axis = out_axes && j < out_axes->ints.size() ? out_axes->ints[j] : 0;
          if (auto ax = shape_rules::normalize_axis(axis, r)) {
            out[k].shape = *b.shape;
            out[k].shape->insert(out[k].shape->begin() + *ax, seq_len);
          }
        }
      }
    }
    return out;
  }

  void infer_node(Graph& g, const std::string& path, size_t i, Scope& scope,
                  const std::unordered_map<std::string, TypeInfo>& declared) {
    const Node& n = g.nodes[i];
    std::vector<const ValueState*> ins;
    ins.reserve(n.inputs.size());
    for (const auto& name : n.inputs) ins.push_back(name.empty() ? nullptr : scope.find(name));

    auto bodies = infer_subgraphs(n, i, path, scope, ins);

    const bool std_domain = is_default_domain(n.domain);
    const int64_t opset = m_.opset_version(n.domain);
    std::vector<TypeInfo> types(n.outputs.size());
    // Custom-domain ops a plugin supplies: the plugin's shape function (it runs
    // them even when the model also defines a function of that name).
    std::optional<PluginShapeResult> from_plugin;
    if (plugins_ && !is_standard_domain(n.domain)) {
      std::vector<const TypeInfo*> in_types;
      for (const ValueState* s : ins) in_types.push_back(s ? &s->type : nullptr);
      from_plugin = plugins_->infer(n, opset, in_types);
    }
    if (from_plugin && !from_plugin->ok) {
      const PluginKernelInfo* k = plugins_->supplier(n.domain, n.op_type, opset);
      d_.error("plugin-shape", at(path, i, n, {}),
               "the shape function of " + n.domain + "::" + n.op_type + " (" + (k ? k->origin() : "plugin") +
                   ") rejected the inputs: " + from_plugin->error);
      return;
    }
    // Model-local functions and ops without a schema stay unknown.
    if (!from_plugin && m_.function(n.domain, n.op_type, n.overload)) return;
    RuleIO io(n, m_.opset_version(""));
    io.out.resize(n.outputs.size());
    io.out_value.resize(n.outputs.size());

    if (from_plugin) {
      types = std::move(from_plugin->outputs);
    } else if (std_domain && (n.op_type == "If" || n.op_type == "Loop" || n.op_type == "Scan" || n.op_type == "SequenceMap")) {
      types = control_flow_types(n, ins, bodies);
    } else {
      const OpSchema* schema = find_schema(n.domain, n.op_type, opset);
      if (!schema) return;
      for (size_t k = 0; k < n.outputs.size(); ++k) {
        auto special = std_domain ? special_output_type(n, k, ins) : std::nullopt;
        types[k] = special ? std::move(*special) : schema_output_type(*schema, k, ins);
      }
      if (auto rule = std_domain ? shape_rules::find_rule(n.op_type) : nullptr) {
        for (size_t j = 0; j < ins.size(); ++j) {
          InputView v;
          v.present = !n.inputs[j].empty();
          if (const ValueState* s = ins[j]) {
            if (s->type.kind != TypeInfo::Kind::Unknown) v.type = &s->type;
            if (s->value) v.value = &*s->value;
            if (s->reals) v.reals = &*s->reals;
          }
          io.in.push_back(v);
        }
        rule(io);
        if (!io.note.empty())
          d_.info("shape-inference", at(path, i, n, {}), "output shape left unknown: " + io.note);
        for (size_t k = 0; k < types.size(); ++k)
          if (types[k].is_tensor() && io.out[k]) types[k].shape = std::move(io.out[k]);
      }
    }

    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const std::string& name = n.outputs[k];
      if (name.empty()) continue;
      TypeInfo& t = types[k];
      if (t.is_tensor() && t.elem == DataType::Undefined) t = unknown_type();  // nothing useful to say
      ValueState state;
      if (k < io.out_value.size() && io.out_value[k] && is_foldable_type(t)) state.value = std::move(io.out_value[k]);
      if (std_domain && n.op_type == "Constant") state.reals = constant_reals(n);
      auto d = declared.find(name);
      if (d != declared.end()) {
        std::string why = conflict(d->second, t);
        if (!why.empty()) {
          d_.warning("shape-conflict", at(path, i, n, name),
                     "declared type " + d->second.to_string() + " of '" + name + "' disagrees with the inferred " +
                         t.to_string() + " (" + why + ")",
                     t.to_string());
          state.value.reset();
          state.type = d->second;
        } else {
          state.type = fill_gaps(d->second, t);
        }
      } else if (t.kind != TypeInfo::Kind::Unknown) {
        g.value_info.push_back(ValueInfo{name, t, {}});
        state.type = std::move(t);
      }
      scope.values[name] = std::move(state);
    }
  }

  static std::optional<std::vector<double>> constant_reals(const Node& n) {
    for (const auto& a : n.attributes) {
      if (a.name == "value" && !a.t.empty()) return shape_rules::reals_of_tensor(a.t);
      if (a.name == "value_float") return std::vector<double>{a.f};
      if (a.name == "value_floats" && a.floats.size() <= shape_rules::kMaxFoldElems)
        return std::vector<double>(a.floats.begin(), a.floats.end());
    }
    return std::nullopt;
  }
};

}  // namespace

void infer_shapes(Model& model, Diagnostics& diags, const PluginSet* plugins) {
  try {
    Inferencer(model, diags, plugins).run();
  } catch (const std::exception& e) {
    diags.info("shape-inference", Location{model.source, "main", -1, {}, {}, {}},
               std::string("shape inference stopped: ") + e.what());
  } catch (...) {
    diags.info("shape-inference", Location{model.source, "main", -1, {}, {}, {}}, "shape inference stopped");
  }
}

}  // namespace onnxscope
