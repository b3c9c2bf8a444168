// Loading plugin libraries: dlopen with RTLD_LOCAL, the entry point, the ABI
// version check, validation of every kernel entry, and registration.
#include <dlfcn.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <set>

#include "plugin/plugin_bridge.h"

namespace onnxscope {

std::string PluginKernelInfo::origin() const { return "plugin '" + plugin + "' (" + path + ")"; }

struct PluginSet::Impl {
  std::vector<PluginInfo> plugins;
  std::deque<plugin::Entry> entries;  // stable addresses: KernelDef::data points here
  std::set<std::string> loaded_paths;  // canonical
  KernelRegistry registry;
};

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& message, const std::string& expected = {}) {
  throw Error(Diagnostic{Severity::Error, "plugin", Location{path, {}, -1, {}, {}, {}}, message, expected});
}

std::string str(const char* s) { return s ? s : ""; }

bool overlaps(const PluginKernelInfo& a, const PluginKernelInfo& b) {
  return a.op_type == b.op_type && a.domain == b.domain && a.since_version <= b.until_version &&
         b.since_version <= a.until_version;
}

std::string versions(const PluginKernelInfo& k) {
  return "opset " + std::to_string(k.since_version) + ".." +
         (k.until_version == INT_MAX ? std::string("") : std::to_string(k.until_version));
}

// Checks one kernel entry and turns it into the host's form.
plugin::Entry make_entry(const std::string& path, const std::string& plugin_name, const onnxscope_kernel_desc& d,
                         size_t index) {
  const std::string which = "kernel entry " + std::to_string(index);
  if (!d.op_type || !*d.op_type) fail(path, which + " has no op_type");
  const std::string op = std::string(domain_display_name(str(d.domain))) + "::" + d.op_type;
  if (!d.cpu) fail(path, which + " (" + op + ") has no CPU kernel", "a CPU kernel for every entry");
  if (!d.infer) fail(path, which + " (" + op + ") has no shape function", "a shape function for every entry");
  if (d.since_version < 1 || (d.until_version != 0 && d.until_version < d.since_version))
    fail(path, which + " (" + op + ") covers opset " + std::to_string(d.since_version) + ".." +
                   std::to_string(d.until_version),
         "since_version >= 1 and until_version 0 or >= since_version");
  auto bad_range = [](int32_t lo, int32_t hi) { return lo < 0 || (hi != -1 && hi < lo); };
  if (bad_range(d.min_inputs, d.max_inputs) || bad_range(d.min_outputs, d.max_outputs) || d.max_outputs == 0)
    fail(path, which + " (" + op + ") has input/output counts " + std::to_string(d.min_inputs) + ".." +
                   std::to_string(d.max_inputs) + " / " + std::to_string(d.min_outputs) + ".." +
                   std::to_string(d.max_outputs),
         "min >= 0, max >= min or -1, at least one output");
  plugin::Entry e;
  e.desc = d;
  PluginKernelInfo& k = e.info;
  k.domain = is_default_domain(str(d.domain)) ? "" : str(d.domain);
  k.op_type = d.op_type;
  k.since_version = d.since_version;
  k.until_version = d.until_version == 0 ? INT_MAX : d.until_version;
  k.min_inputs = d.min_inputs;
  k.max_inputs = d.max_inputs == -1 ? INT_MAX : d.max_inputs;
  k.min_outputs = d.min_outputs;
  k.max_outputs = d.max_outputs == -1 ? INT_MAX : d.max_outputs;
  k.description = str(d.description);
  k.has_cuda = d.cuda != nullptr;
  k.plugin = plugin_name;
  k.path = path;
  return e;
}

}  // namespace

PluginSet::PluginSet() : impl_(std::make_unique<Impl>()) {}
PluginSet::~PluginSet() = default;

