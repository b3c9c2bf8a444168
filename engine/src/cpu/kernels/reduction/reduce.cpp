// Float32 reductions of the CPU engine (ReduceSum, ReduceMean, ReduceMax,
// ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp) when the reduced axes form one block once neighbouring
// axes are merged: the input is viewed as [outer, R, inner]. inner == 1
// reduces contiguous rows; otherwise rows of `inner` elements are combined
// into an accumulator row, both vectorised with Eigen and split across the
// thread pool. Several separate reduced blocks, an empty reduction and
// noop_with_empty_axes are left to the reference.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized (as in clamp.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <optional>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/reduction/row_extreme.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using Map = Eigen::Map<Arr>;
using CMap = Eigen::Map<const Arr>;

constexpr int64_t kGrain = 16384;

// Elementwise max / min that give NaN when either side is NaN (numpy's maximum.reduce).
using NanMax = Eigen::internal::scalar_max_op<float, float, Eigen::PropagateNaN>;
using NanMin = Eigen::internal::scalar_min_op<float, float, Eigen::PropagateNaN>;

enum class Kind { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

std::optional<Kind> kind_of(const std::string& op) {
  static const std::pair<const char*, Kind> table[] = {
      {"ReduceSum", Kind::Sum},   {"ReduceMean", Kind::Mean}, {"ReduceMax", Kind::Max},
      {"ReduceMin", Kind::Min},   {"ReduceProd", Kind::Prod}, {"ReduceL1", Kind::L1},
      {"ReduceL2", Kind::L2},     {"ReduceSumSquare", Kind::SumSquare}, {"ReduceLogSum", Kind::LogSum},
      {"ReduceLogSumExp", Kind::LogSumExp}};
  for (const auto& [name, k] : table)
    if (op == name) return k;
  return std::nullopt;
}

// Axes come from an input from ReduceSum-13 and every other reduction's 18.
bool axes_from_input(const KernelContext& ctx) {
  return ctx.opset_version() >= (ctx.node().op_type == "ReduceSum" ? 13 : 18);
}

struct Problem {
  Kind kind = Kind::Sum;
  int64_t outer = 1, reduced = 1, inner = 1;
  Shape out;
};

std::optional<Problem> problem_of(const KernelContext& ctx) {
  const std::optional<Kind> kind = kind_of(ctx.node().op_type);
  const Value* xv = ctx.input_count() >= 1 ? ctx.input_value(0) : nullptr;
  if (!kind || !xv || !xv->is_tensor() || xv->tensor().dtype() != DataType::Float) return std::nullopt;
  const Tensor& x = xv->tensor();
  const int64_t rank = x.rank();
  std::vector<int64_t> axes;
  if (axes_from_input(ctx)) {
    if (ctx.input_count() > 2) return std::nullopt;
    if (ctx.input_count() == 2 && ctx.input_value(1)) {
      const Value* a = ctx.input_value(1);
      if (!a->is_tensor() || a->tensor().dtype() != DataType::Int64) return std::nullopt;
      const auto* p = a->tensor().data<int64_t>();
      axes.assign(p, p + a->tensor().element_count());
    }
  } else {
    if (ctx.input_count() != 1) return std::nullopt;
    axes = ctx.attr_ints("axes");
  }
  const bool noop_if_empty = ctx.attr_int("noop_with_empty_axes", 0) != 0;
  if (axes.empty() && noop_if_empty) return std::nullopt;
  std::vector<bool> reduce(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;  // the reference names the error
    const size_t d = static_cast<size_t>(a < 0 ? a + rank : a);
    if (reduce[d] && !axes.empty()) return std::nullopt;  // repeated axis
    reduce[d] = true;
  }
  Problem p;
  p.kind = *kind;
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  // The reduced dims must be one block among the dims larger than 1.
  int state = 0;  // 0: before the block, 1: in it, 2: after it
  for (size_t d = 0; d < reduce.size(); ++d) {
    const int64_t n = x.shape()[d];
    if (reduce[d]) {
      if (keepdims) p.out.push_back(1);
      p.reduced *= n;
      if (n != 1) {
        if (state == 2) return std::nullopt;
        state = 1;
      }
    } else {
      p.out.push_back(n);
      if (n != 1 && state == 1) state = 2;
      (state == 0 ? p.outer : p.inner) *= n;
    }
  }
  if (p.reduced == 0 || p.outer * p.inner == 0) return std::nullopt;
  return p;
}

bool accepts(const KernelContext& ctx) { return problem_of(ctx).has_value(); }

// row_extreme (row_extreme.h), NaN when any element is NaN (Eigen's
// NaN-propagating maxCoeff is scalar): 16-wide AVX-512 or 8-wide AVX2
// max/min with the NaN found by an unordered compare, chosen at run time;
// plain C++ otherwise.
__attribute__((target("avx512f"))) float row_extreme_avx512(const float* x, int64_t n, bool max) {
  __m512 m = _mm512_set1_ps(x[0]);
  __mmask16 nan = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    m = max ? _mm512_max_ps(m, v) : _mm512_min_ps(m, v);
  }
  float r = max ? _mm512_reduce_max_ps(m) : _mm512_reduce_min_ps(m);
  bool any = nan != 0;
  for (; i < n; ++i) {
    any = any || x[i] != x[i];
    r = max ? (x[i] > r ? x[i] : r) : (x[i] < r ? x[i] : r);
  }
  return any ? std::numeric_limits<float>::quiet_NaN() : r;
}

