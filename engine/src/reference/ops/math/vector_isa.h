// Which vector form of the reference's hand-written loops runs: the plain
// one, AVX2 with FMA (4 doubles a register) or AVX-512 (8). Every form
// computes the same operations in the same order, so the choice changes
// the speed, never the bits; tests lower the limit to run each form a CPU
// has against the plain loop (an AVX-512 machine checks the AVX2 form too).
#pragma once

namespace onnxscope::ref::math {

enum class VectorIsa { Plain = 0, Avx2 = 1, Avx512 = 2 };

// The widest form the CPU has (AVX-512 means F and VL; AVX2 means AVX2 and
// FMA), no wider than the limit.
VectorIsa vector_isa();
// Lowers (or restores) the limit; returns the previous one.
VectorIsa limit_vector_isa(VectorIsa most);

}  // namespace onnxscope::ref::math
