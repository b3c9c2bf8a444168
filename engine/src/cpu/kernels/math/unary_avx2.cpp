// Float32 unary operators on CPUs with AVX2 and FMA but no AVX-512: the
// functions of unary_avx512.cpp, Exp, Sigmoid, Tanh, Erf and both Gelus
// in AVX2 intrinsics (vector_math_avx2.h), the rest written branch-free
// (vector_exp.h) in loops the compiler vectorises for x86-64-v3. Registered
// right after the AVX-512 kernels, ahead of oneDNN's eltwise and the Eigen
// kernels, which on an AVX2 EPYC ran Exp at 0.58-0.75x onnxruntime (oneDNN,
// with a second pass for its NaN), Sin and Cos at 0.26-0.49x, Mish and
// Softplus at 0.43-0.64x, Erf at 0.63-0.68x and Relu at 0.62-0.68x (Eigen
// built for SSE2). The compiler's loops of vector_exp.h's scalar forms
// left Exp, Erf and Sigmoid at 0.35-0.65x (its 2^n with NaN and range
// selects, a division), and Eigen's Tanh at 0.52x. The same values as the
// AVX-512 kernels within the harness's 2e-6 of the reference over every
// binade (cpu_ops_threads_test).
#include <immintrin.h>

#include <algorithm>
#include <climits>  // INT_MAX
#include <cmath>
#include <cstdint>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_exp.h"
#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/output.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kGrain = 16384;

#define ONNXSCOPE_UNARY_LOOP(name, expr)                                                               \
  ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")                                             \
  void name(const float* __restrict x, float* __restrict y, int64_t n) {                               \
    for (int64_t i = 0; i < n; ++i) y[i] = expr;                                                       \
  }
// x where !(x <= 0) (NaN kept, as the reference's Relu), else +0.
ONNXSCOPE_UNARY_LOOP(relu_run, !(x[i] <= 0.0f) ? x[i] : 0.0f)
ONNXSCOPE_UNARY_LOOP(softplus_run, softplus_poly(x[i]))
ONNXSCOPE_UNARY_LOOP(mish_run, mish_poly(x[i]))
#undef ONNXSCOPE_UNARY_LOOP

// y = f(x) over n floats, 8 at a time, the tail through a masked load and
// store (the same code path as the rest; masked lanes are not read).
#define ONNXSCOPE_MAP8(name, f)                                                                      \
  __attribute__((target("avx2,fma"))) void name(const float* x, float* y, int64_t n) {             \
    int64_t i = 0;                                                                                 \
    for (; i + 32 <= n; i += 32) { /* four chains at a time: each is long */                      \
      const __m256 a = f(_mm256_loadu_ps(x + i)), b = f(_mm256_loadu_ps(x + i + 8));               \
      const __m256 c = f(_mm256_loadu_ps(x + i + 16)), d = f(_mm256_loadu_ps(x + i + 24));         \
      _mm256_storeu_ps(y + i, a);                                                                  \
      _mm256_storeu_ps(y + i + 8, b);                                                              \
      _mm256_storeu_ps(y + i + 16, c);                                                             \
      _mm256_storeu_ps(y + i + 24, d);                                                             \
    }                                                                                              \
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));                 \
    if (i < n) {                                                                                   \
      const __m256i m = avx2::tail_mask(n - i);                                                    \
      _mm256_maskstore_ps(y + i, m, f(_mm256_maskload_ps(x + i, m)));                              \
    }                                                                                              \
  }
// Exp: 0 below FLT_MIN, as the AVX-512 kernel (a subnormal slows every product that meets it).
ONNXSCOPE_MAP8(exp_run, avx2::exp)
ONNXSCOPE_MAP8(sigmoid_run, avx2::sigmoid)
ONNXSCOPE_MAP8(tanh_run, avx2::tanh)

// Erf, and Gelu (approximate="none": x/2 (1 + erf(x / sqrt 2)), as the
// reference writes it; oneDNN's AVX2 gelu_erf ran at 0.75x onnxruntime):
// erf_k's steps over four vectors at a time, the rest one at a time.
template <int K>
__attribute__((target("avx2,fma"), always_inline)) inline void gelu_erf(__m256 (&v)[K]) {
  __m256 e[K];
  for (int k = 0; k < K; ++k) e[k] = _mm256_mul_ps(v[k], _mm256_set1_ps(0.70710678118654752f));
  avx2::erf_k<K>(e);
  for (int k = 0; k < K; ++k)
    v[k] = _mm256_mul_ps(_mm256_mul_ps(v[k], _mm256_set1_ps(0.5f)), _mm256_add_ps(e[k], _mm256_set1_ps(1.0f)));
}
#define ONNXSCOPE_MAP8X4(name, f4, f1)                                                                \
  __attribute__((target("avx2,fma"))) void name(const float* x, float* y, int64_t n) {              \
    int64_t i = 0;                                                                                  \
    for (; i + 32 <= n; i += 32) {                                                                  \
      __m256 v[4];                                                                                  \
      for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + i + 8 * k);                            \
      f4(v);                                                                                        \
      for (int k = 0; k < 4; ++k) _mm256_storeu_ps(y + i + 8 * k, v[k]);                            \
    }                                                                                               \
    for (; i < n; i += 8) {                                                                         \
      const __m256i m = avx2::tail_mask(n - i);                                                     \
      __m256 v[1] = {_mm256_maskload_ps(x + i, m)};                                                 \
      f1(v);                                                                                        \
      _mm256_maskstore_ps(y + i, m, v[0]);                                                          \
    }                                                                                               \
  }
