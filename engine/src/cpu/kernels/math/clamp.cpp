// Clip and HardSigmoid on float32 with AVX-512 or AVX2 chosen at run time
// (plain C++ otherwise): y = min(hi, max(lo, x)), or min(1, max(0, alpha * x
// + beta)). NaN stays NaN, as numpy's clip and the reference keep it: x86's
// max/min return their second operand when either is NaN, so x goes second.
// (oneDNN's clip turns NaN into the lower bound; cpu_ops_harness_test checks.)
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cmath>
#include <optional>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Clamp {
  bool affine = false;  // alpha * x + beta first (HardSigmoid)
  float alpha = 1, beta = 0, lo = -INFINITY, hi = INFINITY;
};

// std::min/max would drop NaN; these keep it the way the vector code does.
inline float clamp_one(const Clamp& c, float x) {
  float v = c.affine ? c.alpha * x + c.beta : x;
  v = c.lo > v ? c.lo : v;  // NaN: (lo > NaN) is false, v stays NaN
  return c.hi < v ? c.hi : v;
}

__attribute__((target("avx512f"))) void clamp_avx512(const Clamp& c, const float* x, float* y, int64_t n) {
  const __m512 a = _mm512_set1_ps(c.alpha), b = _mm512_set1_ps(c.beta), lo = _mm512_set1_ps(c.lo),
               hi = _mm512_set1_ps(c.hi);
  int64_t i = 0;
  if (c.affine) {
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(y + i, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_add_ps(_mm512_mul_ps(a, _mm512_loadu_ps(x + i)), b))));
  } else {
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_min_ps(hi, _mm512_max_ps(lo, _mm512_loadu_ps(x + i))));
  }
  for (; i < n; ++i) y[i] = clamp_one(c, x[i]);
}

__attribute__((target("avx2"))) void clamp_avx2(const Clamp& c, const float* x, float* y, int64_t n) {
  const __m256 a = _mm256_set1_ps(c.alpha), b = _mm256_set1_ps(c.beta), lo = _mm256_set1_ps(c.lo),
               hi = _mm256_set1_ps(c.hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if (c.affine) v = _mm256_add_ps(_mm256_mul_ps(a, v), b);
    v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
    _mm256_storeu_ps(y + i, v);
  }
  for (; i < n; ++i) y[i] = clamp_one(c, x[i]);
}

void clamp_plain(const Clamp& c, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = clamp_one(c, x[i]);
}

using ClampFn = void (*)(const Clamp&, const float*, float*, int64_t);

ClampFn best() {
  static const ClampFn fn = ONNXSCOPE_CPU_AVX512("avx512f") ? clamp_avx512
                            : __builtin_cpu_supports("avx2")  ? clamp_avx2
                                                              : clamp_plain;
  return fn;
}

std::optional<Clamp> clamp_of(const KernelContext& ctx) {
  const Value* x = ctx.input_count() >= 1 ? ctx.input_value(0) : nullptr;
  if (!x || !x->is_tensor() || x->tensor().dtype() != DataType::Float) return std::nullopt;
  Clamp c;
  if (ctx.node().op_type == "HardSigmoid") {
    if (ctx.input_count() != 1) return std::nullopt;
    c.affine = true;
    c.alpha = ctx.attr_float("alpha", 0.2f);
    c.beta = ctx.attr_float("beta", 0.5f);
    c.lo = 0;
    c.hi = 1;
    return c;
  }
  // Clip: bounds as attributes before opset 11, as optional one-element inputs from 11.
  if (ctx.opset_version() < 11) {
    if (ctx.input_count() != 1) return std::nullopt;
    c.lo = ctx.attr_float("min", -INFINITY);
    c.hi = ctx.attr_float("max", INFINITY);
  } else {
    if (ctx.input_count() > 3) return std::nullopt;
    for (size_t k = 1; k < ctx.input_count(); ++k) {
      if (!ctx.input_value(k)) continue;
      const std::optional<float> b = scalar_float(ctx.input_value(k));
      if (!b) return std::nullopt;
      (k == 1 ? c.lo : c.hi) = *b;
    }
  }
  // A NaN bound, or min above max: the reference's rules.
  if (std::isnan(c.lo) || std::isnan(c.hi) || c.lo > c.hi) return std::nullopt;
  return c;
}

bool accepts(const KernelContext& ctx) { return clamp_of(ctx).has_value(); }

void Run(KernelContext& ctx) {
  const std::optional<Clamp> c = clamp_of(ctx);
  if (!c) ctx.fail("problem not supported by the CPU clamp kernel");
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  const ClampFn fn = best();
  parallel_for(static_cast<int64_t>(x.element_count()), 16384,
               [&](int64_t b, int64_t e) { fn(*c, in + b, out + b, e - b); });
}

}  // namespace

void register_clamp_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Clip", 6, INT_MAX, "cpu-simd", Run, accepts});
  r.add(KernelDef{"", "HardSigmoid", 6, INT_MAX, "cpu-simd", Run, accepts});
}

}  // namespace onnxscope::cpu
