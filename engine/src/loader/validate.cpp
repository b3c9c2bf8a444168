// Graph-level rules of a model: opset imports, names in static single
// assignment, topological order, operator schemas (existence, arity,
// attributes), model-local functions. Every finding is located.
#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/graph_util.h"
#include "onnxscope/loader.h"
#include "onnxscope/op_schema.h"
#include "onnxscope/plugin.h"

namespace onnxscope {
namespace {

// Newest IR version this build understands (onnx 1.23: IR 14 is not yet
// final upstream; 13 is the released one, 14 is accepted).
constexpr int64_t kMaxIrVersion = 14;

struct Scope {
  const Scope* parent = nullptr;
  std::unordered_set<std::string> names;
  bool has(const std::string& n) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->names.count(n)) return true;
    return false;
  }
};

std::string join(const std::vector<std::string>& items, size_t limit = 5) {
  std::string s;
  for (size_t i = 0; i < items.size() && i < limit; ++i) s += (i ? ", " : "") + ("'" + items[i] + "'");
  if (items.size() > limit) s += ", ... (" + std::to_string(items.size()) + " in all)";
  return s;
}

class Validator {
 public:
  Validator(Model& m, const LoadOptions& o, Diagnostics& d) : m_(m), opt_(o), d_(d) {}

  void run() {
    check_model_header();
    check_opsets();
    check_functions();
    check_graph(m_.graph, "main", nullptr, m_.opset_imports, false, 0);
    report_domains();
  }

 private:
  Location at(const std::string& graph, const std::string& value = {}) const {
    return Location{m_.source, graph, -1, {}, {}, value};
  }
  Location at_node(const std::string& graph, const Node& n, size_t i) const {
    return Location{m_.source, graph, static_cast<int64_t>(i), n.label(i), n.op_type, {}};
  }

  void check_model_header() {
    if (m_.ir_version <= 0)
      d_.error("ir-version", at({}), "model has no ir_version", "an IR version 3.." + std::to_string(kMaxIrVersion));
    else if (m_.ir_version > kMaxIrVersion)
      d_.error("ir-version", at({}), "IR version " + std::to_string(m_.ir_version) + " is newer than this build supports",
               "at most " + std::to_string(kMaxIrVersion));
    else if (m_.ir_version < 3)
      d_.warning("ir-version", at({}), "IR version " + std::to_string(m_.ir_version) + " predates opset imports");
  }

  void check_opsets() {
    if (m_.opset_imports.empty()) {
      if (m_.ir_version >= 3) {
        d_.error("missing-opset-import", at({}), "model imports no operator set", "opset_import with at least ai.onnx");
      } else {
        m_.opset_imports.push_back({"", 1});  // IR < 3: the default domain at version 1
      }
    }
    // The same domain imported twice at one version (skl2onnx writes ai.onnx
    // so): onnx.checker and ONNX Runtime accept it, so do we, with a warning,
    // keeping one entry. At two versions it is ambiguous: an error.
    std::map<std::string, int64_t> seen;
    std::vector<OpsetImport> kept;
    for (const auto& o : m_.opset_imports) {
      std::string dom(domain_display_name(o.domain));
      auto [it, fresh] = seen.emplace(dom, o.version);
      if (!fresh) {
        if (it->second == o.version)
          d_.warning("duplicate-opset-import", at({}, dom),
                     "domain " + dom + " is imported twice at version " + std::to_string(o.version) + "; read once");
        else
          d_.error("conflicting-opset-import", at({}, dom),
                   "domain " + dom + " is imported at versions " + std::to_string(it->second) + " and " +
                       std::to_string(o.version),
                   "one version per domain");
        continue;
      }
      kept.push_back(o);
    }
    m_.opset_imports = std::move(kept);
    for (const auto& o : m_.opset_imports) {
      std::string dom(domain_display_name(o.domain));
      if (o.version < 1)
        d_.error("opset-version", at({}, dom), "domain " + dom + " imported at version " + std::to_string(o.version),
                 "a version >= 1");
      if (is_standard_domain(o.domain) && o.version > max_known_opset(o.domain))
        d_.error("opset-too-new", at({}, dom),
                 dom + " opset " + std::to_string(o.version) + " is newer than this build supports",
                 "at most " + std::to_string(max_known_opset(o.domain)) + " (onnx " + std::string(schema_onnx_version()) + ")");
    }
  }

  // --- functions ---------------------------------------------------------

  std::string function_path(const Function& f) const {
    return "function " + std::string(domain_display_name(f.domain)) + "::" + f.name +
           (f.overload.empty() ? "" : ":" + f.overload);
  }

