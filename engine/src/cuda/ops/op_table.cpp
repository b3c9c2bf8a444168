// The operator table (ops/op_table.h): the families' entries in one map,
// the context operators run in, and the rule helpers they share.
#include "cuda/ops/op_table.h"

#include <map>
#include <stdexcept>

namespace onnxscope::cuda {

const DeviceTensor& OpContext::input(size_t k) const {
  if (k >= in_.size() || !in_[k]) fail("input " + std::to_string(k) + " is not on the device");
  return *in_[k];
}

FaultLog::Site OpContext::fault_site(FaultKind kind) {
  for (const auto& o : node_.outputs)
    if (!o.empty()) return faults_.site(o, kind);
  fail("a node without outputs has no fault site");
}

DeviceTensor OpContext::allocate(DataType dtype, const Shape& shape) {
  DeviceTensor d;
  d.dtype = dtype;
  d.shape = shape;
  const uint64_t bytes = bytes_of(dtype, shape);
  if (bytes == 0) return d;
  d.storage = rt_->allocate(bytes);
  d.data = d.storage.get();
  return d;
}

uint16_t* OpContext::make_half_copy(DeviceTensor& t) {
  if (mode_ != MathMode::Fp16 || t.dtype != DataType::Float || !rt_->half_copies()) return nullptr;
  const uint64_t bytes = bytes_of(DataType::Float16, t.shape);
  if (bytes == 0) return nullptr;
  t.half_storage = rt_->allocate(bytes);
  t.half_copy = t.half_storage.get();
  return static_cast<uint16_t*>(t.half_storage.get());
}

DeviceTensor OpContext::upload(const Tensor& t) {
  DeviceTensor d = allocate(t.dtype(), t.shape());
  if (t.byte_size()) rt_->copy_in(d.data, t.raw(), t.byte_size());
  return d;
}

int64_t OpContext::attr_int(const char* name, int64_t dflt) const {
  const Attribute* a = node_.attribute(name);
  return a ? a->i : dflt;
}

float OpContext::attr_float(const char* name, float dflt) const {
  const Attribute* a = node_.attribute(name);
  return a ? a->f : dflt;
}

std::vector<int64_t> OpContext::attr_ints(const char* name) const {
  const Attribute* a = node_.attribute(name);
  return a ? a->ints : std::vector<int64_t>{};
}

std::string OpContext::attr_string(const char* name, const std::string& dflt) const {
  const Attribute* a = node_.attribute(name);
  return a ? a->s : dflt;
}

void OpContext::fail(const std::string& what) const { throw std::runtime_error(node_.op_type + ": " + what); }

void run_on_float32(OpContext& c, const std::function<void(OpContext&)>& run, uint32_t narrowed, DataType to) {
  const size_t inputs = c.input_count();
  if (to == DataType::Undefined && c.has_input(0)) to = c.input(0).dtype;
  const DataType narrow = to == DataType::Float16 || to == DataType::BFloat16 ? to : DataType::Undefined;
  std::vector<DeviceTensor> widened(inputs);
  std::vector<const DeviceTensor*> in(inputs, nullptr);
  for (size_t i = 0; i < inputs; ++i) {
    if (!c.has_input(i)) continue;
    const DeviceTensor& x = c.input(i);
    in[i] = &x;
    if (x.dtype != DataType::Float16 && x.dtype != DataType::BFloat16) continue;
    widened[i] = c.allocate(DataType::Float, x.shape);
    const CastKernel k{static_cast<ElemType>(x.dtype), ElemType::Float, x.data, widened[i].data, true};
    launch(c.rt(), k, static_cast<int64_t>(elements_of(x.shape)));
    in[i] = &widened[i];
  }
  std::vector<DeviceTensor> out(c.node().outputs.size());
  OpContext f = c.over(in, out);
  run(f);
  for (size_t o = 0; o < out.size(); ++o) {
    if (narrow == DataType::Undefined || out[o].dtype != DataType::Float || o >= 32 || !(narrowed >> o & 1u)) {
      c.output(o) = std::move(out[o]);
      continue;
    }
    c.output(o) = c.allocate(narrow, out[o].shape);
    const CastKernel k{ElemType::Float, static_cast<ElemType>(narrow), out[o].data, c.output(o).data, true};
    launch(c.rt(), k, static_cast<int64_t>(elements_of(out[o].shape)));
  }
}

uint64_t elements_of(const Shape& s) {
  auto n = checked_element_count(s);
  if (!n) throw std::runtime_error("the shape " + shape_to_string(s) + " has too many elements");
  return *n;
}

uint64_t bytes_of(DataType t, const Shape& s) {
  auto b = storage_bytes(t, elements_of(s));
  if (!b) throw std::runtime_error("the shape " + shape_to_string(s) + " is too large");
  return *b;
}

// Initializers carry their type in the tensor (a graph need not declare them).
DataType declared_type(const Graph& g, const std::string& value) {
  if (value.empty()) return DataType::Undefined;
  if (const Initializer* i = g.initializer(value)) return i->value.dtype();
  const TypeInfo* t = g.type_of(value);
  return t && t->is_tensor() ? t->elem : DataType::Undefined;
}

std::vector<Dim> declared_dims(const Graph& g, const std::string& value) {
  std::vector<Dim> dims;
  if (value.empty()) return dims;
  if (const Initializer* i = g.initializer(value)) {
    for (int64_t d : i->value.shape()) dims.push_back(Dim::known(d));
  } else if (const TypeInfo* t = g.type_of(value); t && t->is_tensor() && t->shape) {
    dims = *t->shape;
  }
  return dims;
}

std::optional<Shape> declared_shape(const Graph& g, const std::string& value) {
  if (value.empty()) return std::nullopt;
  if (const Initializer* i = g.initializer(value)) return i->value.shape();  // a scalar initializer too
  const TypeInfo* t = g.type_of(value);
  if (!t || !t->is_tensor() || !t->shape) return std::nullopt;
  Shape s;
  for (const Dim& d : declared_dims(g, value)) {
    if (!d.is_known()) return std::nullopt;
    s.push_back(d.value);
  }
  return s;
}

std::optional<std::string> require_types(const Graph& g, const Node& n, std::initializer_list<DataType> allowed,
                                         size_t first, size_t count) {
  for (size_t i = first; i < n.inputs.size() && i - first < count; ++i) {
    if (n.inputs[i].empty()) continue;
    const DataType t = declared_type(g, n.inputs[i]);
    bool ok = false;
    for (DataType a : allowed) ok = ok || a == t;
    if (!ok) {
      std::string names;
      for (DataType a : allowed) {
        if (!names.empty()) names += '/';
        names += dtype_name(a);
      }
      return "the CUDA kernel for " + n.op_type + " takes " + names + " (input " + std::to_string(i) + " is " +
             (t == DataType::Undefined ? std::string("of an unknown type") : std::string(dtype_name(t))) + ")";
    }
  }
  return std::nullopt;
}

std::optional<std::string> require_one_real_type(const Graph& g, const Node& n, size_t first, size_t count) {
  if (auto r = require_types(g, n, {DataType::Float, DataType::Float16, DataType::BFloat16}, first, count)) return r;
  if (first >= n.inputs.size()) return std::nullopt;
  const DataType t = declared_type(g, n.inputs[first]);
  for (size_t i = first + 1; i < n.inputs.size() && i - first < count; ++i)
    if (!n.inputs[i].empty() && declared_type(g, n.inputs[i]) != t)
      return "the CUDA kernel for " + n.op_type + " takes inputs of one type (input " + std::to_string(i) + " is " +
             std::string(dtype_name(declared_type(g, n.inputs[i]))) + ", input " + std::to_string(first) + " " +
             std::string(dtype_name(t)) + ")";
  return std::nullopt;
}

namespace {

const std::map<std::string, OpDef>& table() {
  static const std::map<std::string, OpDef> t = [] {
    std::vector<OpDef> defs;
    add_elementwise_ops(defs);
    add_movement_ops(defs);
    add_matmul_ops(defs);
    add_conv_ops(defs);
    add_conv_transpose_ops(defs);
    add_pool_ops(defs);
    add_normalization_ops(defs);
    add_reduce_ops(defs);
    add_scatter_ops(defs);
    add_pad_ops(defs);
    add_resize_ops(defs);
    add_rearrange_ops(defs);
    add_along_axis_ops(defs);
    add_attention_ops(defs);
    add_quantize_ops(defs);
    add_einsum_ops(defs);
    add_det_ops(defs);
    add_deform_conv_ops(defs);
    add_integer_product_ops(defs);
    add_recurrent_ops(defs);
    add_range_ops(defs);
    add_nonzero_ops(defs);
    add_nms_ops(defs);
    add_llm_block_ops(defs);
    add_constant_fill_ops(defs);
    add_grid_sample_ops(defs);
    add_roi_align_ops(defs);
    add_loss_ops(defs);
    add_signal_ops(defs);
    add_fused_ops(defs);
    std::map<std::string, OpDef> m;
    for (const OpDef& d : defs) {
      const std::string key = *d.domain ? std::string(d.domain) + "::" + d.op_type : std::string(d.op_type);
      if (!m.emplace(key, d).second) throw std::logic_error("two CUDA entries for " + key);
    }
    return m;
  }();
  return t;
}

}  // namespace

const OpDef* find_op(const std::string& op_type) { return find_op("", op_type); }

const OpDef* find_op(const std::string& domain, const std::string& op_type) {
  auto it = table().find(domain.empty() || domain == "ai.onnx" ? op_type : domain + "::" + op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> r;
  for (const auto& [k, v] : table()) r.push_back(k);
  return r;
}

}  // namespace onnxscope::cuda
