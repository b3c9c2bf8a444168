// TopK of float32 along any axis with the reference's order: largest (or
// smallest) first, NaN above every number, -0 equal to +0, ties by the lower
// index, the result always sorted. Each value becomes one 64-bit key (an
// order-preserving 32-bit image of the float, then the index), so a line's
// top k is a partial sort of integers; small k keeps a sorted buffer of k keys
// and rejects most values with one float comparison. Lines are split across the
// thread pool. The values are copied from the input (their bits: -0, NaN
// payloads). Other types, opset 1's attribute k and k = 0 go to the reference.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h, as in clamp.cpp
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Problem {
  int64_t outer = 1, dim = 0, inner = 1, k = 0;
  bool largest = true;
  Shape out;
};

bool problem_of(const KernelContext& ctx, Problem& p) {
  if (ctx.opset_version() < 10 || ctx.input_count() != 2) return false;
  const Value* xv = ctx.input_value(0);
  const Value* kv = ctx.input_value(1);
  if (!xv || !kv || !xv->is_tensor() || !kv->is_tensor() || xv->tensor().dtype() != DataType::Float) return false;
  const Tensor& kt = kv->tensor();
  if (kt.dtype() != DataType::Int64 || kt.element_count() != 1 || kt.rank() > 1) return false;
  const Tensor& x = xv->tensor();
  const int64_t rank = x.rank(), axis = ctx.attr_int("axis", -1);
  if (rank == 0 || axis < -rank || axis >= rank) return false;
  const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  p.dim = x.shape()[a];
  p.k = kt.data<int64_t>()[0];
  if (p.k <= 0 || p.k > p.dim || p.dim > INT32_MAX) return false;
  for (size_t d = 0; d < a; ++d) p.outer *= x.shape()[d];
  for (size_t d = a + 1; d < x.shape().size(); ++d) p.inner *= x.shape()[d];
  p.largest = ctx.opset_version() < 11 || ctx.attr_int("largest", 1) != 0;
  p.out = x.shape();
  p.out[a] = p.k;
  return true;
}

bool accepts(const KernelContext& ctx) {
  Problem p;
  return problem_of(ctx, p);
}

// A key whose unsigned order is the value order: NaN (any payload) above +inf,
// -0 as +0; for `largest` flipped, so the k smallest keys are always wanted.
// The index in the low half breaks ties toward the lower index.
inline uint64_t key_of(float v, uint32_t index, uint32_t flip) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = v == 0.0f ? 0u : bits;                          // -0 -> +0
  bits ^= (0u - (bits >> 31)) | 0x80000000u;             // negatives reversed below positives
  bits = v != v ? 0xFFFFFFFFu : bits;                    // NaN above +inf
  return (uint64_t{bits ^ flip} << 32) | index;          // flip: ~0 for largest
}

// Small k: a sorted buffer of the best k keys so far, fed straight from the
// floats. Once it is full, a value that is no better than the k-th (a tie
// loses too: its index is higher) is dropped with one float comparison, which
// is false for NaN, so NaN always takes the exact path.
//
// First index at or after j (in steps of 16, up to dim - 15) of a block of a
// contiguous line holding a candidate: a value better than `worst`, or NaN.
__attribute__((target("avx512f"))) int64_t skip_avx512(const float* in, int64_t j, int64_t dim, float worst, bool largest) {
  const __m512 w = _mm512_set1_ps(worst);
  for (; j + 16 <= dim; j += 16) {
    const __m512 v = _mm512_loadu_ps(in + j);
    // Not (v <= worst), unordered: true for NaN as for a better value.
    const __mmask16 m = largest ? _mm512_cmp_ps_mask(v, w, _CMP_NLE_UQ) : _mm512_cmp_ps_mask(v, w, _CMP_NGE_UQ);
    if (m) break;
  }
  return j;
}

void top_small(const float* in, int64_t stride, int64_t dim, int64_t k, bool largest, uint32_t flip, uint64_t* top) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  const auto kk = static_cast<size_t>(k);
  size_t have = 0;
  float worst = 0;  // the k-th value once the buffer is full
  for (int64_t j = 0; j < dim; ++j) {
    if (have == kk && stride == 1 && avx512 && (j & 15) == 0) {
      j = skip_avx512(in, j, dim, worst, largest);
      if (j >= dim) break;
    }
    const float v = in[j * stride];
    if (have == kk && (largest ? v <= worst : v >= worst)) continue;
    const uint64_t key = key_of(v, static_cast<uint32_t>(j), flip);
    if (have == kk && key >= top[kk - 1]) continue;
    size_t at = have < kk ? have++ : kk - 1;
    while (at > 0 && top[at - 1] > key) {
      top[at] = top[at - 1];
      --at;
    }
    top[at] = key;
    if (have == kk) worst = in[static_cast<int64_t>(top[kk - 1] & 0xFFFFFFFFu) * stride];
  }
}

// Larger k: every key, then a partial sort.
void top_large(const float* in, int64_t stride, int64_t dim, int64_t k, uint32_t flip, std::vector<uint64_t>& line,
               uint64_t* top) {
  for (int64_t j = 0; j < dim; ++j) line[static_cast<size_t>(j)] = key_of(in[j * stride], static_cast<uint32_t>(j), flip);
  const auto kk = static_cast<long>(k);
  std::nth_element(line.begin(), line.begin() + kk - 1, line.end());
  std::sort(line.begin(), line.begin() + kk);
  std::copy(line.begin(), line.begin() + kk, top);
}

void TopK(KernelContext& ctx) {
  Problem p;
  if (!problem_of(ctx, p)) ctx.fail("problem not supported by the cpu TopK");
  const float* x = ctx.input(0).data<float>();
  Tensor& values = uninitialized_output(ctx, 0, DataType::Float, p.out);
  Tensor& indices = uninitialized_output(ctx, 1, DataType::Int64, p.out);
  float* vo = values.mutable_data<float>();
  int64_t* io = indices.mutable_data<int64_t>();
  const int64_t lines = p.outer * p.inner;
  const uint32_t flip = p.largest ? 0xFFFFFFFFu : 0u;
  parallel_for(lines, std::max<int64_t>(1, 32768 / p.dim), [&](int64_t l0, int64_t l1) {
    std::vector<uint64_t> line(p.k > 16 ? static_cast<size_t>(p.dim) : 0), top(static_cast<size_t>(p.k));
    for (int64_t l = l0; l < l1; ++l) {
      const int64_t o = l / p.inner, i = l % p.inner;
      const float* in = x + o * p.dim * p.inner + i;
      if (p.k <= 16) top_small(in, p.inner, p.dim, p.k, p.largest, flip, top.data());
      else top_large(in, p.inner, p.dim, p.k, flip, line, top.data());
      const int64_t base = o * p.k * p.inner + i;
      for (int64_t j = 0; j < p.k; ++j) {
        const auto at = static_cast<int64_t>(top[static_cast<size_t>(j)] & 0xFFFFFFFFu);
        vo[base + j * p.inner] = in[at * p.inner];
        io[base + j * p.inner] = at;
      }
    }
  });
}

}  // namespace

void register_top_k_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "TopK", 10, INT_MAX, "cpu-select", TopK, accepts});
}

}  // namespace onnxscope::cpu
