// CPU features the vector paths outside the kernels ask for.
#pragma once

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace onnxscope {

// ONNXSCOPE_CPU_ISA=avx2: the cpu engine's own kernels take the paths of a
// CPU without AVX-512, VNNI or AMX, so that an AVX-512 machine (a CI host)
// runs and checks the AVX2 ones (oneDNN has its own cap, DNNL_MAX_CPU_ISA,
// which make_cpu_engine sets to AVX2 with it unless given).
inline bool cpu_isa_capped_to_avx2() {
  static const bool capped = [] {
    const char* e = std::getenv("ONNXSCOPE_CPU_ISA");
    return e && std::strcmp(e, "avx2") == 0;
  }();
  return capped;
}

// __builtin_cpu_supports for an AVX-512 feature (its argument a literal), false under the cap.
#define ONNXSCOPE_CPU_AVX512(feature) (__builtin_cpu_supports(feature) && !::onnxscope::cpu_isa_capped_to_avx2())

// AVX2, and AVX2 with FMA (x86-64-v3's vector core): the AVX2 kernels' test,
// once per process. Not capped: ONNXSCOPE_CPU_ISA=avx2 keeps AVX2.
inline bool cpu_has_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
inline bool cpu_has_avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

// AVX2 (which also says the OS saves the wide registers) and the F16C bit of
// CPUID leaf 1 (clang's __builtin_cpu_supports does not know "f16c").
inline bool cpu_has_f16c() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  }();
  return yes;
}

}  // namespace onnxscope
