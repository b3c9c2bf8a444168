// onnxscope IR -> ModelProto bytes: for reduced repro models, edited models
// and anything else the tool writes back. Tensors are written as raw_data
// (strings as string_data); external data is inlined.
#include <fstream>

#include "onnx/onnx-ml.pb.h"
#include "onnxscope/proto_io.h"

namespace onnxscope {
namespace {

void set_pairs(google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto>* out, const std::vector<StringPair>& in) {
  for (const auto& kv : in) {
    auto* e = out->Add();
    e->set_key(kv.key);
    e->set_value(kv.value);
  }
}

void write_tensor(const Tensor& t, const std::string& name, onnx::TensorProto* p) {
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.is_string())
    for (const auto& s : t.strings()) p->add_string_data(s);
  else if (t.byte_size())
    p->set_raw_data(std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()));
}

void write_type(const TypeInfo& t, onnx::TypeProto* p) {
  auto shape = [](const std::optional<std::vector<Dim>>& s, onnx::TensorShapeProto* out) {
    for (const Dim& d : *s) {
      auto* dim = out->add_dim();
      if (d.is_known()) dim->set_dim_value(d.value);
      else if (!d.param.empty()) dim->set_dim_param(d.param);
    }
  };
  switch (t.kind) {
    case TypeInfo::Kind::Tensor:
      p->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t.elem));
      if (t.shape) shape(t.shape, p->mutable_tensor_type()->mutable_shape());
      break;
    case TypeInfo::Kind::SparseTensor:
      p->mutable_sparse_tensor_type()->set_elem_type(static_cast<int32_t>(t.elem));
      if (t.shape) shape(t.shape, p->mutable_sparse_tensor_type()->mutable_shape());
      break;
    case TypeInfo::Kind::Sequence:
      if (t.inner) write_type(*t.inner, p->mutable_sequence_type()->mutable_elem_type());
      else p->mutable_sequence_type();
      break;
    case TypeInfo::Kind::Optional:
      if (t.inner) write_type(*t.inner, p->mutable_optional_type()->mutable_elem_type());
      else p->mutable_optional_type();
      break;
    case TypeInfo::Kind::Map:
      p->mutable_map_type()->set_key_type(static_cast<int32_t>(t.map_key));
      if (t.inner) write_type(*t.inner, p->mutable_map_type()->mutable_value_type());
      break;
    case TypeInfo::Kind::Opaque:
      p->mutable_opaque_type()->set_domain(t.opaque_domain);
      p->mutable_opaque_type()->set_name(t.opaque_name);
      break;
    case TypeInfo::Kind::Unknown:
      break;
  }
}

void write_value_info(const ValueInfo& v, onnx::ValueInfoProto* p) {
  p->set_name(v.name);
  if (!v.doc.empty()) p->set_doc_string(v.doc);
  if (v.type.kind != TypeInfo::Kind::Unknown) write_type(v.type, p->mutable_type());
}

void write_graph(const Graph& g, onnx::GraphProto* p);

void write_sparse(const SparseTensor& s, const std::string& name, onnx::SparseTensorProto* p) {
  write_tensor(s.values, name, p->mutable_values());
  write_tensor(s.indices, "", p->mutable_indices());
  for (int64_t d : s.dims) p->add_dims(d);
}

void write_attribute(const Attribute& a, onnx::AttributeProto* p) {
  p->set_name(a.name);
  p->set_type(static_cast<onnx::AttributeProto::AttributeType>(a.type));
  if (!a.ref_attr_name.empty()) p->set_ref_attr_name(a.ref_attr_name);
  if (!a.doc.empty()) p->set_doc_string(a.doc);
  switch (a.type) {
    case AttrType::Float: p->set_f(a.f); break;
    case AttrType::Int: p->set_i(a.i); break;
    case AttrType::String: p->set_s(a.s); break;
    case AttrType::Tensor: write_tensor(a.t, "", p->mutable_t()); break;
    case AttrType::Graph: if (a.g) write_graph(*a.g, p->mutable_g()); break;
    case AttrType::SparseTensor: write_sparse(a.sparse, "", p->mutable_sparse_tensor()); break;
    case AttrType::TypeProto: write_type(a.tp, p->mutable_tp()); break;
    case AttrType::Floats: for (float f : a.floats) p->add_floats(f); break;
    case AttrType::Ints: for (int64_t i : a.ints) p->add_ints(i); break;
    case AttrType::Strings: for (const auto& s : a.strings) p->add_strings(s); break;
    case AttrType::Tensors: for (const auto& t : a.tensors) write_tensor(t, "", p->add_tensors()); break;
    case AttrType::Graphs:
      for (const auto& g : a.graphs)
        if (g) write_graph(*g, p->add_graphs());
      break;
    case AttrType::SparseTensors: for (const auto& s : a.sparse_tensors) write_sparse(s, "", p->add_sparse_tensors()); break;
    case AttrType::TypeProtos: for (const auto& t : a.type_protos) write_type(t, p->add_type_protos()); break;
    case AttrType::Undefined: break;
  }
}

