// ConstantOfShape and EyeLike: outputs made from attributes and a shape,
// reading no input values on the device (kernels/elementwise.h FillKernel,
// EyeKernel). ConstantOfShape's shape is read on the host.
#include <cstring>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

std::optional<std::string> refuse_constant_of_shape(const Graph& g, const Node& n) {
  if (n.inputs.size() != 1 || n.inputs[0].empty()) return std::string("ConstantOfShape takes one input, the shape");
  if (auto r = require_types(g, n, {DataType::Int64})) return r;
  const Attribute* v = n.attribute("value");
  if (v && !movable(v->t.dtype())) return "the CUDA ConstantOfShape does not write " + std::string(dtype_name(v->t.dtype()));
  return std::nullopt;
}

bool shape_reads_on_host(const Node&, size_t) { return true; }

void run_constant_of_shape(OpContext& c) {
  const Tensor* shape = c.host(0);
  if (!shape) c.fail("the shape must be given");
  if (shape->rank() > 1) c.fail("expected a 1-D integer tensor, got shape " + shape_to_string(shape->shape()));
  const std::vector<int64_t> dims = host_ints(c, 0);
  for (int64_t d : dims)
    if (d < 0) c.fail("shape " + shape_to_string(dims) + " has a negative dimension");
  const Attribute* value = c.node().attribute("value");
  const DataType t = value ? value->t.dtype() : DataType::Float;
  if (value && value->t.element_count() != 1)
    c.fail("attribute 'value' must hold exactly one element, got " + std::to_string(value->t.element_count()));
  c.output(0) = c.allocate(t, dims);
  FillKernel k{};
  k.width = static_cast<int>(dtype_info(t).bits / 8);
  if (value) std::memcpy(&k.bits, value->t.raw(), static_cast<size_t>(k.width));  // float zeros when absent
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(dims)));
}

std::optional<DataType> eye_type(const Node& n, DataType input) {
  const Attribute* d = n.attribute("dtype");
  if (!d) return input;
  if (d->i <= 0 || d->i > INT32_MAX || !is_known_dtype(static_cast<int32_t>(d->i))) return std::nullopt;
  return static_cast<DataType>(d->i);
}

std::optional<std::string> refuse_eye_like(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0].empty()) return std::string("EyeLike takes one input");
  const auto t = eye_type(n, declared_type(g, n.inputs[0]));
  if (!t || !castable(*t)) return std::string("the CUDA EyeLike does not write that type");
  return std::nullopt;
}

void run_eye_like(OpContext& c) {
  const Shape& s = c.input(0).shape;
  if (s.size() != 2) c.fail("input must be 2-D, got shape " + shape_to_string(s));
  const auto t = eye_type(c.node(), c.input(0).dtype);
  if (!t || !castable(*t)) c.fail("dtype is not a type the CUDA EyeLike writes");
  c.output(0) = c.allocate(*t, s);
  EyeKernel k{};
  k.type = static_cast<ElemType>(*t);
  k.cols = s[1];
  k.k = c.attr_int("k", 0);
  k.y = c.output(0).data;
  launch(c.rt(), k, static_cast<int64_t>(elements_of(s)));
}

}  // namespace

void add_constant_fill_ops(std::vector<OpDef>& t) {
  t.push_back({"ConstantOfShape", refuse_constant_of_shape, run_constant_of_shape, OpBackend::Kernel, shape_reads_on_host});
  t.push_back({"EyeLike", refuse_eye_like, run_eye_like});
}

}  // namespace onnxscope::cuda
