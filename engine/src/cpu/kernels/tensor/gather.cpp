// Gather of any fixed-width element type: one block copy of the slice after
// the axis per (outer index, index), split across the thread pool. Indices
// int32 or int64, negative ones counting from the end; an index out of range
// is left to the reference, which names it.
#include <cstring>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

template <class I>
bool indices_in_range(const Tensor& ind, int64_t dim) {
  const I* p = ind.data<I>();
  for (uint64_t i = 0; i < ind.element_count(); ++i)
    if (static_cast<int64_t>(p[i]) < -dim || static_cast<int64_t>(p[i]) >= dim) return false;
  return true;
}

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 2 || !ctx.input_value(0) || !ctx.input_value(1)) return false;
  const Value* dv = ctx.input_value(0);
  const Value* iv = ctx.input_value(1);
  if (!dv->is_tensor() || !iv->is_tensor() || !copyable_dtype(dv->tensor()) || dv->tensor().rank() < 1) return false;
  const Tensor& data = dv->tensor();
  const Tensor& ind = iv->tensor();
  const int64_t rank = data.rank(), axis = ctx.attr_int("axis", 0);
  if (axis < -rank || axis >= rank) return false;
  const int64_t dim = data.shape()[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  if (ind.dtype() == DataType::Int64) return indices_in_range<int64_t>(ind, dim);
  if (ind.dtype() == DataType::Int32) return indices_in_range<int32_t>(ind, dim);
  return false;
}

template <class I>
void gather(const Tensor& data, const Tensor& ind, size_t axis, Tensor& out) {
  const Shape& s = data.shape();
  const size_t elem = *storage_bytes(data.dtype(), 1);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t dim = s[axis], n = static_cast<int64_t>(ind.element_count());
  const size_t block = static_cast<size_t>(inner) * elem;
  const I* idx = ind.data<I>();
  const std::byte* in = data.raw();
  std::byte* o = out.mutable_raw();
  if (block == 0 || outer * n == 0) return;
  parallel_for(outer * n, std::max<int64_t>(1, static_cast<int64_t>(65536 / block)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t oi = t / n, j = t % n;
      int64_t k = static_cast<int64_t>(idx[j]);
      if (k < 0) k += dim;
      std::memcpy(o + static_cast<size_t>(t) * block, in + static_cast<size_t>(oi * dim + k) * block, block);
    }
  });
}

void Gather(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t rank = data.rank(), a = ctx.attr_int("axis", 0);
  const size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
  Shape out(data.shape().begin(), data.shape().begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), ind.shape().begin(), ind.shape().end());
  out.insert(out.end(), data.shape().begin() + static_cast<int64_t>(axis) + 1, data.shape().end());
  Tensor& y = uninitialized_output(ctx, 0, data.dtype(), out);
  if (y.element_count() == 0) return;
  if (ind.dtype() == DataType::Int64) gather<int64_t>(data, ind, axis, y);
  else gather<int32_t>(data, ind, axis, y);
}

}  // namespace

void register_gather_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Gather", 1, INT_MAX, "cpu-copy", Gather, accepts});
}

}  // namespace onnxscope::cpu
