// Reference kernel: SplitToSequence.
//
// Values: an optional holding a value is that value itself (a tensor or a
// sequence); an empty optional is Value::none(type). Subgraphs (If branches,
// Loop/Scan bodies, SequenceMap's body) run through ctx.run_graph, which binds
// their inputs by position and lets them read the enclosing scope. These
// kernels only move data, so every element type works, packed 4-/2-/6-bit
// types and strings included.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/controlflow/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

void SplitToSequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() < 1) ctx.fail("cannot split a scalar");
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), x.rank());
  const int64_t keepdims = ctx.attr_int("keepdims", 1);
  const int64_t dim = x.shape()[static_cast<size_t>(axis)];
  const Tensor* split = ctx.optional_input(1);

  std::vector<int64_t> lengths;
  bool squeeze = false;
  // Every chunk costs a Value even when empty: bound their number.
  auto check_count = [&](uint64_t n) {
    if (n > ctx.max_tensor_bytes() / sizeof(Value))
      ctx.fail("splitting into " + std::to_string(n) + " chunks would exceed the memory limit");
  };
  if (!split) {
    check_count(static_cast<uint64_t>(dim));
    // Default: chunks of 1; keepdims=0 drops the split axis.
    lengths.assign(static_cast<size_t>(dim), 1);
    squeeze = keepdims == 0;
  } else if (split->rank() == 0) {
    const int64_t chunk = int_scalar(ctx, *split, "split");
    if (chunk <= 0) ctx.fail("split must be positive, got " + std::to_string(chunk));
    check_count(static_cast<uint64_t>(dim / chunk + 1));
    for (int64_t start = 0; start < dim; start += chunk) lengths.push_back(std::min(chunk, dim - start));
  } else {
    if (split->rank() != 1) ctx.fail("split must be a scalar or 1-D, got shape " + shape_to_string(split->shape()));
    if (split->dtype() != DataType::Int32 && split->dtype() != DataType::Int64)
      ctx.fail("split must be int32 or int64, got " + std::string(dtype_name(split->dtype())));
    lengths = int_values(ctx, *split);
    int64_t sum = 0;
    // The spec says "positive", but onnx's own test (simple/test_sequence_model8)
    // splits a 0-length axis by [0, 0, 0]; empty chunks are accepted as numpy does.
    for (int64_t l : lengths) {
      if (l < 0) ctx.fail("split entries must not be negative, got " + std::to_string(l));
      if (__builtin_add_overflow(sum, l, &sum)) ctx.fail("split entries overflow");
    }
    if (sum != dim)
      ctx.fail("split entries sum to " + std::to_string(sum) + " but axis " + std::to_string(axis) + " has size " +
               std::to_string(dim));
  }

  std::vector<Value> items;
  int64_t start = 0;
  for (int64_t l : lengths) {
    Shape shape = x.shape();
    if (squeeze) shape.erase(shape.begin() + axis);
    else shape[static_cast<size_t>(axis)] = l;
    items.emplace_back(slice_axis(ctx, x, axis, start, l, shape));
    start += l;
  }
  ctx.set_output(0, Value::sequence(std::move(items), TypeInfo::tensor(x.dtype())));
}

}  // namespace onnxscope::ref
