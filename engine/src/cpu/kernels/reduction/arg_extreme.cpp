// ArgMax and ArgMin of float32, int32 and int64 tensors with the reference's
// rules (numpy's: the first NaN wins for both; select_last_index keeps the
// last of equal values): the axis's values compared row by row, so the dims
// after the axis are walked contiguously, (outer, inner chunk) pairs split
// across the thread pool. Other types and a scalar input go to the reference.
#include <cmath>
#include <type_traits>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/reduction/row_extreme.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const DataType t = x.dtype();
  if (t != DataType::Float && t != DataType::Int64 && t != DataType::Int32) return false;
  const int64_t rank = x.rank(), axis = ctx.attr_int("axis", 0);
  if (rank == 0 || axis < -rank || axis >= rank) return false;
  return x.shape()[static_cast<size_t>(axis < 0 ? axis + rank : axis)] > 0;
}

// Whether cur replaces best (at a later index).
template <bool Max, class T>
inline bool replaces(T cur, T best, bool last) {
  if constexpr (std::is_floating_point_v<T>) {
    if (best != best) return last && cur != cur;  // the first NaN wins (the last, with select_last_index)
    if (cur != cur) return true;
  }
  return Max ? (cur > best || (last && cur == best)) : (cur < best || (last && cur == best));
}

// A float32 row in two passes: its extreme (NaN when it holds NaN, by
// row_extreme's vector loop), then the first (or last) index holding it, or
// holding NaN: the same index the scalar rule picks (+0 and -0 are equal
// there as here).
int64_t row_arg(const float* x, int64_t n, bool max, bool last) {
  const float best = row_extreme(x, n, max);
  const bool nan = best != best;
  auto hit = [&](float v) { return nan ? v != v : v == best; };
  if (last) {
    for (int64_t j = n; j-- > 0;)
      if (hit(x[j])) return j;
  } else {
    for (int64_t j = 0; j < n; ++j)
      if (hit(x[j])) return j;
  }
  return 0;  // not reached: the row holds its own extreme
}

template <bool Max, class T>
void arg(const Tensor& x, size_t axis, bool last, int64_t* y) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const int64_t dim = s[axis];
  const T* in = x.data<T>();
  if (inner == 1) {  // the last axis: each row scanned where it lies
    if constexpr (std::is_same_v<T, float>) {
      parallel_for(outer, std::max<int64_t>(1, 65536 / dim), [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) y[o] = row_arg(in + o * dim, dim, Max, last);
      });
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, 16384 / dim), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) {
        const T* row = in + o * dim;
        T best = row[0];
        int64_t at = 0;
        for (int64_t j = 1; j < dim; ++j)
          if (replaces<Max>(row[j], best, last)) {
            best = row[j];
            at = j;
          }
        y[o] = at;
      }
    });
    return;
  }
  const int64_t chunk = std::min<int64_t>(inner, 256), chunks = (inner + chunk - 1) / chunk;
  parallel_for(outer * chunks, std::max<int64_t>(1, 16384 / (dim * chunk)), [&](int64_t t0, int64_t t1) {
    std::vector<T> best(static_cast<size_t>(chunk));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, i0 = (t % chunks) * chunk, len = std::min(chunk, inner - i0);
      const T* base = in + o * dim * inner + i0;
      int64_t* out = y + o * inner + i0;
      for (int64_t i = 0; i < len; ++i) {
        best[static_cast<size_t>(i)] = base[i];
        out[i] = 0;
      }
      for (int64_t j = 1; j < dim; ++j) {
        const T* row = base + j * inner;
        for (int64_t i = 0; i < len; ++i)
          if (replaces<Max>(row[i], best[static_cast<size_t>(i)], last)) {
            best[static_cast<size_t>(i)] = row[i];
            out[i] = j;
          }
      }
    }
  });
}

template <bool Max>
void ArgExtreme(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank(), a = ctx.attr_int("axis", 0);
  const size_t axis = static_cast<size_t>(a < 0 ? a + rank : a);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool last = ctx.opset_version() >= 12 && ctx.attr_int("select_last_index", 0) != 0;
  Shape out = x.shape();
  if (keepdims) out[axis] = 1;
  else out.erase(out.begin() + static_cast<int64_t>(axis));
  Tensor& y = uninitialized_output(ctx, 0, DataType::Int64, out);
  if (y.element_count() == 0) return;
  int64_t* py = y.mutable_data<int64_t>();
  switch (x.dtype()) {
    case DataType::Float: return arg<Max, float>(x, axis, last, py);
    case DataType::Int64: return arg<Max, int64_t>(x, axis, last, py);
    default: return arg<Max, int32_t>(x, axis, last, py);
  }
}

}  // namespace

void register_arg_extreme_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "ArgMax", 1, INT_MAX, "cpu-loop", ArgExtreme<true>, accepts});
  r.add(KernelDef{"", "ArgMin", 1, INT_MAX, "cpu-loop", ArgExtreme<false>, accepts});
}

}  // namespace onnxscope::cpu