  void collect_calls(const std::vector<Node>& nodes, std::vector<const Function*>& out) const {
    for (const auto& n : nodes) {
      if (const Function* f = m_.function(n.domain, n.op_type, n.overload)) out.push_back(f);
      for (const auto& a : n.attributes) {
        if (a.g) collect_calls(a.g->nodes, out);
        for (const auto& g : a.graphs)
          if (g) collect_calls(g->nodes, out);
      }
    }
  }

  void check_functions() {
    std::set<std::tuple<std::string, std::string, std::string>> ids;
    for (const auto& f : m_.functions) {
      if (!ids.insert({f.domain, f.name, f.overload}).second)
        d_.error("duplicate-function", at(function_path(f)), "function is defined more than once");
      if (f.name.empty()) d_.error("function-name", at(function_path(f)), "function has no name");
    }
    // Recursion: a cycle in the call graph can never be expanded.
    std::map<const Function*, std::vector<const Function*>> calls;
    for (const auto& f : m_.functions) collect_calls(f.nodes, calls[&f]);
    std::map<const Function*, int> state;  // 0 new, 1 on stack, 2 done
    std::map<const Function*, int> depth;  // longest call chain below
    std::vector<const Function*> stack;
    bool reported_cycle = false;
    std::function<int(const Function*)> visit = [&](const Function* f) -> int {
      if (state[f] == 2) return depth[f];
      if (state[f] == 1) {
        if (!reported_cycle) {
          std::vector<std::string> cycle;
          auto it = std::find(stack.begin(), stack.end(), f);
          for (; it != stack.end(); ++it) cycle.push_back((*it)->name);
          cycle.push_back(f->name);
          std::string chain;
          for (size_t i = 0; i < cycle.size(); ++i) chain += (i ? " -> " : "") + cycle[i];
          d_.error("recursive-function", at(function_path(*f)), "functions call each other recursively: " + chain,
                   "a call graph without cycles");
          reported_cycle = true;
        }
        return 0;
      }
      state[f] = 1;
      stack.push_back(f);
      int deepest = 0;
      for (const Function* g : calls[f]) deepest = std::max(deepest, visit(g));
      stack.pop_back();
      state[f] = 2;
      return depth[f] = deepest + 1;
    };
    for (const auto& f : m_.functions) {
      int d = visit(&f);
      if (d > opt_.max_function_call_depth && !reported_cycle) {
        d_.error("function-depth", at(function_path(f)),
                 "model-local function calls nest " + std::to_string(d) + " deep",
                 "at most " + std::to_string(opt_.max_function_call_depth));
        reported_cycle = true;
      }
    }
    for (auto& f : m_.functions) check_function_body(f);
  }

  void check_function_body(Function& f) {
    const auto& opsets = f.opset_imports.empty() ? m_.opset_imports : f.opset_imports;
    for (const auto& o : f.opset_imports)
      if (is_standard_domain(o.domain) && o.version > max_known_opset(o.domain))
        d_.error("opset-too-new", at(function_path(f), std::string(domain_display_name(o.domain))),
                 "function imports " + std::string(domain_display_name(o.domain)) + " opset " + std::to_string(o.version),
                 "at most " + std::to_string(max_known_opset(o.domain)));
    Graph body;  // view the body as a graph to share the SSA/order checks
    for (const auto& in : f.inputs) body.inputs.push_back({in, {}, {}});
    for (const auto& out : f.outputs) body.outputs.push_back({out, {}, {}});
    body.nodes = std::move(f.nodes);
    check_graph(body, function_path(f), nullptr, opsets, true, 0);
    f.nodes = std::move(body.nodes);
  }

  // --- graphs ------------------------------------------------------------

  const std::set<std::string>& free_names(const Graph& g) { return free_names_.of(g); }

