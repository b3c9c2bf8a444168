// Plugins: shared libraries that add operator kernels at run time through the
// C ABI of plugin_abi.h. A PluginSet loads them and offers what the rest of
// onnxscope needs: a kernel registry for the engines, shape functions for
// shape inference and validation, and which plugin supplies a node.
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "onnxscope/ir.h"
#include "onnxscope/kernel.h"

namespace onnxscope {

struct PluginKernelInfo {
  std::string domain;  // "" is ai.onnx
  std::string op_type;
  int since_version = 1;
  int until_version = INT_MAX;
  int min_inputs = 0, max_inputs = INT_MAX, min_outputs = 1, max_outputs = INT_MAX;
  std::string description;
  bool has_cuda = false;
  std::string plugin;  // the plugin's name
  std::string path;    // the library it came from
  // "plugin 'name' (path)", for messages.
  std::string origin() const;
};

struct PluginInfo {
  std::string path, name, version, description;
  std::vector<PluginKernelInfo> kernels;
};

// What a plugin's shape function said about a node.
struct PluginShapeResult {
  bool ok = true;
  std::string error;               // why it rejected the inputs (ok == false)
  std::vector<TypeInfo> outputs;   // one per node output; unknown where it could not say
};

class PluginSet {
 public:
  PluginSet();
  ~PluginSet();
  PluginSet(const PluginSet&) = delete;
  PluginSet& operator=(const PluginSet&) = delete;

  // Loads one plugin library. Throws onnxscope::Error (code "plugin") naming
  // the file for a missing file, a file that is not a loadable library, a
  // missing entry point, another ABI version, a malformed kernel entry, or a
  // kernel another loaded plugin already registers; nothing is added then.
  // Libraries stay loaded for the life of the process.
  void load(const std::string& path);

  bool empty() const;
  const std::vector<PluginInfo>& plugins() const;
  // Every plugin kernel, implementation name "plugin:NAME"; tried before the
  // built-in kernels when passed as an engine's extra_kernels.
  const KernelRegistry& kernels() const;
  // The plugin kernel for this operator at this opset version, or nullptr.
  const PluginKernelInfo* supplier(std::string_view domain, std::string_view op_type, int64_t version) const;
  // Runs the supplier's shape function on what is known of the inputs
  // (nullptr: omitted or unknown). nullopt when no plugin supplies the node.
  std::optional<PluginShapeResult> infer(const Node& node, int64_t version,
                                         const std::vector<const TypeInfo*>& inputs) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The entries of ONNXSCOPE_PLUGIN_PATH (colon-separated; empty ones skipped).
std::vector<std::string> plugin_paths_from_env();

// Kernels make_engine() (engines.h) adds when its EngineSettings name none:
// a process with one plugin set for every engine it makes (the GUI: debugger,
// inspector, conformance browser) sets its plugins' kernels here once. The
// CLI passes them explicitly instead (--plugin-engines can leave an engine
// out). nullptr: none. Engines copy the kernels when they are made.
void set_default_plugin_kernels(const KernelRegistry* kernels);
const KernelRegistry* default_plugin_kernels();

}  // namespace onnxscope
