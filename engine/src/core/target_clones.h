// Function multiversioning for the vector loops: GCC's target_clones (the
// listed ISAs and the baseline, picked when the program loads). Clang before
// 16 refuses target_clones on function templates (the fuzz build, clang 14);
// there every loop is built for the baseline only, which the sanitizer build
// does not time.
#pragma once

#if defined(__clang__)
#define ONNXSCOPE_TARGET_CLONES(...)
#else
#define ONNXSCOPE_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif
