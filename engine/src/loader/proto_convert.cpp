#include "loader/proto_convert.h"

#include "loader/function_body.h"

#include <cstring>

namespace onnxscope::detail {
namespace {

[[noreturn]] void fail(const Location& where, std::string code, std::string message, std::string expected = {}) {
  throw Error(Diagnostic{Severity::Error, std::move(code), where, std::move(message), std::move(expected)});
}

std::vector<StringPair> pairs_from(const google::protobuf::RepeatedPtrField<onnx::StringStringEntryProto>& in) {
  std::vector<StringPair> out;
  out.reserve(static_cast<size_t>(in.size()));
  for (const auto& e : in) out.push_back({e.key(), e.value()});
  return out;
}

// Copies a typed repeated field into raw little-endian storage, narrowing
// each value to the element width (int32_data carries int8/uint16/fp16 bits...).
template <typename Out, typename Field>
std::shared_ptr<Buffer> pack_as(const Field& field, uint64_t count) {
  auto buf = make_owned_buffer(static_cast<size_t>(count * sizeof(Out)));
  auto* dst = buf->mutable_data();
  for (uint64_t i = 0; i < count; ++i) {
    Out v = static_cast<Out>(field.Get(static_cast<int>(i)));
    std::memcpy(dst + i * sizeof(Out), &v, sizeof(Out));
  }
  return buf;
}

std::string data_field_name(const onnx::TensorProto& p) {
  if (p.float_data_size()) return "float_data";
  if (p.int32_data_size()) return "int32_data";
  if (p.int64_data_size()) return "int64_data";
  if (p.double_data_size()) return "double_data";
  if (p.uint64_data_size()) return "uint64_data";
  if (p.string_data_size()) return "string_data";
  return "raw_data";
}

}  // namespace

namespace {
Tensor tensor_from_proto_unchecked(onnx::TensorProto& p, ConvertContext& ctx, const Location& where);
}  // namespace

Tensor tensor_from_proto(onnx::TensorProto& p, ConvertContext& ctx, const Location& where) {
  Tensor t = tensor_from_proto_unchecked(p, ctx, where);
  if (const uint64_t odd = normalize_bool_bytes(t); odd && ctx.diags)
    ctx.diags->warning("bool-bytes", where,
                       std::to_string(odd) + " of " + std::to_string(t.element_count()) + " bool bytes of tensor '" +
                           p.name() + "' are neither 0 nor 1; they are read as true (as numpy and ONNX Runtime read them)");
  return t;
}

namespace {
Tensor tensor_from_proto_unchecked(onnx::TensorProto& p, ConvertContext& ctx, const Location& where) {
  if (!p.has_data_type() || !is_known_dtype(p.data_type()))
    fail(where, "unknown-data-type",
         "tensor has " + (p.has_data_type() ? "unknown data_type " + std::to_string(p.data_type()) : std::string("no data_type")),
         "a TensorProto.DataType value 1.." + std::to_string(kMaxDataType));
  const auto type = static_cast<DataType>(p.data_type());
  Shape shape(p.dims().begin(), p.dims().end());
  for (int64_t d : shape)
    if (d < 0) fail(where, "negative-dim", "tensor has negative dimension in shape " + shape_to_string(shape));
  auto count = checked_element_count(shape);
  if (!count) fail(where, "element-count-overflow", "tensor shape " + shape_to_string(shape) + " has more elements than fit in 64 bits");
  if (p.has_segment()) fail(where, "tensor-segment", "segmented tensors (TensorProto.segment) are not supported");

  const bool external = p.data_location() == onnx::TensorProto::EXTERNAL;
  if (external != (p.external_data_size() > 0))
    fail(where, "external-data-location",
         external ? "tensor says data_location=EXTERNAL but has no external_data entries"
                  : "tensor has external_data entries but data_location is not EXTERNAL");

  if (type == DataType::String) {
    if (external || p.has_raw_data())
      fail(where, "string-tensor-data", "string tensors must use string_data, not raw_data or external data");
    if (static_cast<uint64_t>(p.string_data_size()) != *count)
      fail(where, "tensor-data-size",
           "string tensor of shape " + shape_to_string(shape) + " has " + std::to_string(p.string_data_size()) + " strings",
           std::to_string(*count));
    std::vector<std::string> strings(p.string_data().begin(), p.string_data().end());
    return Tensor::from_strings(std::move(shape), std::move(strings));
  }

  auto bytes = storage_bytes(type, *count);
  if (!bytes || *bytes > uint64_t(SIZE_MAX))
    fail(where, "element-count-overflow", "tensor of shape " + shape_to_string(shape) + " is too large to address");
  const std::string size_text = std::to_string(*bytes) + " bytes for " + std::string(dtype_name(type)) + shape_to_string(shape);

  if (external) {
    if (p.has_raw_data() || data_field_name(p) != "raw_data")
      fail(where, "external-data-location", "tensor has both external data and inline data");
    return Tensor::from_buffer(type, std::move(shape), ctx.external->resolve(pairs_from(p.external_data()), *bytes, where));
  }
  if (p.has_raw_data()) {
    if (data_field_name(p) != "raw_data")
      fail(where, "tensor-data-size", "tensor has both raw_data and " + data_field_name(p));
    if (p.raw_data().size() != *bytes)
      fail(where, "raw-data-size", "raw_data holds " + std::to_string(p.raw_data().size()) + " bytes", size_text);
    std::string* raw = p.release_raw_data();
    std::string owned = std::move(*raw);
    delete raw;
    return Tensor::from_buffer(type, std::move(shape), make_string_buffer(std::move(owned)));
  }

  // Typed fields. Which field a type uses, and how many values it holds.
  const auto& info = dtype_info(type);
  auto expect_field = [&](uint64_t have, const char* field, uint64_t want) {
    if (have != want)
      fail(where, "tensor-data-size",
           std::string(field) + " holds " + std::to_string(have) + " values for " + std::string(dtype_name(type)) +
               shape_to_string(shape),
           std::to_string(want) + " values");
  };
  const std::string used = data_field_name(p);
  auto wrong_field = [&](const char* want) {
    if (used != want && !(*count == 0 && used == "raw_data"))
      fail(where, "tensor-data-field",
           std::string(dtype_name(type)) + " tensor stores its values in " + used, want);
  };
  std::shared_ptr<Buffer> buf;
  switch (type) {
    case DataType::Float:
    case DataType::Complex64: {
      wrong_field("float_data");
      uint64_t n = *count * (type == DataType::Complex64 ? 2 : 1);
      expect_field(static_cast<uint64_t>(p.float_data_size()), "float_data", n);
      buf = pack_as<float>(p.float_data(), n);
      break;
    }
    case DataType::Double:
    case DataType::Complex128: {
      wrong_field("double_data");
      uint64_t n = *count * (type == DataType::Complex128 ? 2 : 1);
      expect_field(static_cast<uint64_t>(p.double_data_size()), "double_data", n);
      buf = pack_as<double>(p.double_data(), n);
      break;
    }
    case DataType::Int64:
      wrong_field("int64_data");
      expect_field(static_cast<uint64_t>(p.int64_data_size()), "int64_data", *count);
      buf = pack_as<int64_t>(p.int64_data(), *count);
      break;
    case DataType::Uint32:
      wrong_field("uint64_data");
      expect_field(static_cast<uint64_t>(p.uint64_data_size()), "uint64_data", *count);
      buf = pack_as<uint32_t>(p.uint64_data(), *count);
      break;
    case DataType::Uint64:
      wrong_field("uint64_data");
      expect_field(static_cast<uint64_t>(p.uint64_data_size()), "uint64_data", *count);
      buf = pack_as<uint64_t>(p.uint64_data(), *count);
      break;
    default: {
      // int32_data: one element per entry for 8/16/32-bit types and the 6-bit
      // floats; one packed byte per entry for the 4- and 2-bit types.
      wrong_field("int32_data");
      const uint64_t have = static_cast<uint64_t>(p.int32_data_size());
      if (info.bits == 4 || info.bits == 2) {
        expect_field(have, "int32_data", *bytes);
        buf = pack_as<uint8_t>(p.int32_data(), *bytes);
      } else if (info.bits == 6) {
        expect_field(have, "int32_data", *count);
        buf = make_owned_buffer(static_cast<size_t>(*bytes));
        for (uint64_t i = 0; i < *count; ++i)
          set_packed_element_bits(type, buf->mutable_data(), i, static_cast<uint8_t>(p.int32_data(static_cast<int>(i))));
      } else if (info.bits == 8) {
        expect_field(have, "int32_data", *count);
        buf = pack_as<uint8_t>(p.int32_data(), *count);
      } else if (info.bits == 16) {
        expect_field(have, "int32_data", *count);
        buf = pack_as<uint16_t>(p.int32_data(), *count);
      } else {
        expect_field(have, "int32_data", *count);
        buf = pack_as<int32_t>(p.int32_data(), *count);
      }
    }
  }
  return Tensor::from_buffer(type, std::move(shape), std::move(buf));
}
}  // namespace

TypeInfo type_from_proto(const onnx::TypeProto& p, ConvertContext& ctx, const Location& where) {
  auto elem_of = [&](int32_t v, const char* what) {
    if (v == 0) return DataType::Undefined;  // allowed: "unknown"
    if (!is_known_dtype(v))
      fail(where, "unknown-data-type", std::string(what) + " has unknown element type " + std::to_string(v),
           "a TensorProto.DataType value");
    return static_cast<DataType>(v);
  };
  auto shape_of = [&](bool has, const onnx::TensorShapeProto& s) -> std::optional<std::vector<Dim>> {
    if (!has) return std::nullopt;
    std::vector<Dim> dims;
    for (const auto& d : s.dim()) {
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          fail(where, "negative-dim", "declared shape has negative dimension " + std::to_string(d.dim_value()));
        dims.push_back(Dim::known(d.dim_value()));
      } else {
        dims.push_back(Dim::symbolic(d.dim_param()));
      }
    }
    return dims;
  };
  TypeInfo t;
  switch (p.value_case()) {
    case onnx::TypeProto::kTensorType:
      t.kind = TypeInfo::Kind::Tensor;
      t.elem = elem_of(p.tensor_type().elem_type(), "tensor type");
      t.shape = shape_of(p.tensor_type().has_shape(), p.tensor_type().shape());
      break;
    case onnx::TypeProto::kSparseTensorType:
      t.kind = TypeInfo::Kind::SparseTensor;
      t.elem = elem_of(p.sparse_tensor_type().elem_type(), "sparse tensor type");
      t.shape = shape_of(p.sparse_tensor_type().has_shape(), p.sparse_tensor_type().shape());
      break;
    case onnx::TypeProto::kSequenceType:
      t.kind = TypeInfo::Kind::Sequence;
      if (p.sequence_type().has_elem_type())
        t.inner = std::make_shared<TypeInfo>(type_from_proto(p.sequence_type().elem_type(), ctx, where));
      break;
    case onnx::TypeProto::kOptionalType:
      t.kind = TypeInfo::Kind::Optional;
      if (p.optional_type().has_elem_type())
        t.inner = std::make_shared<TypeInfo>(type_from_proto(p.optional_type().elem_type(), ctx, where));
      break;
    case onnx::TypeProto::kMapType:
      t.kind = TypeInfo::Kind::Map;
      t.map_key = elem_of(p.map_type().key_type(), "map key");
      if (p.map_type().has_value_type())
        t.inner = std::make_shared<TypeInfo>(type_from_proto(p.map_type().value_type(), ctx, where));
      break;
    case onnx::TypeProto::kOpaqueType:
      t.kind = TypeInfo::Kind::Opaque;
      t.opaque_domain = p.opaque_type().domain();
      t.opaque_name = p.opaque_type().name();
      break;
    default:
      break;
  }
  return t;
}

