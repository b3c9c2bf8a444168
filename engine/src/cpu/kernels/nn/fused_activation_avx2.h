// fused_activation_avx512.h's activations on 8 lanes of AVX2 (vector_math_avx2.h),
// for the AVX2 float product's stores (math/float_gemm_avx2.cpp).
#pragma once

#include <immintrin.h>

#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/nn/fused_activation_avx512.h"  // FusedActivation

namespace onnxscope::cpu {

// Comparisons written so that NaN passes through, as the activations' kernels let it.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 activate_avx2(const FusedActivation& f, __m256 v) {
  const __m256 zero = _mm256_setzero_ps();
  switch (f.act) {
    case Act::None: return v;
    case Act::Sigmoid: return avx2::sigmoid(v);
    case Act::Tanh: return avx2::tanh(v);
    case Act::Swish: return _mm256_mul_ps(v, avx2::sigmoid(_mm256_mul_ps(v, _mm256_set1_ps(f.a))));
    case Act::GeluErf: {  // x/2 (1 + erf(x / sqrt 2))
      const __m256 e = avx2::erf(_mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)));
      return _mm256_mul_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.5f)), _mm256_add_ps(e, _mm256_set1_ps(1.0f)));
    }
    case Act::GeluTanh: {  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(v, v), v);
      const __m256 u = _mm256_mul_ps(_mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), v), _mm256_set1_ps(0.79788456080286536f));
      return _mm256_mul_ps(_mm256_mul_ps(v, _mm256_set1_ps(0.5f)), _mm256_add_ps(avx2::tanh(u), _mm256_set1_ps(1.0f)));
    }
    case Act::Relu: return _mm256_blendv_ps(v, zero, _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    case Act::LeakyRelu:
      return _mm256_blendv_ps(v, _mm256_mul_ps(v, _mm256_set1_ps(f.a)), _mm256_cmp_ps(v, zero, _CMP_LT_OQ));
    case Act::Clip: {
      const __m256 lo = _mm256_set1_ps(f.a), hi = _mm256_set1_ps(f.b);
      v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LT_OQ));
      return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
    }
    case Act::HardSigmoid:
    case Act::HardSwish: {
      const bool swish = f.act == Act::HardSwish;
      __m256 t = swish ? _mm256_fmadd_ps(v, _mm256_set1_ps(1.0f / 6), _mm256_set1_ps(0.5f))
                       : _mm256_fmadd_ps(v, _mm256_set1_ps(f.a), _mm256_set1_ps(f.b));
      const __m256 one = _mm256_set1_ps(1.0f);
      t = _mm256_blendv_ps(t, zero, _mm256_cmp_ps(t, zero, _CMP_LT_OQ));
      t = _mm256_blendv_ps(t, one, _mm256_cmp_ps(t, one, _CMP_GT_OQ));
      return swish ? _mm256_mul_ps(v, t) : t;
    }
  }
  return v;
}

}  // namespace onnxscope::cpu
