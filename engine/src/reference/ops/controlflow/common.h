// Helpers shared by the reference's control-flow kernels (and the sequence and optional ones): scalar
// conditions, subgraph attributes, element copies and the scan accumulators.
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "reference/kernel_util.h"

namespace onnxscope::ref {

// A Loop whose trip count and condition never stop it (or a count this large)
// is treated as a runaway model rather than left to hang the tool.
inline constexpr int64_t kMaxLoopIterations = 10'000'000;

// --- tensor helpers ----------------------------------------------------------

inline uint64_t product(const Shape& s, size_t from, size_t to) {
  uint64_t n = 1;
  for (size_t d = from; d < to; ++d) n *= static_cast<uint64_t>(s[d]);
  return n;
}

// A zero-filled tensor, size-checked like ctx.allocate_output.
inline Tensor new_tensor(const KernelContext& ctx, DataType type, const Shape& shape) {
  auto count = checked_element_count(shape);
  if (!count) ctx.fail("tensor shape " + shape_to_string(shape) + " is negative or overflows");
  uint64_t bytes = type == DataType::String ? *count * sizeof(std::string)
                                            : storage_bytes(type, *count).value_or(UINT64_MAX);
  if (bytes > ctx.max_tensor_bytes())
    ctx.fail("a tensor of shape " + shape_to_string(shape) + " would need " + std::to_string(bytes) +
             " bytes, more than the limit of " + std::to_string(ctx.max_tensor_bytes()));
  return Tensor::zeros(type, shape);
}

// Copies n consecutive elements of src (from element `from`) to dst (at `to`);
// both have the same element type.
inline void copy_elements(const Tensor& src, uint64_t from, Tensor& dst, uint64_t to, uint64_t n) {
  if (n == 0) return;
  const DataType t = src.dtype();
  if (t == DataType::String) {
    for (uint64_t i = 0; i < n; ++i) dst.mutable_strings()[to + i] = src.strings()[from + i];
  } else if (is_packed_dtype(t)) {
    std::byte* out = dst.mutable_raw();
    for (uint64_t i = 0; i < n; ++i)
      set_packed_element_bits(t, out, to + i, packed_element_bits(t, src.raw(), from + i));
  } else {
    const uint64_t elem = dtype_info(t).bits / 8;
    std::memcpy(dst.mutable_raw() + to * elem, src.raw() + from * elem, n * elem);
  }
}

// Elements [start, start+len) along `axis` of x, returned with `out_shape`
// (x's shape with that axis set to len, or with it removed when len is 1).
inline Tensor slice_axis(const KernelContext& ctx, const Tensor& x, int64_t axis, int64_t start, int64_t len,
                  const Shape& out_shape) {
  const Shape& s = x.shape();
  const uint64_t outer = product(s, 0, static_cast<size_t>(axis));
  const uint64_t mid = static_cast<uint64_t>(s[static_cast<size_t>(axis)]);
  const uint64_t inner = product(s, static_cast<size_t>(axis) + 1, s.size());
  Tensor out = new_tensor(ctx, x.dtype(), out_shape);
  const uint64_t block = static_cast<uint64_t>(len) * inner;
  for (uint64_t o = 0; o < outer; ++o)
    copy_elements(x, (o * mid + static_cast<uint64_t>(start)) * inner, out, o * block, block);
  return out;
}

// numpy.concatenate (stack=false) or numpy.stack (stack=true) of `parts` along
// `axis`, which is already normalised (into [0, rank] when stacking).
inline Tensor join(const KernelContext& ctx, const std::vector<const Tensor*>& parts, int64_t axis, bool stack,
            const std::string& what) {
  if (parts.empty()) ctx.fail(what + ": nothing to concatenate");
  const Tensor& first = *parts.front();
  const Shape& base = first.shape();
  const size_t a = static_cast<size_t>(axis);
  Shape out_shape = base;
  int64_t total = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    const Tensor& t = *parts[p];
    if (t.dtype() != first.dtype())
      ctx.fail(what + ": element " + std::to_string(p) + " is " + std::string(dtype_name(t.dtype())) + ", element 0 is " +
               std::string(dtype_name(first.dtype())));
    bool same = t.rank() == first.rank();
    for (size_t d = 0; same && d < base.size(); ++d)
      if (t.shape()[d] != base[d] && (stack || d != a)) same = false;
    if (!same)
      ctx.fail(what + ": element " + std::to_string(p) + " has shape " + shape_to_string(t.shape()) +
               ", which does not match element 0's " + shape_to_string(base) +
               (stack ? "" : " outside axis " + std::to_string(axis)));
    if (__builtin_add_overflow(total, stack ? int64_t{1} : t.shape()[a], &total))
      ctx.fail(what + ": the concatenated axis overflows");
  }
  if (stack) out_shape.insert(out_shape.begin() + axis, total);
  else out_shape[a] = total;
  const uint64_t outer = product(base, 0, a);
  const uint64_t inner = product(base, stack ? a : a + 1, base.size());
  Tensor out = new_tensor(ctx, first.dtype(), out_shape);
  uint64_t offset = 0;  // position along the axis where the current part starts
  for (const Tensor* t : parts) {
    const uint64_t mid = stack ? 1 : static_cast<uint64_t>(t->shape()[a]);
    for (uint64_t o = 0; o < outer; ++o)
      copy_elements(*t, o * mid * inner, out, (o * static_cast<uint64_t>(total) + offset) * inner, mid * inner);
    offset += mid;
  }
  return out;
}

