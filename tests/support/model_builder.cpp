#include "model_builder.h"

#include <stdexcept>

namespace onnxscope::test {

void set_type(onnx::TypeProto* t, DataType elem, const std::vector<DimSpec>& dims) {
  auto* tt = t->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(elem));
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d)) dim->set_dim_value(std::get<int64_t>(d));
    else if (!std::get<std::string>(d).empty()) dim->set_dim_param(std::get<std::string>(d));
  }
}

onnx::ValueInfoProto make_value(const std::string& name, DataType elem, const std::vector<DimSpec>& dims) {
  onnx::ValueInfoProto v;
  v.set_name(name);
  set_type(v.mutable_type(), elem, dims);
  return v;
}

static onnx::AttributeProto* new_attr(onnx::NodeProto& n, const std::string& name, onnx::AttributeProto::AttributeType t) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(t);
  return a;
}

void attr_int(onnx::NodeProto& n, const std::string& name, int64_t v) { new_attr(n, name, onnx::AttributeProto::INT)->set_i(v); }
void attr_float(onnx::NodeProto& n, const std::string& name, float v) { new_attr(n, name, onnx::AttributeProto::FLOAT)->set_f(v); }
void attr_string(onnx::NodeProto& n, const std::string& name, const std::string& v) {
  new_attr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
void attr_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}
void attr_floats(onnx::NodeProto& n, const std::string& name, const std::vector<float>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::FLOATS);
  for (auto x : v) a->add_floats(x);
}
void attr_strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = new_attr(n, name, onnx::AttributeProto::STRINGS);
  for (const auto& x : v) a->add_strings(x);
}
void attr_tensor(onnx::NodeProto& n, const std::string& name, const onnx::TensorProto& t) {
  *new_attr(n, name, onnx::AttributeProto::TENSOR)->mutable_t() = t;
}
onnx::GraphProto* attr_graph(onnx::NodeProto& n, const std::string& name) {
  auto* g = new_attr(n, name, onnx::AttributeProto::GRAPH)->mutable_g();
  g->set_name(name);
  return g;
}

onnx::TensorProto make_tensor_raw(const std::string& name, DataType t, const std::vector<int64_t>& dims,
                                  const std::string& raw) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(t));
  for (auto d : dims) p.add_dims(d);
  p.set_raw_data(raw);
  return p;
}

onnx::TensorProto make_float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<float>& values) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(DataType::Float));
  for (auto d : dims) p.add_dims(d);
  for (auto v : values) p.add_float_data(v);
  return p;
}

onnx::TensorProto make_int64_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& values) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int32_t>(DataType::Int64));
  for (auto d : dims) p.add_dims(d);
  for (auto v : values) p.add_int64_data(v);
  return p;
}

onnx::NodeProto& add_node(onnx::GraphProto& g, const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs, const std::string& name, const std::string& domain) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  if (!domain.empty()) n->set_domain(domain);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

ModelBuilder::ModelBuilder(int64_t opset, int64_t ir_version) {
  model_.set_ir_version(ir_version);
  model_.set_producer_name("onnxscope-tests");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

ModelBuilder& ModelBuilder::opset(const std::string& domain, int64_t version) {
  for (auto& o : *model_.mutable_opset_import())
    if (o.domain() == domain) {
      o.set_version(version);
      return *this;
    }
  auto* o = model_.add_opset_import();
  o->set_domain(domain);
  o->set_version(version);
  return *this;
}

ModelBuilder& ModelBuilder::input(const std::string& name, DataType t, const std::vector<DimSpec>& dims) {
  *graph().add_input() = make_value(name, t, dims);
  return *this;
}
ModelBuilder& ModelBuilder::output(const std::string& name, DataType t, const std::vector<DimSpec>& dims) {
  *graph().add_output() = make_value(name, t, dims);
  return *this;
}
ModelBuilder& ModelBuilder::output_untyped(const std::string& name) {
  graph().add_output()->set_name(name);
  return *this;
}
ModelBuilder& ModelBuilder::initializer(onnx::TensorProto t) {
  *graph().add_initializer() = std::move(t);
  return *this;
}
onnx::NodeProto& ModelBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                    const std::vector<std::string>& outputs, const std::string& name,
                                    const std::string& domain) {
  return add_node(graph(), op, inputs, outputs, name, domain);
}

std::string ModelBuilder::bytes() const { return model_.SerializeAsString(); }

LoadResult ModelBuilder::load(LoadOptions options) const {
  std::string b = bytes();
  return load_model_bytes({reinterpret_cast<const std::byte*>(b.data()), b.size()}, options, "test.onnx");
}

bool has_code(const LoadResult& r, const std::string& code, Severity s) {
  for (const auto& d : r.diagnostics.items())
    if (d.code == code && d.severity == s) return true;
  return false;
}

std::string dump(const LoadResult& r) {
  std::string s;
  for (const auto& d : r.diagnostics.items()) s += d.to_string() + "\n";
  return s.empty() ? "(no diagnostics)" : s;
}

std::shared_ptr<Model> load_model(const ModelBuilder& b) {
  auto r = b.load();
  if (!r.ok()) throw std::runtime_error("the test's model does not load:\n" + dump(r));
  return std::shared_ptr<Model>(std::move(r.model));
}

std::vector<std::string> op_types(const Model& m) {
  std::vector<std::string> out;
  for (const auto& n : m.graph.nodes) out.push_back(n.op_type);
  return out;
}

}  // namespace onnxscope::test
