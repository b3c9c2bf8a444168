// Float32 Add / Sub / Mul / Div over one row, in plain loops built for
// AVX-512, AVX2 and the baseline (GCC's and clang's target_clones: the loader
// picks the widest the CPU has), which the Eigen kernels, built for the
// baseline ISA, are not.
#pragma once

#include <cstdint>

namespace onnxscope::cpu {

enum class Arith { Add, Sub, Mul, Div };

// y[i] = a[i * sa] op b[i * sb] for i < n; sa and sb are 0 (one value repeated) or 1.
void arith_row(Arith op, const float* a, int sa, const float* b, int sb, float* y, int64_t n);

// y[r * n + i] = a[r * n + i] op b[i] for r < rows, i < n: rows of a against
// one row of b (a per-channel operand on the blocked layout: n = 16).
void arith_tile(Arith op, const float* a, const float* b, float* y, int64_t rows, int64_t n);

}  // namespace onnxscope::cpu
