// onnxscope IR -> ModelProto bytes: for reduced repro models, edited models
// and anything else the tool writes back. Tensors are written as raw_data
// (strings as string_data); external data is inlined.
#include <climits>
#include <fstream>
#include <vector>

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

// raw: with the bytes of a numeric tensor (save_model writes a weight's bytes itself).
void write_tensor(const Tensor& t, const std::string& name, onnx::TensorProto* p, bool raw = true) {
  p->set_name(name);
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.is_string())
    for (const auto& s : t.strings()) p->add_string_data(s);
  else if (t.byte_size() && raw)
    p->set_raw_data(std::string(reinterpret_cast<const char*>(t.raw()), t.byte_size()));
}

// Whether write_tensor gives the tensor raw_data.
bool has_raw(const Tensor& t) { return !t.is_string() && t.byte_size() > 0; }

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

void write_graph(const Graph& g, onnx::GraphProto* p, bool initializer_bytes = true);

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

void write_graph(const Graph& g, onnx::GraphProto* p, bool initializer_bytes) {
  p->set_name(g.name);
  if (!g.doc.empty()) p->set_doc_string(g.doc);
  for (const auto& v : g.inputs) write_value_info(v, p->add_input());
  for (const auto& v : g.outputs) write_value_info(v, p->add_output());
  for (const auto& v : g.value_info) write_value_info(v, p->add_value_info());
  for (const auto& i : g.initializers) write_tensor(i.value, i.name, p->add_initializer(), initializer_bytes);
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

namespace {

void build_model(const Model& m, onnx::ModelProto& p, bool initializer_bytes = true) {
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
  write_graph(m.graph, p.mutable_graph(), initializer_bytes);
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
}

Error too_large(const Model& m) {
  return Error(Diagnostic{Severity::Error, "model-too-large", Location{m.source}, "the model does not fit in a protobuf message (2 GiB)", {}});
}

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// The tag of a length-delimited field.
void put_field(std::string& out, int field, uint64_t length) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  put_varint(out, length);
}

}  // namespace

std::string model_to_bytes(const Model& m) {
  onnx::ModelProto p;
  build_model(m, p);
  std::string out;
  if (!p.SerializeToString(&out)) throw too_large(m);
  return out;
}

// The same message as model_to_bytes, written without copying the main
// graph's weights twice more: the model and the graph are serialized
// without the initializers' raw_data, and each weight's bytes go from its
// tensor to the file, behind the field header protobuf would have written
// (a field may come in any order; parsers take the initializers after the
// graph's other fields as they take them before).
void save_model(const Model& m, const std::filesystem::path& path) {
  constexpr int kGraph = 7, kInitializer = 5, kRawData = 9;  // onnx.proto's field numbers
  onnx::ModelProto p;
  build_model(m, p, /*initializer_bytes=*/false);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  inits.Swap(p.mutable_graph()->mutable_initializer());
  std::vector<std::string> heads;  // each initializer without its raw_data
  std::vector<std::pair<const std::byte*, uint64_t>> raws;
  uint64_t graph_bytes = p.graph().ByteSizeLong();
  for (int i = 0; i < inits.size(); ++i) {
    const Tensor& value = m.graph.initializers[static_cast<size_t>(i)].value;
    const bool raw = has_raw(value);
    heads.push_back(inits.Get(i).SerializeAsString());
    const uint64_t raw_size = raw ? value.byte_size() : 0;
    raws.emplace_back(raw ? value.raw() : nullptr, raw_size);
    std::string header;
    if (raw) put_field(header, kRawData, raw_size);
    const uint64_t tensor_bytes = heads.back().size() + header.size() + raw_size;
    std::string entry;
    put_field(entry, kInitializer, tensor_bytes);
    graph_bytes += entry.size() + tensor_bytes;
  }
  std::string graph_rest;
  if (!p.graph().SerializeToString(&graph_rest)) throw too_large(m);
  p.clear_graph();
  std::string model_rest;
  if (!p.SerializeToString(&model_rest)) throw too_large(m);
  std::string graph_field;
  put_field(graph_field, kGraph, graph_bytes);
  if (model_rest.size() + graph_field.size() + graph_bytes > uint64_t{INT32_MAX}) throw too_large(m);
  std::ofstream f(path, std::ios::binary);
  auto put = [&](const void* data, uint64_t n) {
    if (f) f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  };
  put(model_rest.data(), model_rest.size());
  put(graph_field.data(), graph_field.size());
  put(graph_rest.data(), graph_rest.size());
  for (size_t i = 0; i < heads.size(); ++i) {
    std::string header;
    std::string raw_header;
    if (raws[i].first) put_field(raw_header, kRawData, raws[i].second);
    put_field(header, kInitializer, heads[i].size() + raw_header.size() + raws[i].second);
    put(header.data(), header.size());
    put(heads[i].data(), heads[i].size());
    put(raw_header.data(), raw_header.size());
    if (raws[i].first) put(raws[i].first, raws[i].second);
  }
  if (!f || !f.flush())
    throw Error(Diagnostic{Severity::Error, "cannot-write", Location{path.string()}, "cannot write the model file", {}});
}

}  // namespace onnxscope
