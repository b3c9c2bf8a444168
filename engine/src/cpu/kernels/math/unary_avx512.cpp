// Float32 unary operators on AVX-512 (vector_math_avx512.h), threaded over
// the flat tensor. Registered ahead of oneDNN's eltwise and the Eigen
// kernels, and accepting only where the CPU has AVX-512: elsewhere those run.
// Why not oneDNN's: its exp turns NaN into inf (a second pass put it back:
// Exp ran at 0.4x onnxruntime); Log, Softplus, Mish, Erf, Sin and Cos were
// Eigen built for SSE2 (Sin and Cos at 0.34x); and for the memory-bound
// Relu and Abs, one pass of our own beat oneDNN's primitive set-up.
#include <cmath>
#include <cstdint>
#include <climits>  // INT_MAX
#include <cstring>
#include <string>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_math_avx512.h"
#include "cpu/kernels/output.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "onnxscope/float_formats.h"

namespace onnxscope::cpu {
namespace {

namespace v = avx512;

constexpr int64_t kGrain = 16384;

#define ONNXSCOPE_AVX512 __attribute__((target("avx512f")))
#define ONNXSCOPE_AVX512_INLINE __attribute__((target("avx512f"), always_inline)) inline

// y = f(x) over n floats: 16 at a time, the tail through a masked load and
// store (so the tail takes the same code path as the rest).
#define ONNXSCOPE_MAP16(f)                                                      \
  int64_t i = 0;                                                                \
  for (; i + 64 <= n; i += 64) { /* four chains at a time: each is long */     \
    const __m512 a = f(_mm512_loadu_ps(x + i)), b = f(_mm512_loadu_ps(x + i + 16)); \
    const __m512 c = f(_mm512_loadu_ps(x + i + 32)), d = f(_mm512_loadu_ps(x + i + 48)); \
    _mm512_storeu_ps(y + i, a);                                                 \
    _mm512_storeu_ps(y + i + 16, b);                                            \
    _mm512_storeu_ps(y + i + 32, c);                                            \
    _mm512_storeu_ps(y + i + 48, d);                                            \
  }                                                                             \
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i))); \
  if (i < n) {                                                                  \
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);           \
    _mm512_mask_storeu_ps(y + i, m, f(_mm512_maskz_loadu_ps(m, x + i)));        \
  }

// float16 in and out, float32 in the registers: each result rounded once,
// to nearest even, as Cast(f(Cast(x, float)), float16) rounds it (the same
// bits as the Casts the compute-low-precision-in-float32 pass would put
// around the node, without their two passes over memory). The tail goes
// through 16 halves on the stack.
ONNXSCOPE_AVX512_INLINE __m512 load_half(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
ONNXSCOPE_AVX512_INLINE void store_half(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  // NaN: the Cast kernel's bits (the reference's payload rule), not the instruction's.
  if (const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)) {
    alignas(64) float f[16];
    _mm512_store_ps(f, v);
    for (int k = 0; k < 16; ++k)
      if (nan & (1u << k)) p[k] = float_to_half(f[k]);
  }
}
#define ONNXSCOPE_MAP16_HALF(f)                                                  \
  int64_t i = 0;                                                                 \
  for (; i + 16 <= n; i += 16) store_half(y + i, f(load_half(x + i)));           \
  if (i < n) {                                                                   \
    uint16_t t[16] = {};                                                         \
    std::memcpy(t, x + i, static_cast<size_t>(n - i) * sizeof(uint16_t));        \
    store_half(t, f(load_half(t)));                                              \
    std::memcpy(y + i, t, static_cast<size_t>(n - i) * sizeof(uint16_t));        \
  }

#define ONNXSCOPE_UNARY(name, expr)                                          \
  ONNXSCOPE_AVX512_INLINE __m512 name##_one(__m512 a) { return expr; }       \
  ONNXSCOPE_AVX512 void name##_run(const float* x, float* y, int64_t n) { ONNXSCOPE_MAP16(name##_one) } \
  ONNXSCOPE_AVX512 void name##_run_half(const uint16_t* x, uint16_t* y, int64_t n) { ONNXSCOPE_MAP16_HALF(name##_one) }

