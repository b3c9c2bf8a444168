// Plugins on the command line: --plugin PATH (repeatable) and --plugin-engines
// on every subcommand, plus ONNXSCOPE_PLUGIN_PATH; loaded once per process
// before the command runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "onnxscope/engines.h"
#include "onnxscope/loader.h"
#include "onnxscope/plugin.h"

namespace onnxscope::cli {

struct PluginArgs {
  std::vector<std::string> paths;    // --plugin
  std::vector<std::string> engines;  // --plugin-engines: empty = every engine
};

// The one set of plugin arguments of this process (main.cpp adds the options
// to every subcommand).
PluginArgs& plugin_args();
void add_plugin_options(CLI::App* cmd, PluginArgs& a);

// Loads ONNXSCOPE_PLUGIN_PATH's entries, then --plugin's. False, after
// printing why (the file and the problem), when one does not load.
bool load_plugins(const PluginArgs& a);

// The plugins loaded so far (empty before load_plugins).
const PluginSet& plugins();

// `s` with the plugin kernels for `engine`, unless --plugin-engines leaves it out.
EngineSettings with_plugins(EngineSettings s, const std::string& engine);

// Load options under which plugin operators validate and infer shapes.
LoadOptions plugin_load_options();

}  // namespace onnxscope::cli
