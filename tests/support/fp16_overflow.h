// A float16 model whose reduction overflows in one runtime only, and dumps of
// one run of it as two runtimes would write them: the case `diff` and
// `compare` once called agreement (inf against a finite value).
#pragma once

#include <filesystem>

namespace onnxscope::test {

struct Fp16Overflow {
  std::filesystem::path model;          // x float16[1,256] -> node_scale (Mul 1) -> node_mean (ReduceMean)
                                        // -> node_sub (m - m) -> node_add (z + m) -> y
  std::filesystem::path inputs;         // x.npz: 500 everywhere, as float32 (the model is float16)
  std::filesystem::path finite_dump;    // the reference's run: the mean is 500
  std::filesystem::path overflow_dump;  // a runtime that sums in float16: the mean is inf, then NaN
};

// Writes the model, the inputs and both dumps into `dir`.
Fp16Overflow write_fp16_overflow(const std::filesystem::path& dir);

}  // namespace onnxscope::test