// x where !(x <= 0) (NaN kept, as the reference's Relu), else +0.
ONNXSCOPE_UNARY(relu, _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_NLE_UQ), a))
ONNXSCOPE_UNARY(abs, v::abs(a))
ONNXSCOPE_UNARY(exp, v::exp(a))
ONNXSCOPE_UNARY(log, v::log(a))
ONNXSCOPE_UNARY(sigmoid, v::sigmoid(a))
ONNXSCOPE_UNARY(tanh, v::tanh(a))
// Erf, and Gelu (approximate="none": x/2 (1 + erf(x / sqrt 2)), as the
// reference writes it): erf_k's steps over four vectors at a
// time, the rest (and the halves) one at a time.
template <int K>
ONNXSCOPE_AVX512_INLINE void gelu_erf_k(__m512 (&v)[K]) {
  __m512 e[K];
  for (int k = 0; k < K; ++k) e[k] = _mm512_mul_ps(v[k], v::splat(0.70710678118654752f));
  v::erf_k<K>(e);
  for (int k = 0; k < K; ++k) v[k] = _mm512_mul_ps(_mm512_mul_ps(v[k], v::splat(0.5f)), _mm512_add_ps(e[k], v::splat(1.0f)));
}
#define ONNXSCOPE_MAP16X4(name, f4, f1)                                          \
  ONNXSCOPE_AVX512 void name(const float* x, float* y, int64_t n) {              \
    int64_t i = 0;                                                               \
    for (; i + 64 <= n; i += 64) {                                               \
      __m512 t[4];                                                               \
      for (int k = 0; k < 4; ++k) t[k] = _mm512_loadu_ps(x + i + 16 * k);        \
      f4(t);                                                                     \
      for (int k = 0; k < 4; ++k) _mm512_storeu_ps(y + i + 16 * k, t[k]);        \
    }                                                                            \
    for (; i < n; i += 16) {                                                     \
      const __mmask16 m = v::tail_mask(n - i);                                   \
      __m512 t[1] = {_mm512_maskz_loadu_ps(m, x + i)};                           \
      f1(t);                                                                     \
      _mm512_mask_storeu_ps(y + i, m, t[0]);                                     \
    }                                                                            \
  }
ONNXSCOPE_MAP16X4(erf_run, v::erf_k<4>, v::erf_k<1>)
ONNXSCOPE_MAP16X4(gelu_erf_run, gelu_erf_k<4>, gelu_erf_k<1>)
#undef ONNXSCOPE_MAP16X4
ONNXSCOPE_AVX512_INLINE __m512 erf_one(__m512 a) { return v::erf(a); }
ONNXSCOPE_AVX512_INLINE __m512 gelu_erf_one(__m512 a) {
  __m512 t[1] = {a};
  gelu_erf_k<1>(t);
  return t[0];
}
ONNXSCOPE_AVX512 void gelu_erf_run_half(const uint16_t* x, uint16_t* y, int64_t n) { ONNXSCOPE_MAP16_HALF(gelu_erf_one) }
ONNXSCOPE_AVX512 void erf_run_half(const uint16_t* x, uint16_t* y, int64_t n) { ONNXSCOPE_MAP16_HALF(erf_one) }
// softplus(x) = max(x, 0) + log1p(e^-|x|): finite far right, every digit far left.
ONNXSCOPE_UNARY(softplus, _mm512_add_ps(_mm512_max_ps(a, _mm512_setzero_ps()),
                                        v::log1p_nonneg(v::exp(_mm512_sub_ps(_mm512_setzero_ps(), v::abs(a))))))

// mish(x) = x tanh(softplus(x)) = x n / (n + 2) with n = e^x (e^x + 2); x itself
// above 20, where the ratio is 1 in float32 (and n would overflow).
ONNXSCOPE_AVX512_INLINE __m512 mish_one(__m512 x) {
  const __m512 e = v::exp_subnormal(x);  // x e^x is a normal float down to x = -103
  const __m512 n = _mm512_mul_ps(e, _mm512_add_ps(e, v::splat(2.0f)));
  const __m512 y = _mm512_mul_ps(x, _mm512_mul_ps(n, v::recip(_mm512_add_ps(n, v::splat(2.0f)))));  // n + 2 in [2, 2.4e17]
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, v::splat(20.0f), _CMP_GT_OQ), x);
}
ONNXSCOPE_AVX512 void mish_run(const float* x, float* y, int64_t n) { ONNXSCOPE_MAP16(mish_one) }
ONNXSCOPE_AVX512 void mish_run_half(const uint16_t* x, uint16_t* y, int64_t n) { ONNXSCOPE_MAP16_HALF(mish_one) }