// The value of a 1-element bool tensor (If's and Loop's conditions).
inline bool bool_scalar(const KernelContext& ctx, const Tensor& t, const std::string& what) {
  if (t.dtype() != DataType::Bool) ctx.fail(what + " must be a bool tensor, got " + std::string(dtype_name(t.dtype())));
  if (t.element_count() != 1)
    ctx.fail(what + " must hold a single element, got shape " + shape_to_string(t.shape()));
  return t.raw()[0] != std::byte{0};
}

// The value of a 1-element int32/int64 tensor (sequence positions, trip counts).
inline int64_t int_scalar(const KernelContext& ctx, const Tensor& t, const std::string& what, bool int64_only = false) {
  if (t.dtype() != DataType::Int64 && (int64_only || t.dtype() != DataType::Int32))
    ctx.fail(what + " must be " + (int64_only ? "int64" : "int32 or int64") + ", got " +
             std::string(dtype_name(t.dtype())));
  if (t.element_count() != 1)
    ctx.fail(what + " must be a scalar, got shape " + shape_to_string(t.shape()));
  return t.element_as_int64(0);
}

inline Tensor int64_scalar(int64_t v) {
  Tensor t = Tensor::zeros(DataType::Int64, {});
  store<int64_t>(t, 0, v);
  return t;
}

inline Tensor bool_scalar_tensor(bool v) {
  Tensor t = Tensor::zeros(DataType::Bool, {});
  store<bool>(t, 0, v);
  return t;
}

// Before opset 13 control-flow values are tensors; 13 adds sequences, 16 optionals.
inline void check_value_kind(const KernelContext& ctx, const Value& v, const std::string& what) {
  const int64_t opset = ctx.opset_version();
  if (v.is_map()) ctx.fail(what + " is a map, which control-flow operators do not carry");
  if (opset < 13 && !v.is_tensor()) ctx.fail(what + " must be a tensor before opset 13, got " + v.describe());
  if (opset < 16 && v.is_none()) ctx.fail(what + " is an empty optional, which is allowed from opset 16 on");
}

// The body output a scan output comes from must be a tensor.
inline const Tensor& scan_element(const KernelContext& ctx, const Value& v, const std::string& what) {
  if (!v.is_tensor()) ctx.fail(what + " must be a tensor, got " + v.describe());
  return v.tensor();
}

// Accumulated scan-output elements: same type and shape every iteration, and
// their total kept under the tensor size limit.
struct ScanAccumulator {
  std::vector<Tensor> items;
  uint64_t bytes = 0;

  void add(const KernelContext& ctx, const Tensor& t, const std::string& what) {
    if (!items.empty()) {
      const Tensor& f = items.front();
      if (t.dtype() != f.dtype() || t.shape() != f.shape())
        ctx.fail(what + " is " + std::string(dtype_name(t.dtype())) + shape_to_string(t.shape()) + " in iteration " +
                 std::to_string(items.size()) + " but was " + std::string(dtype_name(f.dtype())) +
                 shape_to_string(f.shape()) + " in iteration 0; it may not change across iterations");
    }
    bytes += t.is_string() ? t.element_count() * sizeof(std::string) : t.byte_size();
    if (bytes > ctx.max_tensor_bytes())
      ctx.fail(what + " grew past the tensor size limit of " + std::to_string(ctx.max_tensor_bytes()) + " bytes after " +
               std::to_string(items.size() + 1) + " iterations");
    items.push_back(t);
  }
  std::vector<const Tensor*> pointers(bool reverse = false) const {
    std::vector<const Tensor*> p;
    for (const auto& t : items) p.push_back(&t);
    if (reverse) std::reverse(p.begin(), p.end());
    return p;
  }
};

// The element shape of a scan output whose body never ran, from the body's
// declared output type. The spec leaves this case open; like onnxruntime,
// unknown dims become 0 (and an unknown rank a rank-0 element).
inline std::pair<DataType, Shape> declared_element(const KernelContext& ctx, const ValueInfo& vi, const std::string& what) {
  if (vi.type.kind != TypeInfo::Kind::Tensor || vi.type.elem == DataType::Undefined)
    ctx.fail(what + " ('" + vi.name + "') has no declared tensor type, so its empty result after zero iterations "
             "cannot be built");
  Shape s;
  if (vi.type.shape)
    for (const Dim& d : *vi.type.shape) s.push_back(d.is_known() ? d.value : 0);
  return {vi.type.elem, s};
}

inline const Graph& graph_attr(const KernelContext& ctx, const char* name) {
  const Graph* g = ctx.attr_graph(name);
  if (!g) ctx.fail(std::string("attribute '") + name + "' (a graph) is required");
  return *g;
}

// --- sequences -------------------------------------------------------------------

inline const Value& sequence_input(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_value(i);
  if (!v || v->is_none()) ctx.fail("input " + std::to_string(i) + " (a sequence) is required but missing");
  if (!v->is_sequence()) ctx.fail("input " + std::to_string(i) + " must be a sequence, got " + v->describe());
  return *v;
}

}  // namespace onnxscope::ref
