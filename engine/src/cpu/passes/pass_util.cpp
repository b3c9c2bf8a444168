#include "core/graph_util.h"
#include "cpu/passes/passes.h"

namespace onnxscope::cpu {

namespace {
void rename_in_graph(Graph& g, const std::string& from, const std::string& to) {
  // A subgraph that defines `from` itself shadows the outer name: stop there.
  for (const auto& v : g.inputs)
    if (v.name == from) return;
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == from) in = to;
    for (auto& a : n.attributes) {
      if (a.g) rename_in_graph(*a.g, from, to);
      for (auto& sg : a.graphs)
        if (sg) rename_in_graph(*sg, from, to);
    }
  }
  for (auto& o : g.outputs)
    if (o.name == from) o.name = to;
}
}  // namespace

void rename_uses(Graph& g, const std::string& from, const std::string& to) {
  for (auto& n : g.nodes) {
    for (auto& in : n.inputs)
      if (in == from) in = to;
    for (auto& a : n.attributes) {
      if (a.g) rename_in_graph(*a.g, from, to);
      for (auto& sg : a.graphs)
        if (sg) rename_in_graph(*sg, from, to);
    }
  }
}

std::set<std::string> names_read_by_subgraphs(const Node& n) {
  detail::FreeNames free;
  std::set<std::string> out;
  for (const auto& a : n.attributes) {
    if (a.g)
      for (const auto& name : free.of(*a.g)) out.insert(name);
    for (const auto& sg : a.graphs)
      if (sg)
        for (const auto& name : free.of(*sg)) out.insert(name);
  }
  return out;
}

size_t use_count(const Graph& g, const std::string& name) {
  size_t c = 0;
  for (const auto& n : g.nodes) {
    for (const auto& in : n.inputs) c += in == name;
    if (names_read_by_subgraphs(n).count(name)) ++c;
  }
  for (const auto& o : g.outputs) c += o.name == name;
  return c;
}

}  // namespace onnxscope::cpu

namespace onnxscope::cpu {

GraphIndex::GraphIndex(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (const auto& o : n.outputs)
      if (!o.empty()) producer[o] = i;
    for (const auto& in : n.inputs)
      if (!in.empty()) readers[in].push_back(i);
    for (const auto& a : n.attributes)
      if (a.g || !a.graphs.empty()) {
        for (const auto& name : names_read_by_subgraphs(n)) subgraph_reads.insert(name);
        break;
      }
  }
  for (const auto& o : g.outputs) graph_outputs.insert(o.name);
}

int GraphIndex::producer_index(const std::string& value) const {
  auto it = producer.find(value);
  return it == producer.end() ? -1 : static_cast<int>(it->second);
}

const Node* GraphIndex::producer_of(const Graph& g, const std::string& value) const {
  const int i = producer_index(value);
  return i < 0 ? nullptr : &g.nodes[static_cast<size_t>(i)];
}

size_t GraphIndex::reader_count(const std::string& value) const {
  auto it = readers.find(value);
  return (it == readers.end() ? 0 : it->second.size()) + graph_outputs.count(value) + subgraph_reads.count(value);
}

const Node* GraphIndex::sole_reader(const Graph& g, const std::string& value, const char* op) const {
  auto it = readers.find(value);
  if (it == readers.end() || it->second.size() != 1 || !only_read_by(value, it->second[0])) return nullptr;
  const Node& n = g.nodes[it->second[0]];
  return is_op(n, op) && n.outputs.size() == 1 ? &n : nullptr;
}

bool GraphIndex::only_read_by(const std::string& value, size_t reader) const {
  if (graph_outputs.count(value) || subgraph_reads.count(value)) return false;
  auto it = readers.find(value);
  return it != readers.end() && it->second.size() == 1 && it->second[0] == reader;
}

const Tensor* constant_tensor(const Model& m, const std::string& name) {
  if (name.empty()) return nullptr;
  const Graph& g = m.graph;
  if (const Initializer* init = g.initializer(name)) {
    if (m.ir_version >= 4)
      for (const auto& in : g.inputs)
        if (in.name == name) return nullptr;  // the caller may feed another value
    return &init->value;
  }
  for (const auto& n : g.nodes)
    if (is_op(n, "Constant") && n.outputs.size() == 1 && n.outputs[0] == name) {
      const Attribute* a = n.attribute("value");
      return a && a->type == AttrType::Tensor ? &a->t : nullptr;
    }
  return nullptr;
}

std::optional<double> scalar_constant(const Model& m, const std::string& name) {
  const Tensor* t = constant_tensor(m, name);
  if (!t || t->element_count() != 1 || t->is_string()) return std::nullopt;
  switch (t->dtype()) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16:
    case DataType::Int8: case DataType::Int16: case DataType::Int32: case DataType::Int64:
    case DataType::Uint8: case DataType::Uint16: case DataType::Uint32: case DataType::Uint64:
      return t->element_as_double(0);
    default: return std::nullopt;
  }
}