__attribute__((target("avx2"))) float row_extreme_avx2(const float* x, int64_t n, bool max) {
  __m256 m = _mm256_set1_ps(x[0]), nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    m = max ? _mm256_max_ps(m, v) : _mm256_min_ps(m, v);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float r = lanes[0];
  for (int l = 1; l < 8; ++l) r = max ? (lanes[l] > r ? lanes[l] : r) : (lanes[l] < r ? lanes[l] : r);
  bool any = _mm256_movemask_ps(nan) != 0;
  for (; i < n; ++i) {
    any = any || x[i] != x[i];
    r = max ? (x[i] > r ? x[i] : r) : (x[i] < r ? x[i] : r);
  }
  return any ? std::numeric_limits<float>::quiet_NaN() : r;
}

}  // namespace

float row_extreme(const float* x, int64_t n, bool max) {
  static const int isa = ONNXSCOPE_CPU_AVX512("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
  if (isa == 2) return row_extreme_avx512(x, n, max);
  if (isa == 1) return row_extreme_avx2(x, n, max);
  const CMap a(x, n);
  return max ? a.maxCoeff<Eigen::PropagateNaN>() : a.minCoeff<Eigen::PropagateNaN>();
}

namespace {

// One contiguous row of n elements reduced to a value.
float reduce_row(Kind k, const float* x, int64_t n) {
  const CMap a(x, n);
  switch (k) {
    case Kind::Sum: case Kind::Mean: return a.sum();
    case Kind::Max: return row_extreme(x, n, true);
    case Kind::Min: return row_extreme(x, n, false);
    case Kind::Prod: return a.prod();
    case Kind::L1: return a.abs().sum();
    case Kind::L2: case Kind::SumSquare: return a.square().sum();
    case Kind::LogSum: return a.sum();
    case Kind::LogSumExp: {
      const float m = row_extreme(x, n, true);
      if (!std::isfinite(m)) return std::log((a.exp()).sum());  // +-inf or NaN: the plain formula says which
      return m + std::log((a - m).exp().sum());
    }
  }
  return 0;
}

// Rows x[r * stride .. + n) for r < reduced, combined into out[0 .. n).
void reduce_rows(Kind k, const float* x, int64_t reduced, int64_t stride, int64_t n, float* out) {
  Map acc(out, n);
  auto row = [&](int64_t r) { return CMap(x + r * stride, n); };
  switch (k) {
    case Kind::Sum: case Kind::Mean: case Kind::LogSum:
      acc = row(0);
      for (int64_t r = 1; r < reduced; ++r) acc += row(r);
      return;
    case Kind::Max:
      acc = row(0);
      for (int64_t r = 1; r < reduced; ++r) acc = acc.binaryExpr(row(r), NanMax());
      return;
    case Kind::Min:
      acc = row(0);
      for (int64_t r = 1; r < reduced; ++r) acc = acc.binaryExpr(row(r), NanMin());
      return;
    case Kind::Prod:
      acc = row(0);
      for (int64_t r = 1; r < reduced; ++r) acc *= row(r);
      return;
    case Kind::L1:
      acc = row(0).abs();
      for (int64_t r = 1; r < reduced; ++r) acc += row(r).abs();
      return;
    case Kind::L2: case Kind::SumSquare:
      acc = row(0).square();
      for (int64_t r = 1; r < reduced; ++r) acc += row(r).square();
      return;
    case Kind::LogSumExp: {
      acc = row(0);
      for (int64_t r = 1; r < reduced; ++r) acc = acc.binaryExpr(row(r), NanMax());
      Arr m = acc;
      // Where the maximum is not finite the plain formula is used (shift 0).
      m = m.isFinite().select(m, 0.0f);
      acc = (row(0) - m).exp();
      for (int64_t r = 1; r < reduced; ++r) acc += (row(r) - m).exp();
      acc = acc.log() + m;
      return;
    }
  }
}

// Mean, L2 and LogSum finish with a division, a square root or a log.
void finish(Kind k, float* y, int64_t n, int64_t reduced) {
  Map a(y, n);
  if (k == Kind::Mean) a /= static_cast<float>(reduced);
  // Eigen's fast-math square root on SSE (rsqrt and a Newton step) gives NaN for +inf.
  else if (k == Kind::L2) a = (a == std::numeric_limits<float>::infinity()).select(a, a.sqrt());
  else if (k == Kind::LogSum) a = a.log();
}

void Reduce(KernelContext& ctx) {
  const std::optional<Problem> p = problem_of(ctx);
  if (!p) ctx.fail("problem not supported by the CPU reduction kernel");
  const Tensor& x = ctx.input(0);
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, p->out);
  const float* in = x.data<float>();
  float* y = yt.mutable_data<float>();
  const int64_t outer = p->outer, reduced = p->reduced, inner = p->inner;
  if (inner == 1) {
    parallel_for(outer, std::max<int64_t>(1, kGrain / reduced), [&](int64_t o0, int64_t o1) {
      for (int64_t o = o0; o < o1; ++o) y[o] = reduce_row(p->kind, in + o * reduced, reduced);
      finish(p->kind, y + o0, o1 - o0, reduced);
    });
    return;
  }
  // Split each outer index's inner row in chunks too, so one large block
  // still uses every thread: at most 1024 lanes, and narrower (to a multiple
  // of 16) where the outer rows alone leave threads idle and each share is
  // still worth a hand-off (8 grains; LogSumExp's two exponentials an
  // element count 8): ReduceLogSumExp over [1, 128, 768]'s sequence was one
  // task. Each lane's result is the same either way.
  const LaneShare share = share_lanes(outer, inner, 16);
  const int64_t weight = p->kind == Kind::LogSumExp ? 8 : 1;
  int64_t chunk = std::min<int64_t>(inner, 1024);
  if (share.per_row > 1 && weight * reduced * inner / share.per_row >= 8 * kGrain) chunk = std::min(chunk, share.lanes);
  const int64_t chunks = (inner + chunk - 1) / chunk;
  parallel_for(outer * chunks, std::max<int64_t>(1, kGrain / (reduced * chunk)), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o = t / chunks, c0 = (t % chunks) * chunk, len = std::min(chunk, inner - c0);
      float* out = y + o * inner + c0;
      reduce_rows(p->kind, in + o * reduced * inner + c0, reduced, inner, len, out);
      finish(p->kind, out, len, reduced);
    }
  });
}

