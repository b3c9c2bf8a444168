// Reference kernels: SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert, SequenceErase, SequenceLength.
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

namespace {

// Element type of a sequence: its items', else its declared element type.
DataType sequence_dtype(const Value& seq) {
  for (const auto& item : seq.items())
    if (item.is_tensor()) return item.tensor().dtype();
  const TypeInfo& t = seq.declared_type();
  if (t.kind == TypeInfo::Kind::Tensor) return t.elem;
  if (t.kind == TypeInfo::Kind::Sequence && t.inner && t.inner->kind == TypeInfo::Kind::Tensor) return t.inner->elem;
  return DataType::Undefined;
}

// A copy of `seq` with new items, keeping its element type for when it is empty.
Value with_items(const Value& seq, std::vector<Value> items, DataType dtype) {
  TypeInfo elem = seq.declared_type();
  if (elem.kind != TypeInfo::Kind::Tensor && dtype != DataType::Undefined) elem = TypeInfo::tensor(dtype);
  return Value::sequence(std::move(items), std::move(elem));
}

// Resolves a position in [-n, n-1] (or [-n, n] for insertion).
size_t sequence_position(const KernelContext& ctx, const Tensor& pos, size_t n, bool insertion) {
  int64_t p = int_scalar(ctx, pos, "position");
  const int64_t size = static_cast<int64_t>(n);
  const int64_t hi = insertion ? size : size - 1;
  if (p < -size || p > hi)
    ctx.fail("position " + std::to_string(p) + " is out of range [" + std::to_string(-size) + ", " + std::to_string(hi) +
             "] for a sequence of " + std::to_string(n) + " tensors");
  return static_cast<size_t>(p < 0 ? p + size : p);
}

}  // namespace

void SequenceConstruct(KernelContext& ctx) {
  if (ctx.input_count() == 0) ctx.fail("SequenceConstruct needs at least one input");
  std::vector<Value> items;
  const DataType dtype = ctx.input(0).dtype();
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Tensor& t = ctx.input(i);
    if (t.dtype() != dtype)
      ctx.fail("input " + std::to_string(i) + " is " + std::string(dtype_name(t.dtype())) + " but input 0 is " +
               std::string(dtype_name(dtype)) + "; all must have the same type");
    items.emplace_back(t);
  }
  ctx.set_output(0, Value::sequence(std::move(items), TypeInfo::tensor(dtype)));
}

void SequenceEmpty(KernelContext& ctx) {
  const int64_t dtype = ctx.attr_int("dtype", static_cast<int64_t>(DataType::Float));
  if (dtype < INT32_MIN || dtype > INT32_MAX || !is_known_dtype(static_cast<int32_t>(dtype)) ||
      dtype == static_cast<int64_t>(DataType::Undefined))
    ctx.fail("dtype " + std::to_string(dtype) + " is not a known tensor element type");
  ctx.set_output(0, Value::sequence({}, TypeInfo::tensor(static_cast<DataType>(dtype))));
}

void SequenceAt(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const size_t p = sequence_position(ctx, ctx.input(1), seq.items().size(), false);
  ctx.set_output(0, seq.items()[p]);
}

void SequenceInsert(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  const Tensor& t = ctx.input(1);
  const DataType dtype = sequence_dtype(seq);
  if (dtype != DataType::Undefined && t.dtype() != dtype)
    ctx.fail("cannot insert a " + std::string(dtype_name(t.dtype())) + " tensor into a sequence of " +
             std::string(dtype_name(dtype)));
  std::vector<Value> items = seq.items();
  const Tensor* pos = ctx.optional_input(2);
  const size_t p = pos ? sequence_position(ctx, *pos, items.size(), true) : items.size();
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(p), Value(t));
  ctx.set_output(0, with_items(seq, std::move(items), t.dtype()));
}

void SequenceErase(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  std::vector<Value> items = seq.items();
  const Tensor* pos = ctx.optional_input(1);
  if (!pos && items.empty()) ctx.fail("cannot erase the last tensor of an empty sequence");
  const size_t p = pos ? sequence_position(ctx, *pos, items.size(), false) : items.size() - 1;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(p));
  ctx.set_output(0, with_items(seq, std::move(items), sequence_dtype(seq)));
}

void SequenceLength(KernelContext& ctx) {
  const Value& seq = sequence_input(ctx, 0);
  ctx.set_output(0, int64_scalar(static_cast<int64_t>(seq.items().size())));
}

}  // namespace onnxscope::ref