ONNXSCOPE_MAP8X4(erf_run, avx2::erf_k<4>, avx2::erf_k<1>)
ONNXSCOPE_MAP8X4(gelu_erf_run, gelu_erf<4>, gelu_erf<1>)
#undef ONNXSCOPE_MAP8X4

// Gelu with approximate="tanh", x/2 (1 + tanh(u)) with u = sqrt(2/pi) (x +
// 0.044715 x^3), as x sigmoid(2u): the same function without 1 + tanh(u)
// cancelling where u is far below 0. oneDNN's AVX2 eltwise took ~10 cycles
// an element (GPT-2's 12 Gelus after a Gemm and a Reshape: 6% of its time).
__attribute__((target("avx2,fma"), always_inline)) inline __m256 gelu_tanh(__m256 x) {
  const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  const __m256 u2 = _mm256_mul_ps(_mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x), _mm256_set1_ps(2 * 0.79788456080286536f));
  return _mm256_mul_ps(x, avx2::sigmoid(u2));
}
ONNXSCOPE_MAP8(gelu_tanh_run, gelu_tanh)
#undef ONNXSCOPE_MAP8

// Sin and Cos reduce exactly only below 2^13: a larger |x|, inf or NaN is
// computed by the C library afterwards (in double, then rounded, as the
// reference does).
template <bool Cos>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
bool sincos_loop(const float* __restrict x, float* __restrict y, int64_t n) {
  int big = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = sincos_poly<Cos>(x[i]);
    big |= !(std::fabs(x[i]) <= 8192.0f);
  }
  return big != 0;
}
template <bool Cos>
void sincos_run(const float* x, float* y, int64_t n) {
  if (!sincos_loop<Cos>(x, y, n)) return;
  for (int64_t i = 0; i < n; ++i)
    if (!(std::fabs(x[i]) <= 8192.0f))
      y[i] = static_cast<float>(Cos ? std::cos(static_cast<double>(x[i])) : std::sin(static_cast<double>(x[i])));
}

using RunFn = void (*)(const float*, float*, int64_t);

template <RunFn Run>
void Kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(static_cast<int64_t>(x.element_count()), kGrain, [&](int64_t b, int64_t e) { Run(in + b, out + b, e - b); });
}

bool accepts(const KernelContext& ctx) {
  static const bool avx2 =
      !ONNXSCOPE_CPU_AVX512("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!avx2 || ctx.input_count() != 1) return false;
  const Value* x = ctx.input_value(0);
  return x && x->is_tensor() && x->tensor().dtype() == DataType::Float;
}

// Gelu (ai.onnx 20, or onnxscope.cpu's below opset 20), each approximation.
bool accepts_gelu_tanh(const KernelContext& ctx) { return accepts(ctx) && ctx.attr_string("approximate", "none") == "tanh"; }
bool accepts_gelu_erf(const KernelContext& ctx) { return accepts(ctx) && ctx.attr_string("approximate", "none") == "none"; }

struct Unary {
  const char* op;
  int since;
  KernelFn fn;
};
constexpr Unary kUnary[] = {
    {"Relu", 6, Kernel<relu_run>},         {"Exp", 6, Kernel<exp_run>},           {"Erf", 9, Kernel<erf_run>},
    {"Sigmoid", 6, Kernel<sigmoid_run>},   {"Tanh", 6, Kernel<tanh_run>},
    {"Softplus", 1, Kernel<softplus_run>}, {"Mish", 18, Kernel<mish_run>},
    {"Sin", 7, Kernel<sincos_run<false>>}, {"Cos", 7, Kernel<sincos_run<true>>},
};

}  // namespace

void register_unary_avx2_kernels(KernelRegistry& r) {
  for (const Unary& u : kUnary) r.add(KernelDef{"", u.op, u.since, INT_MAX, "cpu-simd", u.fn, accepts});
  r.add(KernelDef{"", kGelu, 20, INT_MAX, "cpu-simd", Kernel<gelu_tanh_run>, accepts_gelu_tanh});
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "cpu-simd", Kernel<gelu_tanh_run>, accepts_gelu_tanh});
  r.add(KernelDef{"", kGelu, 20, INT_MAX, "cpu-simd", Kernel<gelu_erf_run>, accepts_gelu_erf});
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "cpu-simd", Kernel<gelu_erf_run>, accepts_gelu_erf});
}

}  // namespace onnxscope::cpu
