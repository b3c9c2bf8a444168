// ScatterND (reduction "none") and GatherElements of any fixed-width element
// type. ScatterND copies data (split across the thread pool), then writes
// each update slice as one memcpy, in index order (a later duplicate index
// wins, as in the reference). GatherElements reads one element per output
// element, rows split across the thread pool. Indices int32 or int64,
// negative ones counting from the end. ScatterND leaves an index out of
// range to the reference; GatherElements checks each as it reads it (a
// separate pass over the indices in the kernel test cost a third of the
// time) and fails with the reference's message. Shapes the spec rejects go
// to the reference, which names them.
#include <immintrin.h>

#include <atomic>
#include <type_traits>
#include <cstring>
#include <optional>

#include "core/cpu_features.h"
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
  return true;  // indices are checked as they are read (GatherElements below)
}

// One output row (the last index dim) of elements of type E picked by indices
// of type I. An index outside [-dim, dim) reads element 0 of the axis
// instead (never past the data) and goes to *bad, so the run fails naming
// it; returns whether there was one. Branch-free per element (the check is
// folded into a flag, the offending index found again only on failure), and
// the axis a template argument: the branches had cost a third of the time.
template <bool Last, class E, class I>
bool gather_row(E* __restrict out, const E* __restrict in, const I* __restrict idx, int64_t inner, int64_t dim,
                int64_t axis_stride, int64_t* bad) {
  bool any = false;
  for (int64_t c = 0; c < inner; ++c) {
    int64_t v = idx[c];
    v += v < 0 ? dim : 0;
    const bool ok = static_cast<uint64_t>(v) < static_cast<uint64_t>(dim);
    any |= !ok;
    v = ok ? v : 0;
    out[c] = Last ? in[v] : in[v * axis_stride + c];
  }
  if (any)
    for (int64_t c = 0; c < inner; ++c) {
      const int64_t v = idx[c];
      if (v < -dim || v >= dim) {
        *bad = v;
        break;
      }
    }
  return any;
}

// The commonest case (torch.gather on the last axis: 4-byte elements, int64
// indices) as AVX-512 gathers of 8: the scalar loop above spends about 3
// cycles an element on Zen 4. The same flag and fallback element 0.
__attribute__((target("avx512f"))) bool gather_row_last_avx512(uint32_t* __restrict out, const uint32_t* __restrict in,
                                                               const int64_t* __restrict idx, int64_t inner,
                                                               int64_t dim, int64_t* bad) {
  const __m512i vdim = _mm512_set1_epi64(dim), zero = _mm512_setzero_si512();
  __mmask8 all_ok = 0xff;
  int64_t c = 0;
  for (; c + 8 <= inner; c += 8) {
    __m512i v = _mm512_loadu_si512(idx + c);
    v = _mm512_mask_add_epi64(v, _mm512_cmplt_epi64_mask(v, zero), v, vdim);
    const __mmask8 ok = _mm512_cmplt_epu64_mask(v, vdim);
    all_ok &= ok;
    v = _mm512_maskz_mov_epi64(ok, v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c), _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), 0xff, v, in, 4));
  }
  bool any = all_ok != 0xff;
  if (c < inner) any |= gather_row<true>(out + c, in, idx + c, inner - c, dim, 1, bad);
  if (any) gather_row<true>(out, in, idx, inner, dim, 1, bad);  // names the index
  return any;
}

// Returns whether an index was out of range, and one such in *bad.
template <class I>
bool gather_elements(const Tensor& data, const Tensor& ind, size_t axis, Tensor& y, int64_t* bad) {
  const size_t elem = *storage_bytes(data.dtype(), 1);
  const std::vector<int64_t> ds = contiguous_strides(data.shape());
  const Shape& is = ind.shape();
  const int64_t inner = is.back(), rows = static_cast<int64_t>(ind.element_count()) / inner;
  const int64_t dim = data.shape()[axis];
  const bool last_axis = axis + 1 == is.size();
  const I* idx = ind.data<I>();
  const std::byte* in = data.raw();
  std::byte* out = y.mutable_raw();
  std::atomic<bool> any{false};
  std::atomic<int64_t> which{0};
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
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
        int64_t b = 0;
        E* o = reinterpret_cast<E*>(out) + row * inner;
        const E* src = reinterpret_cast<const E*>(in) + base;
        bool failed;
        if constexpr (std::is_same_v<E, uint32_t> && std::is_same_v<I, int64_t>)
          failed = last_axis && avx512 ? gather_row_last_avx512(o, src, ri, inner, dim, &b)
                 : last_axis          ? gather_row<true>(o, src, ri, inner, dim, ds[axis], &b)
                                      : gather_row<false>(o, src, ri, inner, dim, ds[axis], &b);
        else
          failed = last_axis ? gather_row<true>(o, src, ri, inner, dim, ds[axis], &b)
                             : gather_row<false>(o, src, ri, inner, dim, ds[axis], &b);
        if (failed) {
          which.store(b);
          any.store(true);
        }
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
            if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(dim)) {
              which.store(ri[c]);
              any.store(true);
              v = 0;
            }
            const int64_t off = base + v * ds[axis] + (last_axis ? 0 : c);
            std::memcpy(out + static_cast<size_t>(row * inner + c) * elem, in + static_cast<size_t>(off) * elem, elem);
          }
      }
    }
  });
  *bad = which.load();
  return any.load();
}

void GatherElements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& ind = ctx.input(1);
  const int64_t r = data.rank(), a = ctx.attr_int("axis", 0);
  const size_t axis = static_cast<size_t>(a < 0 ? a + r : a);
  Tensor& y = uninitialized_output(ctx, 0, data.dtype(), ind.shape());
  if (y.element_count() == 0) return;
  const int64_t dim = data.shape()[axis];
  int64_t bad = 0;
  // The reference's words for an index out of range.
  if (ind.dtype() == DataType::Int64 ? gather_elements<int64_t>(data, ind, axis, y, &bad)
                                     : gather_elements<int32_t>(data, ind, axis, y, &bad))
    ctx.fail("indices " + std::to_string(bad) + " is out of bounds for axis " + std::to_string(axis) + " of size " +
             std::to_string(dim) + " (valid range [" + std::to_string(-dim) + ", " + std::to_string(dim - 1) + "])");
}

}  // namespace

void register_scatter_gather_elements_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "ScatterND", 11, INT_MAX, "cpu-copy", ScatterND, scatter_nd_accepts});
  r.add(KernelDef{"", "GatherElements", 11, INT_MAX, "cpu-copy", GatherElements, gather_elements_accepts});
}

}  // namespace onnxscope::cpu
