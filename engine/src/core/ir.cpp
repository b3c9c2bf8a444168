#include "onnxscope/ir.h"

namespace onnxscope {

TypeInfo TypeInfo::tensor(DataType t, std::optional<std::vector<Dim>> shape) {
  TypeInfo ti;
  ti.kind = Kind::Tensor;
  ti.elem = t;
  ti.shape = std::move(shape);
  return ti;
}

namespace {
std::string shape_text(const std::optional<std::vector<Dim>>& shape) {
  if (!shape) return "[...]";  // rank unknown
  std::string s = "[";
  for (size_t i = 0; i < shape->size(); ++i) {
    if (i) s += ",";
    const Dim& d = (*shape)[i];
    s += d.is_known() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param);
  }
  return s + "]";
}
std::string inner_text(const std::shared_ptr<TypeInfo>& t) { return t ? t->to_string() : "?"; }
}  // namespace

std::string TypeInfo::to_string() const {
  switch (kind) {
    case Kind::Unknown: return "?";
    case Kind::Tensor: return std::string(dtype_name(elem)) + shape_text(shape);
    case Kind::SparseTensor: return "sparse(" + std::string(dtype_name(elem)) + shape_text(shape) + ")";
    case Kind::Sequence: return "seq(" + inner_text(inner) + ")";
    case Kind::Optional: return "optional(" + inner_text(inner) + ")";
    case Kind::Map: return "map(" + std::string(dtype_name(map_key)) + "," + inner_text(inner) + ")";
    case Kind::Opaque: return "opaque(" + opaque_domain + "," + opaque_name + ")";
  }
  return "?";
}

bool TypeInfo::operator==(const TypeInfo& o) const {
  if (kind != o.kind || elem != o.elem || shape != o.shape || map_key != o.map_key ||
      opaque_domain != o.opaque_domain || opaque_name != o.opaque_name)
    return false;
  if (!inner || !o.inner) return !inner && !o.inner;
  return *inner == *o.inner;
}

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Undefined: return "undefined";
    case AttrType::Float: return "float";
    case AttrType::Int: return "int";
    case AttrType::String: return "string";
    case AttrType::Tensor: return "tensor";
    case AttrType::Graph: return "graph";
    case AttrType::Floats: return "floats";
    case AttrType::Ints: return "ints";
    case AttrType::Strings: return "strings";
    case AttrType::Tensors: return "tensors";
    case AttrType::Graphs: return "graphs";
    case AttrType::SparseTensor: return "sparse_tensor";
    case AttrType::SparseTensors: return "sparse_tensors";
    case AttrType::TypeProto: return "type_proto";
    case AttrType::TypeProtos: return "type_protos";
  }
  return "unknown";
}

const Attribute* Node::attribute(std::string_view n) const {
  for (const auto& a : attributes)
    if (a.name == n) return &a;
  return nullptr;
}

std::string Node::label(size_t index) const {
  if (!name.empty()) return name;
  return op_type + "#" + std::to_string(index);
}

const Initializer* Graph::initializer(std::string_view n) const {
  for (const auto& i : initializers)
    if (i.name == n) return &i;
  return nullptr;
}

const TypeInfo* Graph::type_of(std::string_view n) const {
  for (const auto* list : {&inputs, &outputs, &value_info})
    for (const auto& v : *list)
      if (v.name == n && v.type.kind != TypeInfo::Kind::Unknown) return &v.type;
  return nullptr;
}

int64_t Model::opset_version(std::string_view d) const {
  for (const auto& o : opset_imports)
    if (o.domain == d || (is_default_domain(d) && is_default_domain(o.domain))) return o.version;
  return 0;
}

const Function* Model::function(std::string_view d, std::string_view n, std::string_view overload) const {
  for (const auto& f : functions)
    if (f.name == n && f.overload == overload &&
        (f.domain == d || (is_default_domain(d) && is_default_domain(f.domain))))
      return &f;
  return nullptr;
}

std::string_view domain_display_name(std::string_view d) { return d.empty() ? "ai.onnx" : d; }

}  // namespace onnxscope
