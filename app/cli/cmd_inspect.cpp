// onnxscope inspect MODEL [--json]: what a model is, and what is wrong with it.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "plugin_args.h"
#include "onnxscope/inspect.h"
#include "onnxscope/loader.h"
#include "onnxscope/reference.h"

namespace onnxscope::cli {

namespace {

// Nodes (main graph and subgraphs) a loaded plugin supplies the kernel for.
struct PluginNode {
  std::string graph, node, op;
  const PluginKernelInfo* kernel;
};

// Calls f(graph path, node, index) for every node of the main graph and its subgraphs.
void for_each_node(const Model& m, const std::function<void(const std::string&, const Node&, size_t)>& f) {
  std::function<void(const Graph&, const std::string&)> walk = [&](const Graph& g, const std::string& path) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      f(path, n, i);
      for (const auto& a : n.attributes) {
        if (a.g) walk(*a.g, path + "/" + n.label(i) + ":" + a.name);
        for (size_t k = 0; k < a.graphs.size(); ++k)
          if (a.graphs[k]) walk(*a.graphs[k], path + "/" + n.label(i) + ":" + a.name + "[" + std::to_string(k) + "]");
      }
    }
  };
  walk(m.graph, "main");
}

std::vector<PluginNode> plugin_nodes(const Model& m) {
  std::vector<PluginNode> out;
  for_each_node(m, [&](const std::string& path, const Node& n, size_t i) {
    if (const PluginKernelInfo* k = plugins().supplier(n.domain, n.op_type, m.opset_version(n.domain)))
      out.push_back({path, n.label(i), std::string(domain_display_name(n.domain)) + "::" + n.op_type, k});
  });
  return out;
}

// Operators no engine has a kernel for (the reference's table is what every
// engine falls back to), no plugin supplies and the model defines no
// function for, with their node count and first node: what a run would stop
// at, named before one is tried.
struct MissingKernel {
  std::string op, first;
  size_t nodes = 0;
};

std::vector<MissingKernel> missing_kernels(const Model& m) {
  std::vector<MissingKernel> out;
  const KernelRegistry& k = reference_kernels();
  for_each_node(m, [&](const std::string& path, const Node& n, size_t i) {
    const int64_t v = m.opset_version(n.domain);
    if (k.has(is_default_domain(n.domain) ? "" : n.domain, n.op_type, v) || m.function(n.domain, n.op_type, n.overload) ||
        plugins().supplier(n.domain, n.op_type, v))
      return;
    const std::string op = std::string(domain_display_name(n.domain)) + " " + n.op_type;
    auto it = std::find_if(out.begin(), out.end(), [&](const MissingKernel& e) { return e.op == op; });
    if (it == out.end()) out.push_back({op, path + "/" + n.label(i), 1});
    else ++it->nodes;
  });
  return out;
}

bool same_file(int a, int b) {
  struct stat x {}, y {};
  return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("inspect", "Print a model's structure, parameters and validation findings");
  auto model = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto no_sort = std::make_shared<bool>(false);
  cmd->add_option("MODEL", *model, "ONNX model file")->required();
  cmd->add_flag("--json", *json, "Print one JSON document instead of text");
  cmd->add_flag("--no-sort", *no_sort, "Report nodes out of topological order as an error instead of sorting them");
  return [=]() {
    LoadOptions opts;
    opts.sort_nodes = !*no_sort;
    opts.plugins = plugin_load_options().plugins;
    LoadResult r = load_model_file(*model, opts);
    ModelSummary s = summarize(r.model.get(), r.diagnostics, *model);
    const auto supplied = r.model ? plugin_nodes(*r.model) : std::vector<PluginNode>{};
    const auto missing = r.model ? missing_kernels(*r.model) : std::vector<MissingKernel>{};
    if (*json) {
      auto j = nlohmann::json::parse(summary_json(s));
      j["missing_kernels"] = nlohmann::json::array();
      for (const auto& e : missing) j["missing_kernels"].push_back({{"op", e.op}, {"nodes", e.nodes}, {"first", e.first}});
      if (!plugins().empty()) {
        j["plugins"] = nlohmann::json::array();
        for (const auto& p : plugins().plugins())
          j["plugins"].push_back({{"name", p.name}, {"version", p.version}, {"path", p.path}, {"kernels", p.kernels.size()}});
        j["plugin_nodes"] = nlohmann::json::array();
        for (const auto& pn : supplied)
          j["plugin_nodes"].push_back({{"graph", pn.graph}, {"node", pn.node}, {"op", pn.op}, {"plugin", pn.kernel->plugin},
                                       {"path", pn.kernel->path}, {"description", pn.kernel->description}});
      }
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << summary_text(s);
      if (!missing.empty()) {
        std::cout << "operators without a kernel (a run stops at the first; a plugin can supply them):\n";
        for (const auto& e : missing)
          std::cout << "  " << e.op << ": " << e.nodes << " node(s), first " << e.first << "\n";
      }
      if (!plugins().empty()) {
        std::cout << "plugins:\n";
        for (const auto& p : plugins().plugins())
          std::cout << "  " << p.name << (p.version.empty() ? "" : " " + p.version) << " (" << p.path << "): "
                    << p.kernels.size() << " kernel(s)\n";
        std::cout << "nodes run by plugin kernels (" << supplied.size() << "):\n";
        for (const auto& pn : supplied)
          std::cout << "  " << pn.graph << "  " << pn.node << "  " << pn.op << "  <- plugin '" << pn.kernel->plugin
                    << "' (" << pn.kernel->path << ")" << (pn.kernel->description.empty() ? "" : ": " + pn.kernel->description)
                    << "\n";
      }
      // Errors go to stderr too, so a pipeline that only shows stderr still
      // says why it failed; not when stderr is stdout (a terminal, 2>&1),
      // where the summary above already said it.
      std::cout.flush();
      if (!same_file(STDOUT_FILENO, STDERR_FILENO))
        for (const auto& d : r.diagnostics.items())
          if (d.severity == Severity::Error) std::cerr << "onnxscope: " << d.to_string() << "\n";
    }
    return r.ok() ? kExitOk : kExitBadInput;
  };
}

}  // namespace onnxscope::cli
