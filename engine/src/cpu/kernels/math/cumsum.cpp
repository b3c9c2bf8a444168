// CumSum of float32, double, int32 and int64 along any axis, exclusive and
// reverse, with the reference's arithmetic: floats accumulate in double and
// are rounded once on store, integers in uint64 (wrapping as the element type
// does). The dims after the axis are carried as a row of running sums, so
// every step is a contiguous, vectorizable pass; (outer, row chunk) pairs are
// split across the thread pool. Other types go to the reference.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Problem {
  int64_t outer = 1, dim = 0, inner = 1;
  bool exclusive = false, reverse = false;
};

bool problem_of(const KernelContext& ctx, Problem& p) {
  if (ctx.input_count() != 2 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const DataType t = x.dtype();
  if (t != DataType::Float && t != DataType::Double && t != DataType::Int32 && t != DataType::Int64) return false;
  const auto axis_list = int_list(ctx.input_value(1));
  if (!axis_list || axis_list->size() != 1 || x.rank() < 1) return false;
  const int64_t rank = x.rank(), axis = (*axis_list)[0];
  if (axis < -rank || axis >= rank) return false;
  const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  p.dim = x.shape()[a];
  for (size_t d = 0; d < a; ++d) p.outer *= x.shape()[d];
  for (size_t d = a + 1; d < x.shape().size(); ++d) p.inner *= x.shape()[d];
  p.exclusive = ctx.attr_int("exclusive", 0) != 0;
  p.reverse = ctx.attr_int("reverse", 0) != 0;
  return true;
}

bool accepts(const KernelContext& ctx) {
  Problem p;
  return problem_of(ctx, p);
}

template <class T>
void cumsum(const Problem& p, const T* x, T* y) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  const int64_t chunk = std::min<int64_t>(p.inner, 1024);
  const int64_t chunks_per_outer = (p.inner + chunk - 1) / chunk;
  parallel_for(p.outer * chunks_per_outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.dim * chunk)),
               [&](int64_t b, int64_t e) {
                 std::vector<Acc> acc(static_cast<size_t>(chunk));
                 for (int64_t w = b; w < e; ++w) {
                   const int64_t o = w / chunks_per_outer, i0 = (w % chunks_per_outer) * chunk;
                   const int64_t n = std::min(chunk, p.inner - i0);
                   std::fill(acc.begin(), acc.begin() + n, Acc(0));
                   for (int64_t step = 0; step < p.dim; ++step) {
                     const int64_t j = p.reverse ? p.dim - 1 - step : step;
                     const int64_t off = (o * p.dim + j) * p.inner + i0;
                     const T* in = x + off;
                     T* out = y + off;
                     Acc* a = acc.data();
                     if (p.exclusive) {
                       for (int64_t i = 0; i < n; ++i) {
                         out[i] = static_cast<T>(a[i]);
                         a[i] += static_cast<Acc>(in[i]);
                       }
                     } else {
                       for (int64_t i = 0; i < n; ++i) {
                         a[i] += static_cast<Acc>(in[i]);
                         out[i] = static_cast<T>(a[i]);
                       }
                     }
                   }
                 }
               });
}

void CumSum(KernelContext& ctx) {
  Problem p;
  if (!problem_of(ctx, p)) ctx.fail("problem not supported by the cpu CumSum");
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), x.shape());
  if (x.element_count() == 0) return;
  switch (x.dtype()) {
    case DataType::Float: return cumsum(p, x.data<float>(), y.mutable_data<float>());
    case DataType::Double: return cumsum(p, x.data<double>(), y.mutable_data<double>());
    case DataType::Int32: return cumsum(p, x.data<int32_t>(), y.mutable_data<int32_t>());
    default: return cumsum(p, x.data<int64_t>(), y.mutable_data<int64_t>());
  }
}

}  // namespace

void register_cumsum_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "CumSum", 11, INT_MAX, "cpu-loop", CumSum, accepts});
}

}  // namespace onnxscope::cpu
