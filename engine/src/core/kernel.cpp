#include "onnxscope/kernel.h"

namespace onnxscope {

void KernelRegistry::add(KernelDef def) { defs_.push_back(std::move(def)); }

void KernelRegistry::add_all(const KernelRegistry& other) {
  for (const auto& d : other.defs_) defs_.push_back(d);
}

std::vector<const KernelDef*> KernelRegistry::candidates(std::string_view domain, std::string_view op_type,
                                                         int64_t opset_version) const {
  std::vector<const KernelDef*> out;
  for (const auto& d : defs_)
    if (d.op_type == op_type && (d.domain == domain || (is_default_domain(d.domain) && is_default_domain(domain))) &&
        opset_version >= d.since_version && opset_version <= d.until_version)
      out.push_back(&d);
  return out;
}

bool KernelRegistry::has(std::string_view domain, std::string_view op_type, int64_t opset_version) const {
  return !candidates(domain, op_type, opset_version).empty();
}

bool KernelContext::has_input(size_t i) const {
  const Value* v = input_value(i);
  return v && !v->is_none();
}

const Tensor& KernelContext::input(size_t i) const {
  const Value* v = input_value(i);
  if (!v || v->is_none()) fail("input " + std::to_string(i) + " is required but missing");
  if (!v->is_tensor()) fail("input " + std::to_string(i) + " must be a tensor, got " + v->describe());
  return v->tensor();
}

const Tensor* KernelContext::optional_input(size_t i) const {
  const Value* v = input_value(i);
  if (!v || v->is_none()) return nullptr;
  if (!v->is_tensor()) fail("input " + std::to_string(i) + " must be a tensor, got " + v->describe());
  return &v->tensor();
}

Tensor& KernelContext::allocate_output(size_t i, DataType type, Shape shape) {
  auto count = checked_element_count(shape);
  if (!count) fail("output " + std::to_string(i) + " shape " + shape_to_string(shape) + " is negative or overflows");
  uint64_t bytes = type == DataType::String ? *count * sizeof(std::string) : storage_bytes(type, *count).value_or(UINT64_MAX);
  if (bytes > max_tensor_bytes())
    fail("output " + std::to_string(i) + " of shape " + shape_to_string(shape) + " would need " + std::to_string(bytes) +
         " bytes, more than the limit of " + std::to_string(max_tensor_bytes()));
  output(i) = Value(Tensor::zeros(type, std::move(shape)));
  return output(i).tensor();
}

namespace {
const Attribute& typed(const KernelContext& ctx, const Attribute& a, AttrType want) {
  if (a.type != want)
    ctx.fail("attribute '" + a.name + "' is " + std::string(attr_type_name(a.type)) + ", expected " +
             std::string(attr_type_name(want)));
  return a;
}
}  // namespace

int64_t KernelContext::attr_int(std::string_view name, int64_t fallback) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::Int).i : fallback;
}
float KernelContext::attr_float(std::string_view name, float fallback) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::Float).f : fallback;
}
std::string KernelContext::attr_string(std::string_view name, std::string fallback) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::String).s : fallback;
}
std::vector<int64_t> KernelContext::attr_ints(std::string_view name, std::vector<int64_t> fallback) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::Ints).ints : fallback;
}
std::vector<float> KernelContext::attr_floats(std::string_view name, std::vector<float> fallback) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::Floats).floats : fallback;
}
std::vector<std::string> KernelContext::attr_strings(std::string_view name, std::vector<std::string> fallback) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::Strings).strings : fallback;
}
const Tensor* KernelContext::attr_tensor(std::string_view name) const {
  const Attribute* a = attr(name);
  return a ? &typed(*this, *a, AttrType::Tensor).t : nullptr;
}
const Graph* KernelContext::attr_graph(std::string_view name) const {
  const Attribute* a = attr(name);
  return a ? typed(*this, *a, AttrType::Graph).g.get() : nullptr;
}
const Attribute& KernelContext::required_attr(std::string_view name) const {
  const Attribute* a = attr(name);
  if (!a) fail("required attribute '" + std::string(name) + "' is missing");
  return *a;
}

void KernelContext::fail(const std::string& message) const {
  throw Error(Diagnostic{Severity::Error, "kernel", location(), message, {}});
}

}  // namespace onnxscope
