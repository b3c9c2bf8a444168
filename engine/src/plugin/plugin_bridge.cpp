// Calls across the plugin C ABI: the host callbacks (node name, opset,
// attributes), shape functions, and the KernelFn that runs a plugin's CPU
// kernel on engine values.
#include "plugin/plugin_bridge.h"

#include <cstring>
#include <string>

// The opaque node handle of plugin_abi.h.
struct onnxscope_node {
  const onnxscope::Node* node;
  int64_t version;
  std::string name;
};

namespace onnxscope::plugin {
namespace {

const Attribute* find_attr(const onnxscope_node* n, const char* name, AttrType want, int& status) {
  status = 0;
  if (!n || !name) return nullptr;
  const Attribute* a = n->node->attribute(name);
  if (!a) return nullptr;
  status = a->type == want ? 1 : -1;
  return status == 1 ? a : nullptr;
}

const char* host_node_name(const onnxscope_node* n) { return n ? n->name.c_str() : ""; }
int64_t host_opset_version(const onnxscope_node* n) { return n ? n->version : 0; }

int host_attr_int(const onnxscope_node* n, const char* name, int64_t* out) {
  int st;
  if (const Attribute* a = find_attr(n, name, AttrType::Int, st); a && out) *out = a->i;
  return st;
}
int host_attr_float(const onnxscope_node* n, const char* name, float* out) {
  int st;
  if (const Attribute* a = find_attr(n, name, AttrType::Float, st); a && out) *out = a->f;
  return st;
}
int host_attr_string(const onnxscope_node* n, const char* name, const char** data, size_t* size) {
  int st;
  if (const Attribute* a = find_attr(n, name, AttrType::String, st)) {
    if (data) *data = a->s.c_str();
    if (size) *size = a->s.size();
  }
  return st;
}
int host_attr_ints(const onnxscope_node* n, const char* name, const int64_t** data, size_t* count) {
  int st;
  if (const Attribute* a = find_attr(n, name, AttrType::Ints, st)) {
    if (data) *data = a->ints.data();
    if (count) *count = a->ints.size();
  }
  return st;
}
int host_attr_floats(const onnxscope_node* n, const char* name, const float** data, size_t* count) {
  int st;
  if (const Attribute* a = find_attr(n, name, AttrType::Floats, st)) {
    if (data) *data = a->floats.data();
    if (count) *count = a->floats.size();
  }
  return st;
}

const onnxscope_host_api kHost = {
    ONNXSCOPE_PLUGIN_ABI_VERSION, host_node_name,  host_opset_version, host_attr_int,
    host_attr_float,              host_attr_string, host_attr_ints,     host_attr_floats,
};

onnxscope_node node_handle(const Node& n, int64_t version) {
  return onnxscope_node{&n, version, n.name.empty() ? n.op_type : n.name};
}

// Symbolic dims cross the ABI as numbers <= -2, one per distinct name.
struct Symbols {
  std::vector<std::string> names;  // names[i] is -2 - i
  int64_t id(const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return -2 - static_cast<int64_t>(i);
    names.push_back(name);
    return -1 - static_cast<int64_t>(names.size());
  }
  const std::string* name(int64_t id) const {
    const auto i = static_cast<size_t>(-2 - id);
    return id <= -2 && i < names.size() ? &names[i] : nullptr;
  }
};

onnxscope_type to_abi(const TypeInfo* t, Symbols& symbols) {
  onnxscope_type r{};
  r.dtype = ONNXSCOPE_DTYPE_UNDEFINED;
  r.rank = -1;
  if (!t || !t->is_tensor()) return r;
  r.dtype = static_cast<int32_t>(t->elem);
  if (t->shape && t->shape->size() <= ONNXSCOPE_PLUGIN_MAX_RANK) {
    r.rank = static_cast<int32_t>(t->shape->size());
    for (size_t i = 0; i < t->shape->size(); ++i) {
      const Dim& d = (*t->shape)[i];
      r.dims[i] = d.is_known() ? d.value : d.is_symbolic() ? symbols.id(d.param) : -1;
    }
  }
  return r;
}

std::string op_name(const Entry& e) {
  return std::string(domain_display_name(e.info.domain)) + "::" + e.info.op_type;
}

// The plugin's message, or a stand-in when it wrote none.
std::string message_of(const char* buf, size_t size, int status) {
  std::string m(buf, strnlen(buf, size));
  return m.empty() ? "returned status " + std::to_string(status) + " without a message" : m;
}

}  // namespace

const onnxscope_host_api* host_api() { return &kHost; }

PluginShapeResult call_shape_fn(const Entry& e, const Node& node, int64_t version,
                                const std::vector<const TypeInfo*>& inputs) {
  PluginShapeResult r;
  Symbols symbols;
  std::vector<onnxscope_type> ins(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) ins[i] = to_abi(inputs[i], symbols);
  std::vector<onnxscope_type> outs(node.outputs.size());
  for (auto& o : outs) {
    o = onnxscope_type{};
    o.rank = -1;
  }
  char error[1024] = {};
  onnxscope_node handle = node_handle(node, version);
  onnxscope_shape_call call{&kHost, &handle, e.desc.user_data, ins.data(), ins.size(),
                            outs.data(), outs.size(), error, sizeof error};
  int status = ONNXSCOPE_ERROR;
  try {
    status = e.desc.infer(&call);
  } catch (...) {
    r.ok = false;
    r.error = "the shape function threw a C++ exception across the C ABI";
    return r;
  }
  if (status != ONNXSCOPE_OK) {
    r.ok = false;
    r.error = message_of(error, sizeof error, status);
    return r;
  }
  r.outputs.resize(outs.size());
  for (size_t k = 0; k < outs.size(); ++k) {
    const onnxscope_type& o = outs[k];
    if (o.dtype == ONNXSCOPE_DTYPE_UNDEFINED) continue;
    if (!is_known_dtype(o.dtype) || o.dtype == static_cast<int32_t>(DataType::String) || o.rank < -1 ||
        o.rank > ONNXSCOPE_PLUGIN_MAX_RANK) {
      r.ok = false;
      r.error = "the shape function wrote output " + std::to_string(k) + " with dtype " + std::to_string(o.dtype) +
                " and rank " + std::to_string(o.rank);
      return r;
    }
    TypeInfo t = TypeInfo::tensor(static_cast<DataType>(o.dtype));
    if (o.rank >= 0) {
      t.shape.emplace();
      for (int32_t d = 0; d < o.rank; ++d) {
        const std::string* sym = symbols.name(o.dims[d]);
        if (o.dims[d] < -1 && !sym) {
          r.ok = false;
          r.error = "the shape function wrote dimension " + std::to_string(o.dims[d]) + " for output " +
                    std::to_string(k) + ", which is no input's symbolic dimension";
          return r;
        }
        t.shape->push_back(o.dims[d] >= 0 ? Dim::known(o.dims[d]) : sym ? Dim::symbolic(*sym) : Dim{});
      }
    }
    r.outputs[k] = std::move(t);
  }
  return r;
}

void run_kernel(KernelContext& ctx) {
  const KernelDef* def = ctx.kernel_def();
  if (!def || !def->data) ctx.fail("plugin kernel called without its registration entry");
  const Entry& e = *static_cast<const Entry*>(def->data);
  const std::string who = e.info.origin() + ", " + op_name(e);
  const size_t nin = ctx.input_count(), nout = ctx.output_count();
  auto within = [](size_t n, int lo, int hi) { return n >= static_cast<size_t>(lo) && n <= static_cast<size_t>(hi); };
  if (!within(nin, e.info.min_inputs, e.info.max_inputs) || !within(nout, e.info.min_outputs, e.info.max_outputs))
    ctx.fail(who + ": the node has " + std::to_string(nin) + " inputs and " + std::to_string(nout) +
             " outputs, outside what the kernel takes");

  std::vector<TypeInfo> types(nin);
  std::vector<const TypeInfo*> type_ptrs(nin, nullptr);
  std::vector<onnxscope_tensor> ins(nin, onnxscope_tensor{ONNXSCOPE_DTYPE_UNDEFINED, 0, nullptr, 0, nullptr});
  for (size_t i = 0; i < nin; ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || v->is_none()) continue;
    if (!v->is_tensor()) ctx.fail(who + ": input " + std::to_string(i) + " is " + v->describe() + "; plugin kernels take tensors");
    const Tensor& t = v->tensor();
    if (t.is_string()) ctx.fail(who + ": input " + std::to_string(i) + " is a string tensor, which the plugin ABI cannot pass");
    if (t.rank() > ONNXSCOPE_PLUGIN_MAX_RANK)
      ctx.fail(who + ": input " + std::to_string(i) + " has rank " + std::to_string(t.rank()) + ", more than the ABI's " +
               std::to_string(ONNXSCOPE_PLUGIN_MAX_RANK));
    ins[i] = onnxscope_tensor{static_cast<int32_t>(t.dtype()), static_cast<int32_t>(t.rank()), t.shape().data(),
                              t.element_count(), const_cast<std::byte*>(t.raw())};
    std::vector<Dim> dims;
    for (int64_t d : t.shape()) dims.push_back(Dim::known(d));
    types[i] = TypeInfo::tensor(t.dtype(), std::move(dims));
    type_ptrs[i] = &types[i];
  }