void write_node(const Node& n, onnx::NodeProto* p) {
  p->set_name(n.name);
  p->set_op_type(n.op_type);
  if (!n.domain.empty()) p->set_domain(n.domain);
  if (!n.overload.empty()) p->set_overload(n.overload);
  for (const auto& i : n.inputs) p->add_input(i);
  for (const auto& o : n.outputs) p->add_output(o);
  for (const auto& a : n.attributes) write_attribute(a, p->add_attribute());
  if (!n.doc.empty()) p->set_doc_string(n.doc);
  set_pairs(p->mutable_metadata_props(), n.metadata);
}

void write_graph(const Graph& g, onnx::GraphProto* p) {
  p->set_name(g.name);
  if (!g.doc.empty()) p->set_doc_string(g.doc);
  for (const auto& v : g.inputs) write_value_info(v, p->add_input());
  for (const auto& v : g.outputs) write_value_info(v, p->add_output());
  for (const auto& v : g.value_info) write_value_info(v, p->add_value_info());
  for (const auto& i : g.initializers) write_tensor(i.value, i.name, p->add_initializer());
  for (size_t k = 0; k < g.sparse_initializers.size(); ++k)
    write_sparse(g.sparse_initializers[k], g.sparse_initializer_names[k], p->add_sparse_initializer());
  for (const auto& n : g.nodes) write_node(n, p->add_node());
  set_pairs(p->mutable_metadata_props(), g.metadata);
}

}  // namespace

std::string tensor_to_proto_bytes(const Tensor& t, const std::string& name) {
  onnx::TensorProto p;
  write_tensor(t, name, &p);
  return p.SerializeAsString();
}

std::string model_to_bytes(const Model& m) {
  onnx::ModelProto p;
  p.set_ir_version(m.ir_version);
  for (const auto& o : m.opset_imports) {
    auto* imp = p.add_opset_import();
    imp->set_domain(o.domain);
    imp->set_version(o.version);
  }
  p.set_producer_name(m.producer_name);
  p.set_producer_version(m.producer_version);
  p.set_domain(m.domain);
  p.set_model_version(m.model_version);
  p.set_doc_string(m.doc);
  set_pairs(p.mutable_metadata_props(), m.metadata);
  write_graph(m.graph, p.mutable_graph());
  for (const auto& f : m.functions) {
    auto* fp = p.add_functions();
    fp->set_name(f.name);
    fp->set_domain(f.domain);
    if (!f.overload.empty()) fp->set_overload(f.overload);
    for (const auto& i : f.inputs) fp->add_input(i);
    for (const auto& o : f.outputs) fp->add_output(o);
    for (const auto& a : f.attributes) fp->add_attribute(a);
    for (const auto& a : f.attribute_defaults) write_attribute(a, fp->add_attribute_proto());
    for (const auto& n : f.nodes) write_node(n, fp->add_node());
    for (const auto& o : f.opset_imports) {
      auto* imp = fp->add_opset_import();
      imp->set_domain(o.domain);
      imp->set_version(o.version);
    }
    for (const auto& v : f.value_info) write_value_info(v, fp->add_value_info());
    if (!f.doc.empty()) fp->set_doc_string(f.doc);
    set_pairs(fp->mutable_metadata_props(), f.metadata);
  }
  std::string out;
  if (!p.SerializeToString(&out)) throw Error(Diagnostic{Severity::Error, "model-too-large", Location{m.source}, "the model does not fit in a protobuf message (2 GiB)", {}});
  return out;
}

void save_model(const Model& m, const std::filesystem::path& path) {
  std::string bytes = model_to_bytes(m);
  std::ofstream f(path, std::ios::binary);
  if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw Error(Diagnostic{Severity::Error, "cannot-write", Location{path.string()}, "cannot write the model file", {}});
}

}  // namespace onnxscope