namespace {

struct Converter {
  ConvertContext& ctx;

  // Runs one conversion step; a failure becomes a diagnostic and loading goes
  // on, so one bad tensor does not hide the rest of the findings.
  template <typename F>
  bool guarded(F&& f) {
    try {
      f();
      return true;
    } catch (const Error& e) {
      ctx.diags->add(e.diagnostic());
    } catch (const std::exception& e) {
      ctx.diags->error("internal", Location{ctx.file}, e.what());
    }
    return false;
  }

  ValueInfo value_info(const onnx::ValueInfoProto& p, const Location& base) {
    ValueInfo v;
    v.name = p.name();
    v.doc = p.doc_string();
    Location where = base;
    where.value = p.name();
    if (p.has_type()) guarded([&] { v.type = type_from_proto(p.type(), ctx, where); });
    return v;
  }

  SparseTensor sparse(onnx::SparseTensorProto& p, const Location& where) {
    SparseTensor s;
    s.dims.assign(p.dims().begin(), p.dims().end());
    s.values = tensor_from_proto(*p.mutable_values(), ctx, where);
    s.indices = tensor_from_proto(*p.mutable_indices(), ctx, where);
    auto dense = checked_element_count(s.dims);
    if (!dense) fail(where, "negative-dim", "sparse tensor has a negative or overflowing dense shape " + shape_to_string(s.dims));
    if (s.values.rank() != 1)
      fail(where, "sparse-tensor", "sparse tensor values must be 1-D, got " + shape_to_string(s.values.shape()));
    if (s.indices.dtype() != DataType::Int64)
      fail(where, "sparse-tensor", "sparse tensor indices must be int64, got " + std::string(dtype_name(s.indices.dtype())));
    const uint64_t nnz = s.values.element_count();
    const bool linear = s.indices.rank() == 1;
    if (!(linear && s.indices.shape()[0] == static_cast<int64_t>(nnz)) &&
        !(s.indices.rank() == 2 && s.indices.shape()[0] == static_cast<int64_t>(nnz) &&
          s.indices.shape()[1] == static_cast<int64_t>(s.dims.size())))
      fail(where, "sparse-tensor",
           "sparse tensor indices have shape " + shape_to_string(s.indices.shape()) + " for " + std::to_string(nnz) +
               " values of rank " + std::to_string(s.dims.size()),
           "[NNZ] or [NNZ, rank]");
    // Every index must land inside the dense shape (engines densify with it).
    for (uint64_t k = 0; k < nnz; ++k) {
      if (linear) {
        int64_t idx = s.indices.element_as_int64(k);
        if (idx < 0 || static_cast<uint64_t>(idx) >= *dense)
          fail(where, "sparse-index", "sparse tensor index " + std::to_string(idx) + " is outside the dense size " + std::to_string(*dense));
      } else {
        for (size_t d = 0; d < s.dims.size(); ++d) {
          int64_t idx = s.indices.element_as_int64(k * s.dims.size() + d);
          if (idx < 0 || idx >= s.dims[d])
            fail(where, "sparse-index", "sparse tensor index " + std::to_string(idx) + " is outside dim " + std::to_string(d) + " of size " + std::to_string(s.dims[d]));
        }
      }
    }
    return s;
  }

