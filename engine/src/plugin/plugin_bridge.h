// The host side of the plugin C ABI, shared by the loader and the kernel
// adapter: one registered plugin kernel, and the calls across the boundary.
#pragma once

#include <vector>

#include "onnxscope/kernel.h"
#include "onnxscope/plugin.h"
#include "onnxscope/plugin_abi.h"

namespace onnxscope::plugin {

// A plugin kernel as the host keeps it (address-stable: KernelDef::data
// points here).
struct Entry {
  PluginKernelInfo info;
  onnxscope_kernel_desc desc{};
};

// The host callbacks every call receives.
const onnxscope_host_api* host_api();

// Calls the entry's shape function. Inputs: nullptr for omitted or unknown.
PluginShapeResult call_shape_fn(const Entry& e, const Node& node, int64_t version,
                                const std::vector<const TypeInfo*>& inputs);

// The KernelFn of every plugin kernel: reads its Entry from ctx.kernel_def()->data,
// allocates outputs from the shape function, calls the plugin's CPU kernel,
// and turns a non-zero status into a node error naming the plugin.
void run_kernel(KernelContext& ctx);

}  // namespace onnxscope::plugin