  void check_graph(Graph& g, const std::string& path, const Scope* outer, const std::vector<OpsetImport>& opsets,
                   bool in_function, int depth) {
    Scope scope{outer, {}};
    std::unordered_map<std::string, size_t> producer;  // value -> node index
    for (const auto& v : g.inputs) {
      if (v.name.empty()) d_.error("empty-name", at(path), "graph input has an empty name");
      if (!scope.names.insert(v.name).second)
        d_.error("duplicate-input", at(path, v.name), "graph input '" + v.name + "' is declared twice");
    }
    std::unordered_set<std::string> init_names;
    auto add_initializer = [&](const std::string& name) {
      if (name.empty()) d_.error("empty-name", at(path), "initializer has an empty name");
      if (!init_names.insert(name).second)
        d_.error("duplicate-initializer", at(path, name), "initializer '" + name + "' is defined twice");
      scope.names.insert(name);
    };
    for (const auto& i : g.initializers) add_initializer(i.name);
    for (const auto& n : g.sparse_initializer_names) add_initializer(n);

    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      for (const auto& o : n.outputs) {
        if (o.empty()) continue;
        if (auto p = producer.find(o); p != producer.end()) {
          d_.error("duplicate-output", at_node(path, n, i),
                   "output '" + o + "' is also produced by node '" + g.nodes[p->second].label(p->second) + "' (#" +
                       std::to_string(p->second) + ")",
                   "each value produced once (static single assignment)");
          continue;
        }
        if (scope.names.count(o)) {
          d_.error("duplicate-output", at_node(path, n, i),
                   "output '" + o + "' redefines a graph input or initializer",
                   "each value produced once (static single assignment)");
          continue;
        }
        if (outer && outer->has(o))
          d_.warning("shadowed-name", at_node(path, n, i), "output '" + o + "' shadows a value of an enclosing graph");
        producer.emplace(o, i);
      }
    }

