// The activation a fused node (FusedConv, NchwcConv: cpu/fused_ops.h's
// `activation` / `activation_params`) applies to its result, computed in
// AVX-512 registers by the CPU engine's own convolution kernels as they
// store each tile, so no pass over the output follows the product.
#pragma once

#include <immintrin.h>

#include <string>
#include <vector>

#include "cpu/kernels/math/vector_math_avx512.h"
#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

enum class Act { None, Relu, LeakyRelu, Clip, HardSigmoid, HardSwish, Sigmoid, Tanh, Swish, GeluErf, GeluTanh };

struct FusedActivation {
  Act act = Act::None;
  float a = 0, b = 0;  // LeakyRelu alpha; Clip min, max; HardSigmoid alpha, beta; Swish alpha
};

// The node's fused activation, or false for one these kernels do not compute
// (left to oneDNN's post-ops).
inline bool fused_activation_of(const KernelContext& ctx, FusedActivation& f) {
  const std::string op = ctx.attr_string("activation", "");
  const std::vector<float> v = ctx.attr_floats("activation_params");
  auto want = [&](size_t n) { return v.size() == n; };
  if (op.empty()) return want(0);
  if (op == "Relu" && want(0)) f.act = Act::Relu;
  else if (op == "LeakyRelu" && want(1)) f.act = Act::LeakyRelu;
  else if (op == "Clip" && want(2) && v[0] <= v[1]) f.act = Act::Clip;
  else if (op == "HardSigmoid" && want(2)) f.act = Act::HardSigmoid;
  else if (op == "HardSwish" && want(0)) f.act = Act::HardSwish;
  else if (op == "Sigmoid" && want(0)) f.act = Act::Sigmoid;
  else if (op == "Tanh" && want(0)) f.act = Act::Tanh;
  else if (op == "Swish" && want(1)) f.act = Act::Swish;
  else if (op == "Gelu" && want(1)) f.act = v[0] != 0.0f ? Act::GeluTanh : Act::GeluErf;
  else return false;
  f.a = v.size() > 0 ? v[0] : 0.f;
  f.b = v.size() > 1 ? v[1] : 0.f;
  return true;
}

// Comparisons written so that NaN passes through, as the activations' kernels let it.
__attribute__((target("avx512f"), always_inline)) inline __m512 activate(const FusedActivation& f, __m512 v) {
  const __m512 zero = _mm512_setzero_ps();
  switch (f.act) {
    case Act::None: return v;
    case Act::Sigmoid: return avx512::sigmoid(v);
    case Act::Tanh: return avx512::tanh(v);
    // x sigmoid(alpha x); alpha 1 gives silu_in_place's bits (the product by 1 is exact)
    case Act::Swish: return _mm512_mul_ps(v, avx512::sigmoid(_mm512_mul_ps(v, _mm512_set1_ps(f.a))));
    case Act::GeluErf: {  // x/2 (1 + erf(x / sqrt 2))
      const __m512 e = avx512::erf(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f)));
      return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.5f)), _mm512_add_ps(e, _mm512_set1_ps(1.0f)));
    }
    case Act::GeluTanh: {  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
      const __m512 u = _mm512_mul_ps(_mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), v), _mm512_set1_ps(0.79788456080286536f));
      return _mm512_mul_ps(_mm512_mul_ps(v, _mm512_set1_ps(0.5f)), _mm512_add_ps(avx512::tanh(u), _mm512_set1_ps(1.0f)));
    }
    case Act::Relu: return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
    case Act::LeakyRelu: return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, _mm512_set1_ps(f.a));
    case Act::Clip: {
      const __m512 lo = _mm512_set1_ps(f.a), hi = _mm512_set1_ps(f.b);
      v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ), lo);
      return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), hi);
    }
    case Act::HardSigmoid:
    case Act::HardSwish: {
      const bool swish = f.act == Act::HardSwish;
      __m512 t = swish ? _mm512_fmadd_ps(v, _mm512_set1_ps(1.0f / 6), _mm512_set1_ps(0.5f))
                       : _mm512_fmadd_ps(v, _mm512_set1_ps(f.a), _mm512_set1_ps(f.b));
      const __m512 one = _mm512_set1_ps(1.0f);
      t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, zero, _CMP_LT_OQ), zero);
      t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, one, _CMP_GT_OQ), one);
      return swish ? _mm512_mul_ps(v, t) : t;
    }
  }
  return v;
}

}  // namespace onnxscope::cpu