  Attribute attribute(onnx::AttributeProto& p, const Location& base, const std::string& graph_path, int depth) {
    Attribute a;
    a.name = p.name();
    a.ref_attr_name = p.ref_attr_name();
    a.doc = p.doc_string();
    Location where = base;
    where.value = p.name();
    int t = p.type();
    if (!p.has_type() || t == 0) {
      // IR < 2 models may omit the discriminator: take the one field that is set.
      if (p.has_f()) t = 1;
      else if (p.has_i()) t = 2;
      else if (p.has_s()) t = 3;
      else if (p.has_t()) t = 4;
      else if (p.has_g()) t = 5;
      else if (p.floats_size()) t = 6;
      else if (p.ints_size()) t = 7;
      else if (p.strings_size()) t = 8;
      else if (p.tensors_size()) t = 9;
      else if (p.graphs_size()) t = 10;
    }
    if (t < 0 || t > 14) {
      ctx.diags->error("attribute-type", where, "attribute has unknown type " + std::to_string(t));
      return a;
    }
    a.type = static_cast<AttrType>(t);
    a.f = p.f();
    a.i = p.i();
    a.s = p.s();
    a.floats.assign(p.floats().begin(), p.floats().end());
    a.ints.assign(p.ints().begin(), p.ints().end());
    a.strings.assign(p.strings().begin(), p.strings().end());
    if (p.has_t()) guarded([&] { a.t = tensor_from_proto(*p.mutable_t(), ctx, where); });
    for (auto& tp : *p.mutable_tensors()) guarded([&] { a.tensors.push_back(tensor_from_proto(tp, ctx, where)); });
    if (p.has_sparse_tensor()) guarded([&] { a.sparse = sparse(*p.mutable_sparse_tensor(), where); });
    for (auto& sp : *p.mutable_sparse_tensors()) guarded([&] { a.sparse_tensors.push_back(sparse(sp, where)); });
    if (p.has_tp()) guarded([&] { a.tp = type_from_proto(p.tp(), ctx, where); });
    for (const auto& tp : p.type_protos()) guarded([&] { a.type_protos.push_back(type_from_proto(tp, ctx, where)); });
    auto sub = [&](onnx::GraphProto& g, const std::string& label) {
      auto out = std::make_shared<Graph>();
      std::string path = graph_path + "/" + base.node + ":" + label;
      if (depth + 1 > ctx.max_subgraph_depth) {
        ctx.diags->error("subgraph-depth", where,
                         "subgraphs nest deeper than " + std::to_string(ctx.max_subgraph_depth) + " levels",
                         "at most " + std::to_string(ctx.max_subgraph_depth));
        return out;
      }
      graph(g, *out, path, depth + 1);
      return out;
    };
    if (p.has_g()) a.g = sub(*p.mutable_g(), a.name);
    for (int k = 0; k < p.graphs_size(); ++k)
      a.graphs.push_back(sub(*p.mutable_graphs(k), a.name + "[" + std::to_string(k) + "]"));
    return a;
  }