// GlobalAveragePool and GlobalMaxPool of plain float32 [N, C, spatial...]:
// each (n, c) plane is a contiguous row, its mean summed in double as the
// reference's is (a plane of 1e30 and -1e30 keeps its small values), its
// maximum NaN when any value is. oneDNN's
// pooling on plain layouts is slower on the small planes ([1, 1280, 7, 7]:
// 2.2x); a blocked (NCHWc) neighbourhood keeps oneDNN's blocked pool.
// A row's sum in double: 8 independent lanes, which the compiler widens and
// adds as vectors (AVX-512 / AVX2 / baseline builds).
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") double sum_in_double(const float* x, int64_t n) {
  double lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(x[i + l]);
  double r = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (; i < n; ++i) r += static_cast<double>(x[i]);
  return r;
}

bool global_pool_accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  return x.dtype() == DataType::Float && x.rank() >= 3 && x.element_count() > 0;
}

template <bool Max>
void GlobalPool(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Shape out(x.shape().size(), 1);
  out[0] = x.shape()[0];
  out[1] = x.shape()[1];
  const int64_t planes = out[0] * out[1], size = static_cast<int64_t>(x.element_count()) / planes;
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, out);
  const float* in = x.data<float>();
  float* y = yt.mutable_data<float>();
  parallel_for(planes, std::max<int64_t>(1, kGrain / size), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      y[p] = Max ? row_extreme(in + p * size, size, true)
                 : static_cast<float>(sum_in_double(in + p * size, size) / static_cast<double>(size));
  });
}

}  // namespace

void register_global_pool_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "GlobalAveragePool", 1, INT_MAX, "cpu-eigen", GlobalPool<false>, global_pool_accepts});
  r.add(KernelDef{"", "GlobalMaxPool", 1, INT_MAX, "cpu-simd", GlobalPool<true>, global_pool_accepts});
}

void register_reduce_kernels(KernelRegistry& r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"})
    r.add(KernelDef{"", op, 1, INT_MAX, "cpu-eigen", Reduce, accepts});
}

}  // namespace onnxscope::cpu
