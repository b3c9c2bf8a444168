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

// y = a @ b with numpy semantics: 1-D operands are promoted to a row (a) or a
// column (b) vector and the added dim removed again; leading dims broadcast.
template <typename T>
std::vector<T> matmul_values(const KernelContext& ctx, const std::vector<T>& a, Shape as, const std::vector<T>& b,
                             Shape bs, Shape& out_shape) {
  if (as.empty() || bs.empty()) ctx.fail("MatMul inputs must have rank >= 1 (scalars are not allowed)");
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K)
    ctx.fail("inner dimensions do not match: " + shape_to_string(as) + " @ " + shape_to_string(bs));
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const Shape batch = broadcast_shapes(ctx, a_batch, b_batch);
  out_shape = batch;
  if (!a_vec) out_shape.push_back(M);
  if (!b_vec) out_shape.push_back(N);
  const uint64_t batches = *checked_element_count(batch);
  std::vector<T> y(batches * static_cast<uint64_t>(M * N), T(0));
  const Shape* shapes[] = {&a_batch, &b_batch};
  BroadcastIndex bi(batch, shapes);
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