  // Output shapes come from the shape function on the concrete inputs.
  PluginShapeResult shapes = call_shape_fn(e, ctx.node(), ctx.opset_version(), type_ptrs);
  if (!shapes.ok) ctx.fail(who + ": the shape function rejected the inputs: " + shapes.error);
  std::vector<onnxscope_tensor> outs(nout);
  std::vector<Tensor*> out_tensors(nout, nullptr);
  for (size_t k = 0; k < nout; ++k) {
    const TypeInfo& t = shapes.outputs[k];
    bool known = t.is_tensor() && t.elem != DataType::Undefined && t.shape;
    Shape shape;
    if (known)
      for (const Dim& d : *t.shape) {
        known = known && d.is_known();
        shape.push_back(d.value);
      }
    if (!known)
      ctx.fail(who + ": the shape function left output " + std::to_string(k) + " as " + t.to_string() +
               " for concrete inputs (it must give the element type and every dimension)");
    Tensor& out = ctx.allocate_output(k, t.elem, std::move(shape));
    out_tensors[k] = &out;
    outs[k] = onnxscope_tensor{static_cast<int32_t>(out.dtype()), static_cast<int32_t>(out.rank()), out.shape().data(),
                               out.element_count(), out.mutable_raw()};
  }

  char error[1024] = {};
  onnxscope_node handle = node_handle(ctx.node(), ctx.opset_version());
  onnxscope_kernel_call call{&kHost, &handle, e.desc.user_data, ins.data(), nin, outs.data(), nout, error, sizeof error};
  int status = ONNXSCOPE_ERROR;
  try {
    status = e.desc.cpu(&call);
  } catch (...) {
    ctx.fail(who + ": the kernel threw a C++ exception across the C ABI");
  }
  if (status != ONNXSCOPE_OK) ctx.fail(who + ": kernel failed: " + message_of(error, sizeof error, status));
  // A plugin may write any byte into a bool output: the rest of the run sees 0 or 1.
  for (Tensor* t : out_tensors)
    if (t) normalize_bool_bytes(*t);
}

}  // namespace onnxscope::plugin
