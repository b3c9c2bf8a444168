// CPU features the vector paths outside the kernels ask for.
#pragma once

#include <cpuid.h>

namespace onnxscope {

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
