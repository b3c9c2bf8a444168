// Common subexpression elimination: two nodes with the same operator, domain,
// inputs and attributes compute the same values, so the later one is dropped
// and its readers read the earlier one's outputs. Random operators (each node
// draws its own numbers), nodes with subgraphs and model-local functions are
// never merged; a node whose outputs are graph outputs is kept (its names are
// the model's interface).
#include <algorithm>
#include <cstring>
#include <map>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

void put(std::string& key, const std::string& s) {
  key += std::to_string(s.size());
  key += ':';
  key += s;
}

void put_tensor(std::string& key, const Tensor& t) {
  put(key, std::to_string(static_cast<int>(t.dtype())) + shape_to_string(t.shape()));
  if (t.is_string())
    for (const auto& s : t.strings()) put(key, s);
  else if (t.raw())
    put(key, std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()));
}

// A byte string equal for two nodes iff they compute the same thing; nullopt
// for nodes that must not be merged.
std::optional<std::string> node_key(const Model& m, const Node& n) {
  static const std::set<std::string> random = {"RandomNormal",      "RandomUniform", "RandomNormalLike",
                                               "RandomUniformLike", "Multinomial",   "Bernoulli",
                                               "Dropout"};
  if (!is_default_domain(n.domain) && n.domain != "ai.onnx.ml" && n.domain != kCpuDomain) return std::nullopt;
  if (random.count(n.op_type) || m.function(n.domain, n.op_type, n.overload)) return std::nullopt;
  std::string key;
  put(key, n.op_type);
  put(key, std::string(domain_display_name(n.domain)));
  put(key, n.overload);
  key += "|in" + std::to_string(n.inputs.size());
  for (const auto& in : n.inputs) put(key, in);
  key += "|out";
  for (const auto& o : n.outputs) key += o.empty() ? '0' : '1';
  std::vector<const Attribute*> attrs;
  for (const auto& a : n.attributes) {
    if (a.g || !a.graphs.empty() || !a.ref_attr_name.empty()) return std::nullopt;
    if (a.type == AttrType::SparseTensor || a.type == AttrType::SparseTensors || a.type == AttrType::TypeProto ||
        a.type == AttrType::TypeProtos)
      return std::nullopt;
    attrs.push_back(&a);
  }
  std::sort(attrs.begin(), attrs.end(), [](const Attribute* a, const Attribute* b) { return a->name < b->name; });
  for (const Attribute* a : attrs) {
    key += "|a";
    put(key, a->name);
    key += std::to_string(static_cast<int>(a->type)) + ':';
    switch (a->type) {
      case AttrType::Float: {
        uint32_t bits;
        std::memcpy(&bits, &a->f, 4);
        key += std::to_string(bits);
        break;
      }
      case AttrType::Int: key += std::to_string(a->i); break;
      case AttrType::String: put(key, a->s); break;
      case AttrType::Tensor: put_tensor(key, a->t); break;
      case AttrType::Floats:
        for (float f : a->floats) {
          uint32_t bits;
          std::memcpy(&bits, &f, 4);
          key += std::to_string(bits) + ',';
        }
        break;
      case AttrType::Ints:
        for (int64_t v : a->ints) key += std::to_string(v) + ',';
        break;
      case AttrType::Strings:
        for (const auto& s : a->strings) put(key, s);
        break;
      case AttrType::Tensors:
        for (const auto& t : a->tensors) put_tensor(key, t);
        break;
      default: return std::nullopt;
    }
  }
  return key;
}

}  // namespace

bool common_subexpression_elimination(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  std::set<std::string> graph_outputs;
  for (const auto& o : g.outputs) graph_outputs.insert(o.name);
  std::map<std::string, size_t> seen;  // key -> index of the first node computing it
  std::vector<bool> remove(g.nodes.size(), false);
  size_t merged = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    // Keys use input names, so renaming earlier duplicates' readers (done
    // below, before later nodes are keyed) lets chains of duplicates merge.
    auto key = node_key(model, g.nodes[i]);
    if (!key) continue;
    auto [it, fresh] = seen.emplace(*key, i);
    if (fresh) continue;
    Node& dup = g.nodes[i];
    bool is_output = false;
    for (const auto& o : dup.outputs) is_output = is_output || graph_outputs.count(o);
    if (is_output || !ctx.allow(dup.name)) continue;
    Node& kept = g.nodes[it->second];
    for (size_t k = 0; k < dup.outputs.size(); ++k)
      if (!dup.outputs[k].empty()) rename_uses(g, dup.outputs[k], kept.outputs[k]);
    set_fused_from(kept, {&kept, &dup});
    remove[i] = true;
    ++merged;
  }
  erase_nodes(g, remove);
  if (merged) log_pass(ctx, model, "common-subexpression-elimination: merged " + std::to_string(merged) + " nodes");
  return merged > 0;
}

}  // namespace onnxscope::cpu
