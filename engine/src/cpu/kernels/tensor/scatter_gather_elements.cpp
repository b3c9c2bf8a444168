// ScatterND (reduction "none") and GatherElements of any fixed-width element
// type. ScatterND copies data (split across the thread pool), then writes
// each update slice as one memcpy, in index order (a later duplicate index
// wins, as in the reference). GatherElements reads one element per output
// element, rows split across the thread pool. Indices int32 or int64,
// negative ones counting from the end; an index out of range, or shapes the
// spec rejects, are left to the reference, which names them.
#include <cstring>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/strided_copy.h"

namespace onnxscope::cpu {
namespace {

const Tensor* tensor_at(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return v && v->is_tensor() ? &v->tensor() : nullptr;
}

int64_t index_at(const Tensor& ind, uint64_t i) {
  return ind.dtype() == DataType::Int64 ? ind.data<int64_t>()[i] : ind.data<int32_t>()[i];
}

bool index_type(const Tensor& t) { return t.dtype() == DataType::Int64 || t.dtype() == DataType::Int32; }

// --- ScatterND ------------------------------------------------------------------------

bool scatter_nd_accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 3 || ctx.attr_string("reduction", "none") != "none") return false;
  const Tensor* data = tensor_at(ctx, 0);
  const Tensor* ind = tensor_at(ctx, 1);
  const Tensor* upd = tensor_at(ctx, 2);
  if (!data || !ind || !upd || !copyable_dtype(*data) || upd->dtype() != data->dtype() || !index_type(*ind)) return false;
  const int64_t r = data->rank(), q = ind->rank();
  if (r < 1 || q < 1) return false;
  const int64_t k = ind->shape()[static_cast<size_t>(q - 1)];
  if (k > r) return false;
  Shape want(ind->shape().begin(), ind->shape().end() - 1);
  want.insert(want.end(), data->shape().begin() + k, data->shape().end());
  if (upd->shape() != want) return false;
  for (uint64_t i = 0; i < ind->element_count(); ++i) {
    const int64_t dim = data->shape()[static_cast<size_t>(i % static_cast<uint64_t>(k))], v = index_at(*ind, i);
    if (v < -dim || v >= dim) return false;
  }
  return true;
}

void ScatterND(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const Tensor& upd = ctx.input(2);
  Tensor& y = uninitialized_output(ctx, 0, data.dtype(), data.shape());
  const size_t elem = *storage_bytes(data.dtype(), 1);
  const int64_t n = static_cast<int64_t>(data.element_count());
  std::byte* out = y.mutable_raw();
  parallel_for(n, 65536, [&](int64_t b, int64_t e) {
    std::memcpy(out + static_cast<size_t>(b) * elem, data.raw() + static_cast<size_t>(b) * elem, static_cast<size_t>(e - b) * elem);
  });
  const size_t k = static_cast<size_t>(ind.shape().back());
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  uint64_t slice = 1;
  for (size_t d = k; d < data.shape().size(); ++d) slice *= static_cast<uint64_t>(data.shape()[d]);
  uint64_t tuples = 1;
  for (size_t d = 0; d + 1 < ind.shape().size(); ++d) tuples *= static_cast<uint64_t>(ind.shape()[d]);
  const size_t bytes = static_cast<size_t>(slice) * elem;
  if (bytes == 0) return;
  for (uint64_t t = 0; t < tuples; ++t) {  // in order: a later duplicate wins
    int64_t off = 0;
    for (size_t j = 0; j < k; ++j) {
      int64_t v = index_at(ind, t * k + j);
      if (v < 0) v += data.shape()[j];
      off += v * strides[j];
    }
    std::memcpy(out + static_cast<size_t>(off) * elem, upd.raw() + t * bytes, bytes);
  }
}

// --- GatherElements --------------------------------------------------------------------

bool gather_elements_accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 2) return false;
  const Tensor* data = tensor_at(ctx, 0);
  const Tensor* ind = tensor_at(ctx, 1);
  if (!data || !ind || !copyable_dtype(*data) || !index_type(*ind)) return false;
  const int64_t r = data->rank(), a = ctx.attr_int("axis", 0);
  if (r < 1 || ind->rank() != r || a < -r || a >= r) return false;
  const size_t axis = static_cast<size_t>(a < 0 ? a + r : a);
  for (size_t d = 0; d < static_cast<size_t>(r); ++d)
    if (d != axis && ind->shape()[d] > data->shape()[d]) return false;
  const int64_t dim = data->shape()[axis];
  for (uint64_t i = 0; i < ind->element_count(); ++i) {
    const int64_t v = index_at(*ind, i);
    if (v < -dim || v >= dim) return false;
  }
  return true;
}

void GatherElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t r = data.rank(), a = ctx.attr_int("axis", 0);
  const size_t axis = static_cast<size_t>(a < 0 ? a + r : a);
  Tensor& y = uninitialized_output(ctx, 0, data.dtype(), ind.shape());
  if (y.element_count() == 0) return;
  const size_t elem = *storage_bytes(data.dtype(), 1);
  const std::vector<int64_t> ds = contiguous_strides(data.shape());
  const Shape& is = ind.shape();
  const int64_t inner = is.back(), rows = static_cast<int64_t>(ind.element_count()) / inner;
  const int64_t dim = data.shape()[axis];
  const std::byte* in = data.raw();
  std::byte* out = y.mutable_raw();
  parallel_for(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      // The data offset of this row's position on every axis but the last.
      int64_t base = 0, rest = row;
      for (size_t d = is.size() - 1; d-- > 0;) {
        const int64_t i = rest % is[d];
        rest /= is[d];
        if (d != axis) base += i * ds[d];
      }
      for (int64_t c = 0; c < inner; ++c) {
        const uint64_t at = static_cast<uint64_t>(row * inner + c);
        int64_t v = index_at(ind, at);
        if (v < 0) v += dim;
        const int64_t off = base + v * ds[axis] + (axis + 1 == is.size() ? 0 : c);
        std::memcpy(out + at * elem, in + static_cast<size_t>(off) * elem, elem);
      }
    }
  });
}

}  // namespace

void register_scatter_gather_elements_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "ScatterND", 11, INT_MAX, "cpu-copy", ScatterND, scatter_nd_accepts});
  r.add(KernelDef{"", "GatherElements", 11, INT_MAX, "cpu-copy", GatherElements, gather_elements_accepts});
}

}  // namespace onnxscope::cpu