void PluginSet::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(path, "plugin file not found");
  if (fs::is_directory(path, ec)) fail(path, "is a directory, not a plugin library");
  const std::string canonical = fs::canonical(path, ec).string();
  if (impl_->loaded_paths.count(canonical)) return;  // same file named twice (--plugin and ONNXSCOPE_PLUGIN_PATH)

  // An absolute path, so dlopen never searches the library path instead.
  void* handle = dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    fail(path, "cannot load the plugin as a shared library: " + str(why));
  }
  // From here on, a refused library is closed again (nothing of it was registered).
  struct Closer {
    void* h;
    ~Closer() {
      if (h) dlclose(h);
    }
  } closer{handle};
  dlerror();
  auto entry = reinterpret_cast<onnxscope_plugin_entry_fn>(dlsym(handle, ONNXSCOPE_PLUGIN_ENTRY_SYMBOL));
  if (!entry)
    fail(path, "the library has no entry point '" ONNXSCOPE_PLUGIN_ENTRY_SYMBOL "': it is not an onnxscope plugin",
         "extern \"C\" ONNXSCOPE_PLUGIN_EXPORT const onnxscope_plugin_info* " ONNXSCOPE_PLUGIN_ENTRY_SYMBOL "(void)");
  const onnxscope_plugin_info* info = entry();
  if (!info) fail(path, ONNXSCOPE_PLUGIN_ENTRY_SYMBOL "() returned no plugin description");
  // abi_version is the one field every ABI version keeps first: read it before anything else.
  if (info->abi_version != ONNXSCOPE_PLUGIN_ABI_VERSION)
    fail(path,
         "the plugin was built for plugin ABI version " + std::to_string(info->abi_version) +
             ", this onnxscope speaks version " + std::to_string(ONNXSCOPE_PLUGIN_ABI_VERSION),
         "ABI version " + std::to_string(ONNXSCOPE_PLUGIN_ABI_VERSION) +
             ": rebuild the plugin against this onnxscope's plugin_abi.h");
  if (info->kernel_count == 0 || !info->kernels) fail(path, "the plugin registers no kernels");

  PluginInfo p;
  p.path = path;
  p.name = info->name && *info->name ? info->name : fs::path(path).stem().string();
  p.version = str(info->version);
  p.description = str(info->description);
  std::vector<plugin::Entry> fresh;
  for (size_t i = 0; i < info->kernel_count; ++i) {
    plugin::Entry e = make_entry(path, p.name, info->kernels[i], i);
    const std::string op = std::string(domain_display_name(e.info.domain)) + "::" + e.info.op_type;
    for (const auto& f : fresh)
      if (overlaps(f.info, e.info))
        fail(path, "kernel " + op + " is registered twice by this plugin (" + versions(f.info) + " and " +
                       versions(e.info) + ")");
    for (const auto& old : impl_->entries)
      if (overlaps(old.info, e.info))
        fail(path, "kernel " + op + " (" + versions(e.info) + ") is already registered by " + old.info.origin());
    fresh.push_back(std::move(e));
  }

  for (auto& e : fresh) {
    p.kernels.push_back(e.info);
    impl_->entries.push_back(std::move(e));
    const plugin::Entry& stored = impl_->entries.back();
    KernelDef def;
    def.domain = stored.info.domain;
    def.op_type = stored.info.op_type;
    def.since_version = stored.info.since_version;
    def.until_version = stored.info.until_version;
    def.impl = "plugin:" + p.name;
    def.fn = plugin::run_kernel;
    def.data = &stored;
    impl_->registry.add(std::move(def));
  }
  impl_->plugins.push_back(std::move(p));
  impl_->loaded_paths.insert(canonical);
  closer.h = nullptr;  // kernels now point into the library: keep it loaded
}

bool PluginSet::empty() const { return impl_->plugins.empty(); }
const std::vector<PluginInfo>& PluginSet::plugins() const { return impl_->plugins; }
const KernelRegistry& PluginSet::kernels() const { return impl_->registry; }

const PluginKernelInfo* PluginSet::supplier(std::string_view domain, std::string_view op_type, int64_t version) const {
  for (const auto& e : impl_->entries)
    if (e.info.op_type == op_type &&
        (e.info.domain == domain || (is_default_domain(e.info.domain) && is_default_domain(domain))) &&
        version >= e.info.since_version && version <= e.info.until_version)
      return &e.info;
  return nullptr;
}

std::optional<PluginShapeResult> PluginSet::infer(const Node& node, int64_t version,
                                                  const std::vector<const TypeInfo*>& inputs) const {
  const PluginKernelInfo* k = supplier(node.domain, node.op_type, version);
  if (!k) return std::nullopt;
  for (const auto& e : impl_->entries)
    if (&e.info == k) return plugin::call_shape_fn(e, node, version, inputs);
  return std::nullopt;
}

std::vector<std::string> plugin_paths_from_env() {
  std::vector<std::string> out;
  const char* env = std::getenv("ONNXSCOPE_PLUGIN_PATH");
  if (!env) return out;
  std::string s = env;
  size_t start = 0;
  while (start <= s.size()) {
    size_t colon = s.find(':', start);
    if (colon == std::string::npos) colon = s.size();
    if (colon > start) out.push_back(s.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

}  // namespace onnxscope