  Node node(onnx::NodeProto& p, size_t index, const std::string& graph_path, int depth) {
    Node n;
    n.name = p.name();
    n.op_type = p.op_type();
    n.domain = p.domain() == "ai.onnx" ? "" : p.domain();
    n.overload = p.overload();
    n.inputs.assign(p.input().begin(), p.input().end());
    n.outputs.assign(p.output().begin(), p.output().end());
    n.doc = p.doc_string();
    n.metadata = pairs_from(p.metadata_props());
    Location where{ctx.file, graph_path, static_cast<int64_t>(index), n.label(index), n.op_type, {}};
    for (auto& a : *p.mutable_attribute()) n.attributes.push_back(attribute(a, where, graph_path, depth));
    return n;
  }

  void graph(onnx::GraphProto& p, Graph& g, const std::string& path, int depth) {
    g.name = p.name();
    g.doc = p.doc_string();
    g.metadata = pairs_from(p.metadata_props());
    Location base{ctx.file, path, -1, {}, {}, {}};
    for (const auto& v : p.input()) g.inputs.push_back(value_info(v, base));
    for (const auto& v : p.output()) g.outputs.push_back(value_info(v, base));
    for (const auto& v : p.value_info()) g.value_info.push_back(value_info(v, base));
    for (auto& t : *p.mutable_initializer()) {
      Location where = base;
      where.value = t.name();
      Initializer init{t.name(), {}, t.doc_string()};
      guarded([&] { init.value = tensor_from_proto(t, ctx, where); });
      g.initializers.push_back(std::move(init));
    }
    for (auto& s : *p.mutable_sparse_initializer()) {
      Location where = base;
      where.value = s.values().name();
      guarded([&] {
        g.sparse_initializers.push_back(sparse(s, where));
        g.sparse_initializer_names.push_back(s.values().name());
      });
    }
    g.nodes.reserve(static_cast<size_t>(p.node_size()));
    for (int i = 0; i < p.node_size(); ++i) g.nodes.push_back(node(*p.mutable_node(i), static_cast<size_t>(i), path, depth));
  }

