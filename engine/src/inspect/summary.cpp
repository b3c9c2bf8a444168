#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "onnxscope/inspect.h"

namespace onnxscope {
namespace {

struct Walker {
  ModelSummary& s;
  std::map<std::pair<std::string, std::string>, uint64_t> ops;

  void count_initializers(const Graph& g) {
    for (const auto& i : g.initializers) {
      ++s.initializer_count;
      s.parameter_count += i.value.element_count();
      s.parameter_bytes += i.value.is_string() ? 0 : i.value.byte_size();
    }
    for (const auto& sp : g.sparse_initializers) {
      ++s.initializer_count;
      s.parameter_count += sp.values.element_count();
      s.parameter_bytes += sp.values.byte_size() + sp.indices.byte_size();
    }
  }

  void graph(const Graph& g, const std::string& path, bool is_main) {
    if (!is_main) s.subgraphs.push_back({path, g.nodes.size()});
    s.total_nodes += g.nodes.size();
    count_initializers(g);
    std::set<std::string> values;
    for (const auto& n : g.nodes)
      for (const auto& o : n.outputs)
        if (!o.empty()) values.insert(o);
    for (const auto& v : values) {
      ++s.total_values;
      if (const TypeInfo* t = g.type_of(v); t && t->kind != TypeInfo::Kind::Unknown) ++s.inferred_values;
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      ++ops[{std::string(domain_display_name(n.domain)), n.op_type}];
      for (const auto& a : n.attributes) {
        std::string sub = path + "/" + n.label(i) + ":" + a.name;
        if (a.g) graph(*a.g, sub, false);
        for (size_t k = 0; k < a.graphs.size(); ++k)
          if (a.graphs[k]) graph(*a.graphs[k], sub + "[" + std::to_string(k) + "]", false);
      }
    }
  }
};

}  // namespace

ModelSummary summarize(const Model* m, const Diagnostics& diags, const std::string& file) {
  ModelSummary s;
  s.file = file;
  s.findings = diags.items();
  s.errors = diags.count(Severity::Error);
  s.warnings = diags.count(Severity::Warning);
  if (!m) return s;
  s.loaded = true;
  s.ir_version = m->ir_version;
  s.producer_name = m->producer_name;
  s.producer_version = m->producer_version;
  s.domain = m->domain;
  s.doc = m->doc;
  s.model_version = m->model_version;
  s.opset_imports = m->opset_imports;
  s.metadata = m->metadata;
  std::set<std::string> init_names;
  for (const auto& i : m->graph.initializers) init_names.insert(i.name);
  for (const auto& n : m->graph.sparse_initializer_names) init_names.insert(n);
  for (const auto& v : m->graph.inputs)
    if (!init_names.count(v.name)) s.inputs.push_back(v);
  s.outputs = m->graph.outputs;
  s.main_nodes = m->graph.nodes.size();

  Walker w{s, {}};
  w.graph(m->graph, "main", true);
  for (const auto& f : m->functions) {
    std::string path = "function " + std::string(domain_display_name(f.domain)) + "::" + f.name;
    s.functions.push_back({path, f.nodes.size()});
    s.total_nodes += f.nodes.size();
    for (const auto& n : f.nodes) ++w.ops[{std::string(domain_display_name(n.domain)), n.op_type}];
  }
  for (const auto& [key, count] : w.ops) s.op_counts.push_back({key.first, key.second, count});
  std::stable_sort(s.op_counts.begin(), s.op_counts.end(),
                   [](const OpCount& a, const OpCount& b) { return a.count > b.count; });
  return s;
}

namespace {
std::string human_bytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  std::ostringstream o;
  o.precision(u ? 3 : 0);
  o << std::fixed << v << " " << units[u];
  return o.str();
}
}  // namespace

