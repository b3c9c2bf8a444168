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

// Whether every index lies in [-dim, dim): one unsigned comparison each
// (wrapping, never overflowing), OR-ed so the pass vectorizes (64-bit
// compares need AVX2 or AVX-512: cloned).
#define ONNXSCOPE_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define ONNXSCOPE_WITHIN(name, I)                                                                         \
  ONNXSCOPE_CLONES bool name(const I* v, uint64_t n, int64_t dim) {                                        \
    const uint64_t span = 2 * static_cast<uint64_t>(dim), shift = static_cast<uint64_t>(dim);              \
    bool bad = false;                                                                                       \
    for (uint64_t i = 0; i < n; ++i) bad |= static_cast<uint64_t>(static_cast<int64_t>(v[i])) + shift >= span; \
    return !bad;                                                                                            \
  }
ONNXSCOPE_WITHIN(indices_within64, int64_t)
ONNXSCOPE_WITHIN(indices_within32, int32_t)
#undef ONNXSCOPE_WITHIN
#undef ONNXSCOPE_CLONES

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
  return ind->dtype() == DataType::Int64 ? indices_within64(ind->data<int64_t>(), ind->element_count(), dim)
                                         : indices_within32(ind->data<int32_t>(), ind->element_count(), dim);
}

// One output row (the last index dim) of elements of type E picked by indices of type I.
template <class E, class I>
void gather_row(E* out, const E* in, const I* idx, int64_t inner, int64_t base, int64_t dim, int64_t axis_stride,
                bool last_axis) {
  for (int64_t c = 0; c < inner; ++c) {
    int64_t v = idx[c];
    v += v < 0 ? dim : 0;
    out[c] = in[base + v * axis_stride + (last_axis ? 0 : c)];
  }
}

template <class I>
void gather_elements(const Tensor& data, const Tensor& ind, size_t axis, Tensor& y) {
  const size_t elem = *storage_bytes(data.dtype(), 1);
  const std::vector<int64_t> ds = contiguous_strides(data.shape());
  const Shape& is = ind.shape();
  const int64_t inner = is.back(), rows = static_cast<int64_t>(ind.element_count()) / inner;
  const int64_t dim = data.shape()[axis];
  const bool last_axis = axis + 1 == is.size();
  const I* idx = ind.data<I>();
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
      const I* ri = idx + row * inner;
      auto typed = [&](auto tag) {  // the common widths as typed moves, not memcpy calls
        using E = decltype(tag);
        gather_row(reinterpret_cast<E*>(out) + row * inner, reinterpret_cast<const E*>(in), ri, inner, base, dim,
                   ds[axis], last_axis);
      };
      switch (elem) {
        case 4: typed(uint32_t{}); break;
        case 8: typed(uint64_t{}); break;
        case 2: typed(uint16_t{}); break;
        case 1: typed(uint8_t{}); break;
        default:
          for (int64_t c = 0; c < inner; ++c) {
            int64_t v = ri[c];
            v += v < 0 ? dim : 0;
            const int64_t off = base + v * ds[axis] + (last_axis ? 0 : c);
            std::memcpy(out + static_cast<size_t>(row * inner + c) * elem, in + static_cast<size_t>(off) * elem, elem);
          }
      }
    }
  });
}

void GatherElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t r = data.rank(), a = ctx.attr_int("axis", 0);
  const size_t axis = static_cast<size_t>(a < 0 ? a + r : a);
  Tensor& y = uninitialized_output(ctx, 0, data.dtype(), ind.shape());
  if (y.element_count() == 0) return;
  if (ind.dtype() == DataType::Int64) gather_elements<int64_t>(data, ind, axis, y);
  else gather_elements<int32_t>(data, ind, axis, y);
}

}  // namespace

void register_scatter_gather_elements_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "ScatterND", 11, INT_MAX, "cpu-copy", ScatterND, scatter_nd_accepts});
  r.add(KernelDef{"", "GatherElements", 11, INT_MAX, "cpu-copy", GatherElements, gather_elements_accepts});
}

}  // namespace onnxscope::cpu
