// Reference kernel: Constant, its sparse_value densified.
//
// Data movement never looks at values: elements are copied by ElementMover /
// gather_by_tables (tensor/common.h), so every element type works, strings
// and the packed 4/2/6-bit types included.
#include <algorithm>
#include <numeric>

#include "reference/kernel_util.h"
#include "reference/ops/tensor/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

void densify_sparse(KernelContext& ctx, const SparseTensor& sp) {
  const Tensor& values = sp.values;
  const Tensor& indices = sp.indices;
  const int64_t rank = static_cast<int64_t>(sp.dims.size());
  auto count = checked_element_count(sp.dims);
  if (!count) ctx.fail("sparse_value has an invalid dense shape " + shape_to_string(sp.dims));
  if (values.rank() != 1) ctx.fail("sparse_value values must be 1-D, got " + shape_to_string(values.shape()));
  const int64_t nnz = values.shape()[0];
  if (!dtype_info(indices.dtype()).is_integer && nnz > 0) ctx.fail("sparse_value indices must be integers");
  Tensor& y = ctx.allocate_output(0, values.dtype(), sp.dims);
  ElementMover move(values, y, &ctx);
  const auto strides = strides_of(sp.dims);
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t linear = 0;
    if (indices.rank() == 1 && indices.shape()[0] == nnz) {
      linear = indices.element_as_int64(static_cast<uint64_t>(k));
      if (linear < 0 || static_cast<uint64_t>(linear) >= *count)
        ctx.fail("sparse_value index " + std::to_string(linear) + " is out of range for " + std::to_string(*count) +
                 " elements");
    } else if (indices.rank() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank) {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t c = indices.element_as_int64(static_cast<uint64_t>(k * rank + d));
        if (c < 0 || c >= sp.dims[static_cast<size_t>(d)])
          ctx.fail("sparse_value index " + std::to_string(c) + " is out of range for dimension " + std::to_string(d) +
                   " of " + shape_to_string(sp.dims));
        linear += c * strides[static_cast<size_t>(d)];
      }
    } else {
      ctx.fail("sparse_value indices of shape " + shape_to_string(indices.shape()) + " do not match " +
               std::to_string(nnz) + " values of a rank-" + std::to_string(rank) + " tensor");
    }
    move(static_cast<uint64_t>(linear), static_cast<uint64_t>(k));
  }
}

}  // namespace

void Constant(KernelContext& ctx) {
  static const char* const kForms[] = {"value",        "sparse_value", "value_int",    "value_ints",
                                       "value_float",  "value_floats", "value_string", "value_strings"};
  const char* form = nullptr;
  for (const char* f : kForms) {
    if (!ctx.has_attr(f)) continue;
    if (form) ctx.fail(std::string("exactly one value attribute is allowed, got '") + form + "' and '" + f + "'");
    form = f;
  }
  if (!form) ctx.fail("one of the value attributes must be given");
  const std::string f = form;
  if (f == "value") {
    ctx.set_output(0, Value(*ctx.attr_tensor("value")));
  } else if (f == "sparse_value") {
    const Attribute& a = ctx.required_attr("sparse_value");
    if (a.type != AttrType::SparseTensor) ctx.fail("attribute 'sparse_value' must be a sparse tensor");
    densify_sparse(ctx, a.sparse);
  } else if (f == "value_int") {
    store<int64_t>(ctx.allocate_output(0, DataType::Int64, {}), 0, ctx.attr_int("value_int", 0));
  } else if (f == "value_ints") {
    const auto v = ctx.attr_ints("value_ints");
    Tensor& y = ctx.allocate_output(0, DataType::Int64, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) store<int64_t>(y, i, v[i]);
  } else if (f == "value_float") {
    store<float>(ctx.allocate_output(0, DataType::Float, {}), 0, ctx.attr_float("value_float", 0));
  } else if (f == "value_floats") {
    const auto v = ctx.attr_floats("value_floats");
    Tensor& y = ctx.allocate_output(0, DataType::Float, {static_cast<int64_t>(v.size())});
    for (size_t i = 0; i < v.size(); ++i) store<float>(y, i, v[i]);
  } else if (f == "value_string") {
    ctx.allocate_output(0, DataType::String, {}).mutable_strings()[0] = ctx.attr_string("value_string");
  } else {
    const auto v = ctx.attr_strings("value_strings");
    Tensor& y = ctx.allocate_output(0, DataType::String, {static_cast<int64_t>(v.size())});
    y.mutable_strings() = v;
  }
}

}  // namespace onnxscope::ref
