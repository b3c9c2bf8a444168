// Gemm: Y = alpha * A' @ B' + beta * C, A' = transA ? A^T : A (2-D), C
// broadcast unidirectionally to [M, N] (before opset 7 only with
// broadcast=1; required before opset 11). Floats: the product by
// gemm_f64.h (a transposed operand is read through its strides), then
// alpha * product + beta * C in double, rounded once. Integers: 64-bit
// two's complement sums, exact when alpha and beta are whole numbers.
#include <cmath>
#include <cstring>

#include "reference/ops/math/common.h"
#include "reference/ops/math/gemm_f64.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using namespace math;

// `opset`: the Gemm version whose rules on C apply (com.microsoft FusedGemm
// follows the latest: C optional, broadcast unidirectionally).
void gemm(KernelContext& ctx, int64_t opset) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor* c = ctx.optional_input(2);
  if (a.dtype() != b.dtype() || (c && c->dtype() != a.dtype())) ctx.fail("A, B and C must have the same element type");
  if (a.rank() != 2 || b.rank() != 2)
    ctx.fail("A and B must be 2-D, got " + shape_to_string(a.shape()) + " and " + shape_to_string(b.shape()));
  const bool ta = ctx.attr_int("transA", 0) != 0, tb = ctx.attr_int("transB", 0) != 0;
  const double alpha = ctx.attr_float("alpha", 1.0f), beta = ctx.attr_float("beta", 1.0f);
  const int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
  const int64_t Kb = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
  if (K != Kb)
    ctx.fail("inner dimensions do not match: A' is " + shape_to_string(Shape{M, K}) + ", B' is " + shape_to_string(Shape{Kb, N}));
  const Shape out_shape{M, N};
  if (c) {
    if (opset < 7 && ctx.attr_int("broadcast", 0) == 0 && c->shape() != out_shape)
      ctx.fail("C must have shape " + shape_to_string(out_shape) + " unless broadcast=1, got " + shape_to_string(c->shape()));
    if (c->rank() > 2 || broadcast_shapes(ctx, out_shape, c->shape()) != out_shape)
      ctx.fail("C of shape " + shape_to_string(c->shape()) + " does not broadcast to " + shape_to_string(out_shape));
  } else if (opset < 11) {
    ctx.fail("C is required before opset 11");
  }
  // C's element for (i, j): its rows and columns are 1 or M and N.
  const int64_t c_rows = c && c->rank() == 2 ? c->shape()[0] : 1, c_cols = c && c->rank() >= 1 ? c->shape().back() : 1;
  auto c_index = [&](int64_t i, int64_t j) {
    return static_cast<uint64_t>((c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j));
  };
  dispatch<kFloats | kInts>(ctx, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& out = ctx.allocate_output(0, a.dtype(), out_shape);
    if constexpr (!std::is_integral_v<compute_t<S>>) {
      const Operand A = ta ? Operand{a.raw(), 1, M} : Operand{a.raw(), K, 1};
      const Operand B = tb ? Operand{b.raw(), 1, K} : Operand{b.raw(), N, 1};
      std::byte* po = out.mutable_raw();  // fetched once, as C's bytes
      const std::byte* pc = c ? c->raw() : nullptr;
      gemm_f64<S>(A, B, M, N, K, [&](int64_t i, int64_t j0, const double* v, int64_t n) {
        for (int64_t k = 0; k < n; ++k) {
          double cval = 0.0;
          if (pc) {
            S cv;
            std::memcpy(&cv, pc + c_index(i, j0 + k) * sizeof(S), sizeof(S));
            cval = static_cast<double>(to_compute(cv));
          }
          const S y = from_compute<S>(static_cast<compute_t<S>>(alpha * v[k] + beta * cval));
          std::memcpy(po + static_cast<uint64_t>(i * N + j0 + k) * sizeof(S), &y, sizeof(S));
        }
      });
    } else {
      using T = acc_t<S>;
      const std::vector<T> av = values_as<T>(a), bv = values_as<T>(b);
      // Integer Gemm stays exact when alpha and beta are whole numbers.
      const bool exact = alpha == std::floor(alpha) && beta == std::floor(beta);
      for (int64_t i = 0; i < M; ++i, poll_deadline())
        for (int64_t j = 0; j < N; ++j) {
          T acc = T(0);
          for (int64_t t = 0; t < K; ++t) acc += av[ta ? t * M + i : i * K + t] * bv[tb ? j * K + t : t * N + j];
          const T cval = c ? static_cast<T>(c->element_as_int64(c_index(i, j))) : T(0);
          const uint64_t o = static_cast<uint64_t>(i * N + j);
          if (exact) {
            const T r = static_cast<T>(static_cast<int64_t>(alpha)) * acc + static_cast<T>(static_cast<int64_t>(beta)) * cval;
            put<S>(out, o, static_cast<compute_t<S>>(r));
          } else {
            const double r = alpha * static_cast<double>(static_cast<int64_t>(acc)) + beta * static_cast<double>(static_cast<int64_t>(cval));
            put<S>(out, o, static_cast<compute_t<S>>(from_double<int64_t>(r)));  // NaN, inf: no undefined cast
          }
        }
    }
  });
}

void Gemm(KernelContext& ctx) { gemm(ctx, ctx.opset_version()); }

}  // namespace onnxscope::ref