// Sin and Cos reduce exactly only below 2^13: a vector holding a larger
// |x|, inf or NaN is computed by the C library instead (in double, then
// rounded, as the reference does).
template <bool Cos>
ONNXSCOPE_AVX512_INLINE __m512 sincos_one(__m512 a) {
  if (_mm512_cmp_ps_mask(v::abs(a), v::splat(8192.0f), _CMP_NLE_UQ) == 0) return v::sincos<Cos>(a);
  alignas(64) float t[16];
  _mm512_store_ps(t, a);
  for (float& e : t) e = static_cast<float>(Cos ? std::cos(static_cast<double>(e)) : std::sin(static_cast<double>(e)));
  return _mm512_load_ps(t);
}
template <bool Cos>
ONNXSCOPE_AVX512 void sincos_run(const float* x, float* y, int64_t n) { ONNXSCOPE_MAP16(sincos_one<Cos>) }
template <bool Cos>
ONNXSCOPE_AVX512 void sincos_run_half(const uint16_t* x, uint16_t* y, int64_t n) { ONNXSCOPE_MAP16_HALF(sincos_one<Cos>) }

// x sigmoid(x) in place (SiLU, Swish with alpha 1): NchwcConv's own
// epilogue where oneDNN's swish post-op is the slower (silu_after_conv).
ONNXSCOPE_AVX512_INLINE __m512 silu_one(__m512 a) { return _mm512_mul_ps(a, v::sigmoid(a)); }
ONNXSCOPE_AVX512 void silu_run(const float* x, float* y, int64_t n) { ONNXSCOPE_MAP16(silu_one) }

#undef ONNXSCOPE_UNARY
#undef ONNXSCOPE_MAP16
#undef ONNXSCOPE_MAP16_HALF

using RunFn = void (*)(const float*, float*, int64_t);
using HalfRunFn = void (*)(const uint16_t*, uint16_t*, int64_t);

template <RunFn Run, HalfRunFn RunHalf>
void Kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto count = static_cast<int64_t>(x.element_count());
  if (x.dtype() == DataType::Float16) {
    Tensor& y = uninitialized_output(ctx, 0, DataType::Float16, x.shape());
    const auto* in = reinterpret_cast<const uint16_t*>(x.raw());
    auto* out = reinterpret_cast<uint16_t*>(y.mutable_raw());
    parallel_for(count, kGrain, [&](int64_t b, int64_t e) { RunHalf(in + b, out + b, e - b); });
    return;
  }
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(count, kGrain, [&](int64_t b, int64_t e) { Run(in + b, out + b, e - b); });
}

bool accepts(const KernelContext& ctx) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512 || ctx.input_count() != 1) return false;
  const Value* x = ctx.input_value(0);
  return x && x->is_tensor() && (x->tensor().dtype() == DataType::Float || x->tensor().dtype() == DataType::Float16);
}

void add(KernelRegistry& r, const char* op, int since, KernelFn fn) {
  r.add(KernelDef{"", op, since, INT_MAX, "cpu-avx512", fn, accepts});
}

// Every operator here, with the opset it is registered from; each takes
// float32 and float16.
struct Unary {
  const char* op;
  int since;
  KernelFn fn;
};
constexpr Unary kUnary[] = {
    {"Relu", 6, Kernel<relu_run, relu_run_half>},
    {"Abs", 6, Kernel<abs_run, abs_run_half>},
    {"Exp", 6, Kernel<exp_run, exp_run_half>},
    {"Log", 6, Kernel<log_run, log_run_half>},
    {"Sigmoid", 6, Kernel<sigmoid_run, sigmoid_run_half>},
    {"Tanh", 6, Kernel<tanh_run, tanh_run_half>},
    {"Erf", 9, Kernel<erf_run, erf_run_half>},
    {"Softplus", 1, Kernel<softplus_run, softplus_run_half>},
    {"Mish", 18, Kernel<mish_run, mish_run_half>},
    {"Sin", 7, Kernel<sincos_run<false>, sincos_run_half<false>>},
    {"Cos", 7, Kernel<sincos_run<true>, sincos_run_half<true>>},
};

}  // namespace

bool unary_avx512_takes_half(const std::string& op) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512) return false;
  for (const Unary& u : kUnary)
    if (op == u.op) return true;
  return false;
}

void silu_in_place(float* y, int64_t n) {
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) { silu_run(y + b, y + b, e - b); });
}

void register_unary_avx512_kernels(KernelRegistry& r) {
  for (const Unary& u : kUnary) add(r, u.op, u.since, u.fn);
  // Gelu (ai.onnx 20, or onnxscope.cpu's below opset 20) without approximation.
  const auto gelu_erf = [](const KernelContext& ctx) { return accepts(ctx) && ctx.attr_string("approximate", "none") == "none"; };
  r.add(KernelDef{"", kGelu, 20, INT_MAX, "cpu-avx512", Kernel<gelu_erf_run, gelu_erf_run_half>, gelu_erf});
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "cpu-avx512", Kernel<gelu_erf_run, gelu_erf_run_half>, gelu_erf});
}

}  // namespace onnxscope::cpu