std::optional<std::vector<int64_t>> int_constant(const Model& m, const std::string& name) {
  const Tensor* t = constant_tensor(m, name);
  if (!t || t->rank() > 1 || (t->dtype() != DataType::Int64 && t->dtype() != DataType::Int32)) return std::nullopt;
  std::vector<int64_t> v(t->element_count());
  for (uint64_t i = 0; i < t->element_count(); ++i) v[i] = t->element_as_int64(i);
  return v;
}

std::optional<TypeInfo> tensor_type(const Graph& g, const std::string& name) {
  if (const TypeInfo* t = g.type_of(name))
    return t->is_tensor() && t->elem != DataType::Undefined ? std::optional<TypeInfo>(*t) : std::nullopt;
  if (const Initializer* init = g.initializer(name)) {  // type_of covers declared values only
    std::vector<Dim> dims;
    for (int64_t d : init->value.shape()) dims.push_back(Dim::known(d));
    return TypeInfo::tensor(init->value.dtype(), std::move(dims));
  }
  return std::nullopt;
}

DataType elem_type(const Graph& g, const std::string& name) {
  auto t = tensor_type(g, name);
  return t ? t->elem : DataType::Undefined;
}

std::optional<Shape> static_shape(const Graph& g, const std::string& name) {
  auto t = tensor_type(g, name);
  if (!t || !t->shape) return std::nullopt;
  Shape s;
  for (const auto& d : *t->shape) {
    if (!d.is_known()) return std::nullopt;
    s.push_back(d.value);
  }
  return s;
}

std::optional<size_t> known_rank(const Graph& g, const std::string& name) {
  auto t = tensor_type(g, name);
  if (!t || !t->shape) return std::nullopt;
  return t->shape->size();
}

bool is_op(const Node& n, const char* op_type) { return n.op_type == op_type && is_default_domain(n.domain); }

std::string unique_node_name(const Graph& g, const std::string& base) {
  std::set<std::string> used;
  for (const auto& n : g.nodes) used.insert(n.name);
  if (!base.empty() && !used.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string s = base + "_" + std::to_string(k);
    if (!used.count(s)) return s;
  }
}

bool is_two_input_add(const Node& n) {
  return (is_op(n, "Add") || is_op(n, "Sum")) && n.inputs.size() == 2 && n.outputs.size() == 1 && !n.outputs[0].empty();
}

FreshNames::FreshNames(const Graph& g) {
  for (const auto& i : g.inputs) used_.insert(i.name);
  for (const auto& o : g.outputs) used_.insert(o.name);
  for (const auto& i : g.initializers) used_.insert(i.name);
  for (const auto& n : g.nodes) {
    used_.insert(n.name);
    used_.insert(n.outputs.begin(), n.outputs.end());
    used_.insert(n.inputs.begin(), n.inputs.end());
  }
}

std::string FreshNames::operator()(const std::string& base) {
  std::string s = base;
  for (int k = 1; used_.count(s); ++k) s = base + "_" + std::to_string(k);
  used_.insert(s);
  return s;
}

std::string unique_value_name(const Graph& g, const std::string& base) {
  std::set<std::string> used;
  for (const auto& n : g.nodes) {
    used.insert(n.inputs.begin(), n.inputs.end());
    used.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const auto& i : g.initializers) used.insert(i.name);
  for (const auto& v : g.inputs) used.insert(v.name);
  for (const auto& v : g.outputs) used.insert(v.name);
  if (!used.count(base)) return base;
  for (int k = 1;; ++k) {
    std::string s = base + "_" + std::to_string(k);
    if (!used.count(s)) return s;
  }
}

Node scale_node(Graph& g, const std::string& base, const std::string& x, float alpha, const std::string& out) {
  const std::string scale = unique_value_name(g, base + "_alpha");
  Tensor t = Tensor::zeros(DataType::Float, {});
  t.mutable_data<float>()[0] = alpha;
  g.initializers.push_back({scale, std::move(t), {}});
  Node mul;
  mul.name = unique_node_name(g, base + "_Scale");
  mul.op_type = "Mul";
  mul.inputs = {x, scale};
  mul.outputs = {out};
  return mul;
}

void add_cpu_opset(Model& m) {
  for (const auto& o : m.opset_imports)
    if (o.domain == kCpuDomain) return;
  m.opset_imports.push_back({kCpuDomain, 1});
}

std::string other_operand(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2) return {};
  if (n.inputs[0] == value && n.inputs[1] != value) return n.inputs[1];
  if (n.inputs[1] == value && n.inputs[0] != value) return n.inputs[0];
  return {};
}

std::optional<std::vector<int64_t>> reduce_mean_axes(const Model& m, const Node& r) {
  if (const Attribute* k = r.attribute("keepdims"); k && k->i != 1) return std::nullopt;
  if (r.inputs.size() >= 2 && !r.inputs[1].empty()) return int_constant(m, r.inputs[1]);
  if (const Attribute* a = r.attribute("axes")) return a->ints;
  return std::nullopt;
}