    // Dependencies, including values captured by subgraph attributes.
    std::vector<std::vector<size_t>> users(g.nodes.size());
    std::vector<size_t> pending(g.nodes.size(), 0);
    bool out_of_order = false;
    std::string first_out_of_order;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      std::set<size_t> deps;
      auto need = [&](const std::string& name, bool captured) {
        if (name.empty()) return;
        if (auto p = producer.find(name); p != producer.end()) {
          deps.insert(p->second);
          if (p->second >= i && !out_of_order) {
            out_of_order = true;
            first_out_of_order = "node '" + n.label(i) + "' (#" + std::to_string(i) + ") uses '" + name +
                                 "' produced later by '" + g.nodes[p->second].label(p->second) + "' (#" +
                                 std::to_string(p->second) + ")";
          }
          return;
        }
        if (scope.names.count(name) || (outer && outer->has(name))) return;
        // An undefined name read inside a subgraph is reported by the subgraph's
        // own check, where the node that reads it is known.
        if (captured) return;
        d_.error("undefined-input", at_node(path, n, i),
                 "input '" + name + "' is not a graph input, an initializer, or any node's output",
                 "a value defined before this node");
      };
      for (const auto& in : n.inputs) need(in, false);
      for (const auto& a : n.attributes) {
        if (a.g)
          for (const auto& name : free_names(*a.g)) need(name, true);
        for (const auto& sg : a.graphs)
          if (sg)
            for (const auto& name : free_names(*sg)) need(name, true);
      }
      for (size_t d : deps) {
        if (d == i) continue;  // self-loop: reported as a cycle below
        users[d].push_back(i);
      }
      pending[i] = deps.size();
    }
    // Kahn's algorithm, always taking the lowest original index that is ready,
    // so an already sorted graph keeps its order exactly.
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    order.reserve(g.nodes.size());
    while (!ready.empty()) {
      size_t i = ready.top();
      ready.pop();
      order.push_back(i);
      for (size_t u : users[i])
        if (--pending[u] == 0) ready.push(u);
    }
    if (order.size() != g.nodes.size()) {
      std::vector<std::string> stuck;
      size_t first = g.nodes.size();
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (pending[i] > 0) {
          stuck.push_back(g.nodes[i].label(i));
          first = std::min(first, i);
        }
      d_.error("cycle", at_node(path, g.nodes[first], first),
               "the graph has a cycle: " + std::to_string(stuck.size()) + " nodes wait on each other (" + join(stuck) + ")",
               "an acyclic graph");
    } else if (out_of_order) {
      if (opt_.sort_nodes) {
        d_.warning("not-topological", at(path), "nodes are not in topological order (" + first_out_of_order + "); sorted");
        std::vector<Node> sorted;
        sorted.reserve(g.nodes.size());
        for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
        g.nodes = std::move(sorted);
      } else {
        d_.error("not-topological", at(path), "nodes are not in topological order: " + first_out_of_order,
                 "each node after the producers of its inputs");
      }
    }

    for (const auto& o : g.outputs) {
      if (o.name.empty()) {
        d_.error("empty-name", at(path), "graph output has an empty name");
        continue;
      }
      if (!producer.count(o.name) && !scope.names.count(o.name) && !(outer && outer->has(o.name)))
        d_.error("unproduced-output", at(path, o.name),
                 "graph output '" + o.name + "' is not produced by any node, input or initializer");
    }

    // Node-level rules, then subgraphs with this graph's values in scope.
    for (const auto& [name, idx] : producer) scope.names.insert(name);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      Node& n = g.nodes[i];
      check_node(n, i, path, opsets, in_function);
      for (auto& a : n.attributes) {
        std::string sub_path = path + "/" + n.label(i) + ":" + a.name;
        if (a.g) check_graph(*a.g, sub_path, &scope, opsets, in_function, depth + 1);
        for (size_t k = 0; k < a.graphs.size(); ++k)
          if (a.graphs[k])
            check_graph(*a.graphs[k], sub_path + "[" + std::to_string(k) + "]", &scope, opsets, in_function, depth + 1);
      }
    }
  }

  // --- nodes -------------------------------------------------------------

  static int64_t version_in(const std::vector<OpsetImport>& opsets, const std::string& domain) {
    for (const auto& o : opsets)
      if (o.domain == domain || (is_default_domain(domain) && is_default_domain(o.domain))) return o.version;
    return 0;
  }

  void check_node(const Node& n, size_t i, const std::string& path, const std::vector<OpsetImport>& opsets,
                  bool in_function) {
    const Location where = at_node(path, n, i);
    if (n.op_type.empty()) {
      d_.error("empty-op-type", where, "node has no op_type");
      return;
    }
    std::set<std::string> attr_names;
    for (const auto& a : n.attributes) {
      if (a.name.empty()) d_.error("attribute-name", where, "node has an attribute with an empty name");
      if (!attr_names.insert(a.name).second)
        d_.error("duplicate-attribute", where, "attribute '" + a.name + "' is given twice");
      if (!a.ref_attr_name.empty() && !in_function)
        d_.error("attribute-reference", where,
                 "attribute '" + a.name + "' refers to '" + a.ref_attr_name + "' but only function bodies can do that");
    }
    const std::string domain = is_default_domain(n.domain) ? "" : n.domain;
    const int64_t version = version_in(opsets, domain);
    if (version == 0) {
      auto& slot = missing_domains_[domain];
      if (slot.count++ == 0) slot.first = where;
      return;
    }
    if (m_.function(domain, n.op_type, n.overload)) return;  // model-local function: its body is checked on its own
    if (const PluginKernelInfo* k = opt_.plugins ? opt_.plugins->supplier(domain, n.op_type, version) : nullptr;
        k && !is_standard_domain(domain)) {
      check_plugin_arity(n, where, *k);
      return;
    }
    if (!is_standard_domain(domain)) {
      unknown_ops_.insert({domain, n.op_type});
      return;
    }
    const OpSchema* s = find_schema(domain, n.op_type, version);
    const std::string op = std::string(domain_display_name(domain)) + " " + n.op_type;
    if (!s && domain.empty() && onnx_runtime_onnx_domain_op(n.op_type, version)) {
      ort_onnx_domain_ops_[n.op_type].push_back(n.name.empty() ? n.op_type : n.name);
      return;  // its kernel checks inputs and attributes, as ONNX Runtime's does
    }
    if (!s) {
      auto versions = schema_versions(domain, n.op_type);
      std::string hint = versions.empty() ? "no such operator in " + std::string(domain_display_name(domain))
                                          : "added in opset " + std::to_string(versions.front()->since_version);
      d_.error("unknown-op", where,
               "'" + n.op_type + "' is not an operator of " + std::string(domain_display_name(domain)) + " opset " +
                   std::to_string(version) + " (" + hint + ")",
               "an operator the imported opset defines, or a model-local function");
      return;
    }
    if (s->deprecated)
      d_.warning("deprecated-op", where, op + " is deprecated as of opset " + std::to_string(s->since_version));

    const auto n_in = static_cast<int>(n.inputs.size()), n_out = static_cast<int>(n.outputs.size());
    if (n_in < s->min_inputs || n_in > s->max_inputs)
      d_.error("input-count", where, op + "-" + std::to_string(s->since_version) + " got " + std::to_string(n_in) + " inputs",
               s->min_inputs == s->max_inputs ? std::to_string(s->min_inputs)
                                              : std::to_string(s->min_inputs) + ".." + (s->max_inputs == INT32_MAX ? "any" : std::to_string(s->max_inputs)));
    if (n_out < s->min_outputs || n_out > s->max_outputs)
      d_.error("output-count", where, op + "-" + std::to_string(s->since_version) + " has " + std::to_string(n_out) + " outputs",
               s->min_outputs == s->max_outputs ? std::to_string(s->min_outputs)
                                                : std::to_string(s->min_outputs) + ".." + (s->max_outputs == INT32_MAX ? "any" : std::to_string(s->max_outputs)));
    for (int k = 0; k < n_in && k < static_cast<int>(s->inputs.size()); ++k)
      if (n.inputs[static_cast<size_t>(k)].empty() && s->inputs[static_cast<size_t>(k)].option == 0)
        d_.error("missing-input", where, "required input " + std::to_string(k) + " ('" + s->inputs[static_cast<size_t>(k)].name + "') is empty");

    for (const auto& a : n.attributes) {
      const AttrSpec* spec = s->attribute(a.name);
      if (!spec) {
        std::vector<std::string> valid;
        for (const auto& sp : s->attributes) valid.push_back(sp.name);
        d_.error("unknown-attribute", where, op + " has no attribute '" + a.name + "'",
                 valid.empty() ? "no attributes" : "one of " + join(valid, 20));
        continue;
      }
      if (a.type != spec->type)
        d_.error("attribute-type", where,
                 "attribute '" + a.name + "' is " + std::string(attr_type_name(a.type)),
                 std::string(attr_type_name(spec->type)));
    }
    for (const auto& spec : s->attributes)
      if (spec.required && !attr_names.count(spec.name))
        d_.error("missing-attribute", where, op + " requires attribute '" + std::string(spec.name) + "'");
  }

  // A custom-domain node a plugin supplies: the plugin's counts replace a schema.
  void check_plugin_arity(const Node& n, const Location& where, const PluginKernelInfo& k) {
    auto range = [](int lo, int hi) {
      return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + (hi == INT_MAX ? "any" : std::to_string(hi));
    };
    const auto n_in = static_cast<int>(n.inputs.size()), n_out = static_cast<int>(n.outputs.size());
    const std::string op = k.domain + "::" + k.op_type + " of " + k.origin();
    if (n_in < k.min_inputs || n_in > k.max_inputs)
      d_.error("input-count", where, op + " got " + std::to_string(n_in) + " inputs", range(k.min_inputs, k.max_inputs));
    if (n_out < k.min_outputs || n_out > k.max_outputs)
      d_.error("output-count", where, op + " has " + std::to_string(n_out) + " outputs", range(k.min_outputs, k.max_outputs));
  }

  // Operators ONNX Runtime registers in the onnx domain itself, as contrib
  // operators, where ONNX has none at that opset; its transformers optimizer
  // writes them into models of any opset (LayerNormalization below 17, as its
  // contrib LayerNormalization-1; SimplifiedLayerNormalization, an RMS norm).
  // onnxscope's reference runs them with ONNX Runtime's definitions.
  static bool onnx_runtime_onnx_domain_op(const std::string& op, int64_t version) {
    return (op == "LayerNormalization" && version < 17) || op == "SimplifiedLayerNormalization";
  }

  void report_domains() {
    for (const auto& [op, nodes] : ort_onnx_domain_ops_)
      d_.warning("onnx-runtime-op", at({}),
                 "'" + op + "' is not an operator of the imported ai.onnx opset (" + std::to_string(nodes.size()) +
                     " node(s), first '" + nodes.front() + "'): run as ONNX Runtime defines it in that domain (its contrib " +
                     op + "-1), as its transformers optimizer writes it; onnx.checker rejects such a model");
    for (const auto& [domain, info] : missing_domains_)
      d_.error("domain-not-imported", info.first,
               std::to_string(info.count) + " node(s) use domain " + std::string(domain_display_name(domain)) +
                   ", which the model (or function) does not import",
               "an opset_import entry for " + std::string(domain_display_name(domain)));
    std::map<std::string, std::vector<std::string>> by_domain;
    for (const auto& [domain, op] : unknown_ops_) by_domain[domain].push_back(op);
    for (const auto& [domain, ops] : by_domain)
      d_.warning("custom-domain", at({}, domain),
                 "domain " + domain + " is not a standard ONNX domain and the model defines no function for " + join(ops) +
                     ": each needs a kernel, onnxscope's own (it has some of ONNX Runtime's com.microsoft operators) or a plugin's");
  }

  struct MissingDomain {
    size_t count = 0;
    Location first;
  };

  Model& m_;
  const LoadOptions& opt_;
  Diagnostics& d_;
  std::map<std::string, MissingDomain> missing_domains_;
  std::set<std::pair<std::string, std::string>> unknown_ops_;
  std::map<std::string, std::vector<std::string>> ort_onnx_domain_ops_;  // op -> node names
  detail::FreeNames free_names_;
};

}  // namespace

void validate_model(Model& model, const LoadOptions& options, Diagnostics& out) {
  Validator(model, options, out).run();
}

}  // namespace onnxscope