std::string summary_text(const ModelSummary& s) {
  std::ostringstream o;
  o << "Model: " << s.file << "\n";
  if (!s.loaded) {
    o << "  could not be read as an ONNX model\n";
  } else {
    o << "  IR version: " << s.ir_version << "\n";
    o << "  producer: " << (s.producer_name.empty() ? "(none)" : s.producer_name)
      << (s.producer_version.empty() ? "" : " " + s.producer_version) << "\n";
    if (!s.domain.empty()) o << "  domain: " << s.domain << "\n";
    if (s.model_version) o << "  model version: " << s.model_version << "\n";
    o << "  opset imports:";
    for (const auto& op : s.opset_imports) o << " " << domain_display_name(op.domain) << "=" << op.version;
    o << "\n";
    for (const auto& [k, v] : s.metadata) o << "  metadata " << k << " = " << v << "\n";
    o << "Inputs (" << s.inputs.size() << "):\n";
    for (const auto& v : s.inputs) o << "  " << v.name << ": " << v.type.to_string() << "\n";
    o << "Outputs (" << s.outputs.size() << "):\n";
    for (const auto& v : s.outputs) o << "  " << v.name << ": " << v.type.to_string() << "\n";
    o << "Nodes: " << s.main_nodes << " in the main graph, " << s.total_nodes << " in all\n";
    for (const auto& c : s.op_counts)
      o << "  " << c.count << "\t" << (c.domain == "ai.onnx" ? "" : c.domain + "::") << c.op_type << "\n";
    o << "Parameters: " << s.parameter_count << " in " << s.initializer_count << " initializers ("
      << human_bytes(s.parameter_bytes) << ")\n";
    o << "Typed values: " << s.inferred_values << " of " << s.total_values << " node outputs have a known type\n";
    if (!s.subgraphs.empty()) {
      o << "Subgraphs (" << s.subgraphs.size() << "):\n";
      for (const auto& g : s.subgraphs) o << "  " << g.path << ": " << g.nodes << " nodes\n";
    }
    if (!s.functions.empty()) {
      o << "Functions (" << s.functions.size() << "):\n";
      for (const auto& f : s.functions) o << "  " << f.path << ": " << f.nodes << " nodes\n";
    }
  }
  o << "Validation: " << s.errors << " error(s), " << s.warnings << " warning(s)\n";
  for (const auto& d : s.findings) o << "  " << d.to_string() << "\n";
  return o.str();
}

std::string summary_json(const ModelSummary& s) {
  using nlohmann::json;
  auto value_json = [](const ValueInfo& v) {
    json j{{"name", v.name}, {"type", v.type.to_string()}};
    if (v.type.kind == TypeInfo::Kind::Tensor) {
      j["dtype"] = std::string(dtype_name(v.type.elem));
      if (v.type.shape) {
        json dims = json::array();
        for (const auto& d : *v.type.shape) {
          if (d.is_known()) dims.push_back(d.value);
          else if (d.is_symbolic()) dims.push_back(d.param);
          else dims.push_back(nullptr);
        }
        j["shape"] = dims;
      } else {
        j["shape"] = nullptr;
      }
    }
    return j;
  };
  json j;
  j["file"] = s.file;
  j["loaded"] = s.loaded;
  if (s.loaded) {
    j["ir_version"] = s.ir_version;
    j["producer"] = {{"name", s.producer_name}, {"version", s.producer_version}};
    j["domain"] = s.domain;
    j["model_version"] = s.model_version;
    j["doc_string"] = s.doc;
    json opsets = json::object();
    for (const auto& o : s.opset_imports) opsets[std::string(domain_display_name(o.domain))] = o.version;
    j["opset_imports"] = opsets;
    json meta = json::object();
    for (const auto& [k, v] : s.metadata) meta[k] = v;
    j["metadata"] = meta;
    j["inputs"] = json::array();
    for (const auto& v : s.inputs) j["inputs"].push_back(value_json(v));
    j["outputs"] = json::array();
    for (const auto& v : s.outputs) j["outputs"].push_back(value_json(v));
    j["nodes"] = {{"main_graph", s.main_nodes}, {"total", s.total_nodes}};
    j["op_counts"] = json::array();
    for (const auto& c : s.op_counts) j["op_counts"].push_back({{"domain", c.domain}, {"op_type", c.op_type}, {"count", c.count}});
    j["parameters"] = {{"count", s.parameter_count}, {"bytes", s.parameter_bytes}, {"initializers", s.initializer_count}};
    j["typed_values"] = {{"known", s.inferred_values}, {"total", s.total_values}};
    j["subgraphs"] = json::array();
    for (const auto& g : s.subgraphs) j["subgraphs"].push_back({{"path", g.path}, {"nodes", g.nodes}});
    j["functions"] = json::array();
    for (const auto& f : s.functions) j["functions"].push_back({{"path", f.path}, {"nodes", f.nodes}});
  }
  json findings = json::array();
  for (const auto& d : s.findings) {
    json f{{"severity", std::string(severity_name(d.severity))}, {"code", d.code}, {"message", d.message}};
    if (!d.expected.empty()) f["expected"] = d.expected;
    json loc = json::object();
    if (!d.where.file.empty()) loc["file"] = d.where.file;
    if (!d.where.graph.empty()) loc["graph"] = d.where.graph;
    if (d.where.node_index >= 0) loc["node_index"] = d.where.node_index;
    if (!d.where.node.empty()) loc["node"] = d.where.node;
    if (!d.where.op_type.empty()) loc["op_type"] = d.where.op_type;
    if (!d.where.value.empty()) loc["value"] = d.where.value;
    f["location"] = loc;
    f["text"] = d.to_string();
    findings.push_back(f);
  }
  j["validation"] = {{"errors", s.errors}, {"warnings", s.warnings}, {"findings", findings}, {"valid", s.loaded && s.errors == 0}};
  // Names in models are arbitrary bytes: replace invalid UTF-8 rather than throw.
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace onnxscope