  void function(onnx::FunctionProto& p, Function& f) {
    f.name = p.name();
    f.domain = p.domain() == "ai.onnx" ? "" : p.domain();
    f.overload = p.overload();
    f.inputs.assign(p.input().begin(), p.input().end());
    f.outputs.assign(p.output().begin(), p.output().end());
    f.attributes.assign(p.attribute().begin(), p.attribute().end());
    f.doc = p.doc_string();
    f.metadata = pairs_from(p.metadata_props());
    for (const auto& o : p.opset_import()) f.opset_imports.push_back({o.domain() == "ai.onnx" ? "" : o.domain(), o.version()});
    std::string path = "function " + std::string(domain_display_name(f.domain)) + "::" + f.name;
    Location base{ctx.file, path, -1, {}, {}, {}};
    for (auto& a : *p.mutable_attribute_proto()) f.attribute_defaults.push_back(attribute(a, base, path, 0));
    for (const auto& v : p.value_info()) f.value_info.push_back(value_info(v, base));
    for (int i = 0; i < p.node_size(); ++i) f.nodes.push_back(node(*p.mutable_node(i), static_cast<size_t>(i), path, 0));
  }
};

}  // namespace

void model_from_proto(onnx::ModelProto& p, Model& m, ConvertContext& ctx) {
  m.ir_version = p.ir_version();
  for (const auto& o : p.opset_import()) m.opset_imports.push_back({o.domain() == "ai.onnx" ? "" : o.domain(), o.version()});
  m.producer_name = p.producer_name();
  m.producer_version = p.producer_version();
  m.domain = p.domain();
  m.model_version = p.model_version();
  m.doc = p.doc_string();
  m.metadata = pairs_from(p.metadata_props());
  Converter c{ctx};
  c.graph(*p.mutable_graph(), m.graph, "main", 0);
  for (auto& f : *p.mutable_functions()) {
    m.functions.emplace_back();
    c.function(f, m.functions.back());
  }
  if (p.training_info_size() > 0)
    ctx.diags->info("training-info", Location{ctx.file},
                    std::to_string(p.training_info_size()) + " training_info entries are kept out of the inference graph");
}

std::shared_ptr<const Function> parse_function_proto(const unsigned char* data, size_t size, const std::string& label) {
  onnx::FunctionProto p;
  if (!p.ParseFromArray(data, static_cast<int>(size)))
    throw Error(Diagnostic{Severity::Error, "function-body", Location{label}, "function body is not a valid FunctionProto", {}});
  ExternalDataResolver none({}, false);
  Diagnostics diags;
  ConvertContext ctx{label, &none, &diags, 32};
  auto f = std::make_shared<Function>();
  Converter{ctx}.function(p, *f);
  if (diags.has_errors()) throw Error(diags.items().front());
  return f;
}

}  // namespace onnxscope::detail
