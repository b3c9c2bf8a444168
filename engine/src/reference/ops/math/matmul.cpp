// MatMul: numpy's matmul. 1-D operands are promoted to a row (A) or a column
// (B) vector and the added dim removed again; leading dims broadcast.
// com.microsoft FusedMatMul (ONNX Runtime's optimizer folds Transposes and a
// scale into MatMuls): A and B permuted first (transBatch: dim 0 moved to
// just before the last, [1, ..., r-2, 0, r-1], then trans: the last two
// swapped), then the same product, alpha applied in double before rounding.
// Floats: gemm_f64.h per batch (every product and partial sum in double, in
// order, then rounded once to the output type). Integers: 64-bit two's
// complement sums, so results wrap like numpy's fixed-width matmul.
#include <cstring>

#include "reference/ops/math/common.h"
#include "reference/ops/math/gemm_f64.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref::math {
namespace {

template <typename S>
void float_matmul(KernelContext& ctx, const Tensor& a, const Tensor& b, double alpha = 1.0) {
  const MatMulShape ms = matmul_shape(ctx, a.shape(), b.shape());
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  const Shape &a_batch = ms.a_batch, &b_batch = ms.b_batch, &batch = ms.batch, &out_shape = ms.out;
  Tensor& out = ctx.allocate_output(0, a.dtype(), out_shape);
  const uint64_t batches = *checked_element_count(batch);
  const Shape* shapes[] = {&a_batch, &b_batch};
  BroadcastIndex bi(batch, shapes);
  const auto elem = static_cast<int64_t>(sizeof(S));
  S* const po = reinterpret_cast<S*>(out.mutable_raw());  // fetched once: per element it costs more than the store
  // Results i .. i + n - 1 of the output, rounded to S: a loop over typed
  // pointers that vectorises (a memcpy through a byte pointer per element
  // did not, 4-6% of a decoder's reference run).
  auto put_run = [po, alpha](uint64_t i, const double* v, int64_t n) {
    S* y = po + i;
    if (alpha == 1.0)
      for (int64_t k = 0; k < n; ++k) y[k] = from_compute<S>(static_cast<compute_t<S>>(v[k]));
    else
      for (int64_t k = 0; k < n; ++k) y[k] = from_compute<S>(static_cast<compute_t<S>>(alpha * v[k]));
  };
  // One B for every batch (B without batch dims, or all 1): A's batches are
  // consecutive rows, and so are the output's, so it is one product of
  // batches * M rows (ViT's [197, 1, 768] x [768, 2304] is one 197-row
  // product, not 197 one-row products each widening all of B).
  if (*checked_element_count(b_batch) == 1 && *checked_element_count(a_batch) == batches) {
    const Operand A{a.raw(), K, 1}, B{b.raw(), N, 1};
    gemm_f64<S>(A, B, static_cast<int64_t>(batches) * M, N, K, [&](int64_t i, int64_t j0, const double* v, int64_t n) {
      put_run(static_cast<uint64_t>(i * N + j0), v, n);
    });
    return;
  }
  auto one_batch = [&](uint64_t bt, uint64_t ao, uint64_t bo) {
    const Operand A{a.raw() + static_cast<int64_t>(ao) * M * K * elem, K, 1};
    const Operand B{b.raw() + static_cast<int64_t>(bo) * K * N * elem, N, 1};
    const uint64_t base = bt * static_cast<uint64_t>(M * N);
    gemm_f64<S>(A, B, M, N, K, [&](int64_t i, int64_t j0, const double* v, int64_t n) {
      put_run(base + static_cast<uint64_t>(i * N + j0), v, n);
    });
  };
  for_each_product(batches, M * N * std::max<int64_t>(K, 1), bi, one_batch);
}

// `t` with its dims permuted (a contiguous copy): out dim d is t's dim perm[d].
Tensor permuted(const Tensor& t, const std::vector<size_t>& perm) {
  const Shape& s = t.shape();
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) out[d] = s[perm[d]];
  Tensor r = Tensor::zeros(t.dtype(), out);
  const size_t elem = *storage_bytes(t.dtype(), 1);
  std::vector<int64_t> in_stride(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) in_stride[d - 1] = in_stride[d] * s[d];
  std::vector<int64_t> idx(out.size(), 0);
  for (uint64_t i = 0; i < r.element_count(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < out.size(); ++d) off += idx[d] * in_stride[perm[d]];
    std::memcpy(r.mutable_raw() + i * elem, t.raw() + static_cast<uint64_t>(off) * elem, elem);
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

}  // namespace

}  // namespace onnxscope::ref::math

namespace onnxscope::ref {

using namespace math;

void MatMul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype()) ctx.fail("A and B must have the same element type");
  dispatch<kFloats | kInts>(ctx, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    if constexpr (!std::is_integral_v<compute_t<S>>) {
      float_matmul<S>(ctx, a, b);
    } else {
      using T = acc_t<S>;
      Shape shape;
      std::vector<T> y = matmul_values<T>(ctx, values_as<T>(a), a.shape(), values_as<T>(b), b.shape(), shape);
      Tensor& out = ctx.allocate_output(0, a.dtype(), shape);
      for (uint64_t i = 0; i < y.size(); ++i) put<S>(out, i, static_cast<compute_t<S>>(y[i]));
    }
  });
}

void FusedMatMul(KernelContext& ctx) {
  const Tensor& a0 = ctx.input(0);
  const Tensor& b0 = ctx.input(1);
  if (a0.dtype() != b0.dtype()) ctx.fail("A and B must have the same element type");
  if (a0.rank() == 0 || b0.rank() == 0) ctx.fail("A and B must have rank 1 or more");
  auto arrange = [&](const Tensor& t, const char* trans, const char* trans_batch, const char* what) {
    const bool tb = ctx.attr_int(trans_batch, 0) != 0, tr = ctx.attr_int(trans, 0) != 0;
    const size_t r = t.shape().size();
    if (tb && r < 3) ctx.fail(std::string(trans_batch) + " needs " + what + " of rank 3 or more, got " + shape_to_string(t.shape()));
    std::vector<size_t> perm(r);
    for (size_t d = 0; d < r; ++d) perm[d] = d;
    if (tb) {
      for (size_t d = 0; d + 2 < r; ++d) perm[d] = d + 1;
      perm[r - 2] = 0;
    }
    if (tr && r >= 2) std::swap(perm[r - 2], perm[r - 1]);
    bool identity = true;
    for (size_t d = 0; d < r; ++d) identity = identity && perm[d] == d;
    return identity ? t : permuted(t, perm);
  };
  const Tensor a = arrange(a0, "transA", "transBatchA", "A");
  const Tensor b = arrange(b0, "transB", "transBatchB", "B");
  const double alpha = ctx.attr_float("alpha", 1.0f);
  dispatch<kFloats>(ctx, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    float_matmul<S>(ctx, a, b, alpha);
  });
}

}  // namespace onnxscope::ref
