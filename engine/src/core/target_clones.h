// Function multiversioning for the vector loops: GCC's target_clones (the
// listed ISAs and the baseline, picked when the program loads). Clang before
// 16 refuses target_clones on function templates (the fuzz build, clang 14);
// there every loop is built for the baseline only, which the sanitizer build
// does not time.
#pragma once

// The AVX2 clone is built for x86-64-v3 (AVX2 with FMA, F16C, BMI): "avx2"
// alone leaves FMA out, so every std::fma in such a clone was a call into
// libm and its loop stayed scalar (Softmax over [1,12,128,128] 40x
// onnxruntime's time on an AVX2 EPYC). The clone is picked by the CPU's
// features ("arch=haswell" would be picked by the CPU's model: never on AMD).
#define ONNXSCOPE_CLONE_AVX2 "arch=x86-64-v3"

#if defined(__clang__)
#define ONNXSCOPE_TARGET_CLONES(...)
#else
#define ONNXSCOPE_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
