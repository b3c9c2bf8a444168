// Helpers of the reference's math operators (engine/src/reference/ops/math/):
// numpy's matmul on whole value vectors, for the integer products (MatMul on
// integers, MatMulInteger, QLinearMatMul); float products go through
// gemm_f64.h.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"

namespace onnxscope::ref::math {

// Accumulator for an element type: double for floats, uint64 (wrapping) for ints.
template <typename S> using acc_t = std::conditional_t<std::is_integral_v<compute_t<S>>, uint64_t, double>;

template <typename T> std::vector<T> values_as(const Tensor& t) {
  std::vector<T> v(t.element_count());
  if constexpr (std::is_same_v<T, double>) {
    v = real_values(t);
  } else {
    for (uint64_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(t.element_as_int64(i));
  }
  return v;
}

// numpy matmul's shapes: 1-D operands are promoted to a row (a) or a
// column (b) vector and the added dim removed again from the output; the
// leading (batch) dims broadcast.
struct MatMulShape {
  int64_t M = 0, K = 0, N = 0;
  Shape a_batch, b_batch, batch, out;
};
inline MatMulShape matmul_shape(const KernelContext& ctx, Shape as, Shape bs) {
  if (as.empty() || bs.empty()) ctx.fail("MatMul inputs must have rank >= 1 (scalars are not allowed)");
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  MatMulShape r;
  r.M = as[as.size() - 2];
  r.K = as.back();
  r.N = bs.back();
  if (bs[bs.size() - 2] != r.K)
    ctx.fail("inner dimensions do not match: " + shape_to_string(as) + " @ " + shape_to_string(bs));
  r.a_batch.assign(as.begin(), as.end() - 2);
  r.b_batch.assign(bs.begin(), bs.end() - 2);
  r.batch = broadcast_shapes(ctx, r.a_batch, r.b_batch);
  r.out = r.batch;
  if (!a_vec) r.out.push_back(r.M);
  if (!b_vec) r.out.push_back(r.N);
  return r;
}

// y = a @ b with numpy semantics (matmul_shape) on whole value vectors.
template <typename T>
std::vector<T> matmul_values(const KernelContext& ctx, const std::vector<T>& a, const Shape& as, const std::vector<T>& b,
                             const Shape& bs, Shape& out_shape) {
  const MatMulShape ms = matmul_shape(ctx, as, bs);
  const int64_t M = ms.M, K = ms.K, N = ms.N;
  out_shape = ms.out;
  const uint64_t batches = *checked_element_count(ms.batch);
  std::vector<T> y(batches * static_cast<uint64_t>(M * N), T(0));
  const Shape* shapes[] = {&ms.a_batch, &ms.b_batch};
  BroadcastIndex bi(ms.batch, shapes);
  for (uint64_t bt = 0; bt < batches; ++bt, bi.next()) {
    const T* ap = a.data() + bi.offsets()[0] * static_cast<uint64_t>(M * K);
    const T* bp = b.data() + bi.offsets()[1] * static_cast<uint64_t>(K * N);
    T* yp = y.data() + bt * static_cast<uint64_t>(M * N);
    for (int64_t i = 0; i < M; ++i, poll_deadline())  // a run's time limit holds inside one long node too
      for (int64_t j = 0; j < N; ++j) {
        T acc = T(0);
        for (int64_t t = 0; t < K; ++t) acc += ap[i * K + t] * bp[t * N + j];
        yp[i * N + j] = acc;
      }
  }
  return y;
}

void register_matmul(KernelRegistry& r);  // math/matmul.cpp: MatMul
void register_gemm(KernelRegistry& r);    // math/gemm.cpp: Gemm

}  // namespace onnxscope::ref::math