int64_t trailing_axes_count(std::vector<int64_t> axes, std::optional<size_t> rank) {
  const auto k = static_cast<int64_t>(axes.size());
  for (auto& a : axes) {
    if (a >= 0) {
      if (!rank) return 0;
      a -= static_cast<int64_t>(*rank);
    }
  }
  std::sort(axes.begin(), axes.end());
  for (int64_t i = 0; i < k; ++i)
    if (axes[static_cast<size_t>(i)] != -k + i) return 0;
  return k;
}

bool broadcasts_to(const Graph& g, const std::string& p, const std::string& x) {
  auto ps = static_shape(g, p);
  const auto xt = tensor_type(g, x);
  if (!ps || !xt || !xt->shape || ps->size() > xt->shape->size() || elem_type(g, p) != DataType::Float) return false;
  for (size_t i = 0; i < ps->size(); ++i) {
    const Dim& d = (*xt->shape)[xt->shape->size() - ps->size() + i];
    const int64_t v = (*ps)[i];
    if (v != 1 && !(d.is_known() && d.value == v)) return false;
  }
  return true;
}

bool replace_chain(PassContext& ctx, Graph& g, std::vector<bool>& remove, const std::vector<const Node*>& chain,
                   Node fused) {
  size_t last = 0;
  for (const Node* n : chain) {
    const auto at = static_cast<size_t>(n - g.nodes.data());
    if (remove[at]) return false;
    last = std::max(last, at);
  }
  if (chain.empty() || !ctx.allow(chain.front()->name)) return false;
  set_fused_from(fused, chain);
  for (const Node* n : chain) remove[static_cast<size_t>(n - g.nodes.data())] = true;
  remove[last] = false;
  g.nodes[last] = std::move(fused);
  return true;
}

size_t erase_nodes(Graph& g, const std::vector<bool>& remove) {
  std::vector<Node> kept;
  kept.reserve(g.nodes.size());
  size_t removed = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i < remove.size() && remove[i]) ++removed;
    else kept.push_back(std::move(g.nodes[i]));
  }
  g.nodes = std::move(kept);
  return removed;
}

Node make_cast(const std::string& name, const std::string& input, const std::string& output, DataType type) {
  Node c;
  c.name = name;
  c.op_type = "Cast";
  c.inputs = {input};
  c.outputs = {output};
  c.attributes.push_back(make_attr_int("to", static_cast<int64_t>(type)));
  return c;
}

Attribute make_attr_int(const std::string& name, int64_t v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::Int;
  a.i = v;
  return a;
}
Attribute make_attr_float(const std::string& name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::Float;
  a.f = v;
  return a;
}
Attribute make_attr_string(const std::string& name, const std::string& v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::String;
  a.s = v;
  return a;
}
Attribute make_attr_floats(const std::string& name, std::vector<float> v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::Floats;
  a.floats = std::move(v);
  return a;
}
Attribute make_attr_ints(const std::string& name, std::vector<int64_t> v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::Ints;
  a.ints = std::move(v);
  return a;
}

void log_pass(PassContext& ctx, const Model& m, const std::string& line) {
  if (ctx.log) ctx.log->info("pass", Location{m.source}, line);
}

std::optional<std::vector<float>> per_channel(const Tensor* t, size_t rank, int64_t channels) {
  if (!t || t->dtype() != DataType::Float || t->rank() > static_cast<int64_t>(rank)) return std::nullopt;
  const Shape& s = t->shape();
  const size_t lead = rank - s.size();  // t's dims align with the output's last dims
  int64_t along_c = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    const size_t axis = lead + d;
    if (axis == 1) along_c = s[d];
    else if (s[d] != 1) return std::nullopt;
  }
  if (along_c != 1 && along_c != channels) return std::nullopt;
  std::vector<float> v(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) v[static_cast<size_t>(c)] = t->data<float>()[along_c == 1 ? 0 : c];
  return v;
}


bool scalar_parameter(const Model& m, const Node& n, size_t i, bool optional) {
  if (i >= n.inputs.size() || n.inputs[i].empty()) return optional;
  const Tensor* t = constant_tensor(m, n.inputs[i]);
  return t && t->element_count() == 1;
}

bool per_tensor_quantization(const Model& m, const Node& n) {
  if (!is_op(n, "DequantizeLinear") && !is_op(n, "QuantizeLinear")) return false;
  if (n.outputs.size() != 1 || n.outputs[0].empty() || n.inputs.empty() || n.inputs[0].empty()) return false;
  return n.inputs.size() >= 2 && n.inputs.size() <= 3 && scalar_parameter(m, n, 1, false) && scalar_parameter(m, n, 2, true);
}

bool is_float_activation(const Model& m, const Node& n) {
  if (n.outputs.size() != 1 || n.outputs[0].empty() || n.inputs.empty() || n.inputs[0].empty()) return false;
  for (const char* op : {"HardSigmoid", "HardSwish", "Sigmoid", "Relu", "LeakyRelu", "Tanh", "Elu", "Selu", "Softsign"})
    if (is_op(n, op)) return n.inputs.size() == 1;
  if (!is_op(n, "Clip")) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (!n.inputs[i].empty() && !scalar_constant(m, n.inputs[i])) return false;
  return true;
}

}  // namespace onnxscope::cpu
