#include "core/target_clones.h"
#include "cpu/kernels/math/arith_rows.h"

namespace onnxscope::cpu {
namespace {

#define ONNXSCOPE_CLONES ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")

// One function per operator and step pattern, so each loop vectorises.
#define ONNXSCOPE_ARITH(name, expr_vv, expr_vs, expr_sv)                                            \
  ONNXSCOPE_CLONES void name##_vv(const float* a, const float* b, float* y, int64_t n) {            \
    for (int64_t i = 0; i < n; ++i) y[i] = expr_vv;                                                 \
  }                                                                                                 \
  ONNXSCOPE_CLONES void name##_vs(const float* a, float s, float* y, int64_t n) {                   \
    for (int64_t i = 0; i < n; ++i) y[i] = expr_vs;                                                 \
  }                                                                                                 \
  ONNXSCOPE_CLONES void name##_sv(float s, const float* b, float* y, int64_t n) {                   \
    for (int64_t i = 0; i < n; ++i) y[i] = expr_sv;                                                 \
  }

ONNXSCOPE_ARITH(add, a[i] + b[i], a[i] + s, s + b[i])
ONNXSCOPE_ARITH(sub, a[i] - b[i], a[i] - s, s - b[i])
ONNXSCOPE_ARITH(mul, a[i] * b[i], a[i] * s, s * b[i])
ONNXSCOPE_ARITH(div, a[i] / b[i], a[i] / s, s / b[i])

#undef ONNXSCOPE_ARITH

// rows x n of a, each row combined with the same n values of b.
#define ONNXSCOPE_TILE(name, expr)                                                                  \
  ONNXSCOPE_CLONES void name##_tile(const float* a, const float* b, float* y, int64_t rows, int64_t n) { \
    for (int64_t r = 0; r < rows; ++r) {                                                            \
      const float* ar = a + r * n;                                                                  \
      float* yr = y + r * n;                                                                        \
      for (int64_t i = 0; i < n; ++i) yr[i] = expr;                                                 \
    }                                                                                               \
  }
ONNXSCOPE_TILE(add, ar[i] + b[i])
ONNXSCOPE_TILE(sub, ar[i] - b[i])
ONNXSCOPE_TILE(mul, ar[i] * b[i])
ONNXSCOPE_TILE(div, ar[i] / b[i])
#undef ONNXSCOPE_TILE
#undef ONNXSCOPE_CLONES

float one(Arith op, float x, float z) {
  switch (op) {
    case Arith::Add: return x + z;
    case Arith::Sub: return x - z;
    case Arith::Mul: return x * z;
    case Arith::Div: return x / z;
  }
  return 0;
}

}  // namespace

void arith_tile(Arith op, const float* a, const float* b, float* y, int64_t rows, int64_t n) {
  switch (op) {
    case Arith::Add: return add_tile(a, b, y, rows, n);
    case Arith::Sub: return sub_tile(a, b, y, rows, n);
    case Arith::Mul: return mul_tile(a, b, y, rows, n);
    case Arith::Div: return div_tile(a, b, y, rows, n);
  }
}

void arith_row(Arith op, const float* a, int sa, const float* b, int sb, float* y, int64_t n) {
  if (sa && sb) {
    switch (op) {
      case Arith::Add: return add_vv(a, b, y, n);
      case Arith::Sub: return sub_vv(a, b, y, n);
      case Arith::Mul: return mul_vv(a, b, y, n);
      case Arith::Div: return div_vv(a, b, y, n);
    }
  } else if (sa) {
    switch (op) {
      case Arith::Add: return add_vs(a, *b, y, n);
      case Arith::Sub: return sub_vs(a, *b, y, n);
      case Arith::Mul: return mul_vs(a, *b, y, n);
      case Arith::Div: return div_vs(a, *b, y, n);
    }
  } else if (sb) {
    switch (op) {
      case Arith::Add: return add_sv(*a, b, y, n);
      case Arith::Sub: return sub_sv(*a, b, y, n);
      case Arith::Mul: return mul_sv(*a, b, y, n);
      case Arith::Div: return div_sv(*a, b, y, n);
    }
  } else {
    const float v = one(op, *a, *b);
    for (int64_t i = 0; i < n; ++i) y[i] = v;
  }
}

}  // namespace onnxscope::cpu
