#include "plugin_args.h"

#include <algorithm>
#include <iostream>

namespace onnxscope::cli {

namespace {
PluginSet& loaded() {
  static PluginSet set;
  return set;
}
}  // namespace

PluginArgs& plugin_args() {
  static PluginArgs a;
  return a;
}

void add_plugin_options(CLI::App* cmd, PluginArgs& a) {
  cmd->add_option("--plugin", a.paths,
                  "Load operator kernels from a plugin library (repeatable; also ONNXSCOPE_PLUGIN_PATH, colon-separated)");
  cmd->add_option("--plugin-engines", a.engines,
                  "Engines that use the plugin kernels (default: all), e.g. cpu to diff a plugin kernel against the "
                  "reference's function expansion")
      ->delimiter(',')
      ->check([](const std::string& v) -> std::string {
        // By name only: asking which engines this machine runs would start
        // CUDA in this process, which the conformance runner's forked tests
        // could then not use.
        return is_engine_name(v) ? std::string{} : "unknown engine '" + v + "'";
      });
}

bool load_plugins(const PluginArgs& a) {
  std::vector<std::string> paths = plugin_paths_from_env();
  paths.insert(paths.end(), a.paths.begin(), a.paths.end());
  for (const auto& p : paths) {
    try {
      loaded().load(p);
    } catch (const Error& e) {
      std::cerr << "onnxscope: " << e.what() << "\n";
      return false;
    }
  }
  return true;
}

const PluginSet& plugins() { return loaded(); }

EngineSettings with_plugins(EngineSettings s, const std::string& engine) {
  const auto& only = plugin_args().engines;
  const bool wanted = only.empty() || std::find(only.begin(), only.end(), engine) != only.end();
  s.extra_kernels = !loaded().empty() && wanted ? &loaded().kernels() : nullptr;
  return s;
}

LoadOptions plugin_load_options() {
  LoadOptions o;
  if (!loaded().empty()) o.plugins = &loaded();
  return o;
}

}  // namespace onnxscope::cli
