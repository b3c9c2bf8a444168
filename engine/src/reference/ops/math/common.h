// Helpers shared by the reference's math kernels (and the activations in
// nn/): elementwise loads and stores on a pointer fetched once, the unary,
// binary (numpy broadcasting) and comparison loops over the thread pool;
// and, in ref::math, numpy's matmul on whole value vectors for the integer
// products (MatMul on integers, MatMulInteger, QLinearMatMul; float products
// go through gemm_f64.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/kernel_util.h"

namespace onnxscope::ref {

// --- unary -----------------------------------------------------------------

// Element i of a tensor's bytes as S / stored from S: load<> and store<> on
// a pointer fetched once (a tensor's raw() per element costs more than the
// math of a cheap op). A bool byte other than 0 or 1 reads true, as load<bool>.
template <typename S> inline S load_at(const std::byte* p, uint64_t i) {
  if constexpr (std::is_same_v<S, bool>) {
    return p[i] != std::byte{0};
  } else {
    S v;
    std::memcpy(&v, p + i * sizeof(S), sizeof(S));
    return v;
  }
}

template <typename S> inline void store_at(std::byte* p, uint64_t i, S v) { std::memcpy(p + i * sizeof(S), &v, sizeof(S)); }

// Elementwise work over n outputs split across the thread pool in chunks
// (each output is computed alone, so the split changes no result).
template <typename Fn>
void for_chunks(uint64_t n, Fn fn) {
  cpu::parallel_for(static_cast<int64_t>(n), 32768, [&](int64_t lo, int64_t hi) {
    poll_deadline();
    fn(static_cast<uint64_t>(lo), static_cast<uint64_t>(hi));
  });
}

// The same over `rows` rows of `length` outputs each, whole rows per chunk.
template <typename Fn>
void for_rows(uint64_t rows, uint64_t length, Fn fn) {
  const auto grain = static_cast<int64_t>(std::max<uint64_t>(1, 32768 / std::max<uint64_t>(length, 1)));
  cpu::parallel_for(static_cast<int64_t>(rows), grain, [&](int64_t lo, int64_t hi) {
    poll_deadline();
    fn(static_cast<uint64_t>(lo), static_cast<uint64_t>(hi));
  });
}

// Runs one(batch, a_offset, b_offset) for every batch of a batched product
// (offsets in matrices, from `bi`), `work` multiply-adds each. Many small
// products (attention's heads and windows: Swin's [64, 3, 49, 32] x
// [64, 3, 32, 49]), or batches the threads share evenly (a decoder's 8 heads
// of [128, 64] x [64, 128]: each split over the threads, 18 against 38 G
// multiply-adds a second in its projections), go whole to each thread, each
// product computed as alone (the same bits), instead of starting the
// threads for each; otherwise one after another, each splitting its own work.
template <typename One>
void for_each_product(uint64_t batches, int64_t work, BroadcastIndex& bi, One one) {
  constexpr int64_t kSmallProduct = int64_t{1} << 20;
  const auto threads = static_cast<uint64_t>(cpu::thread_count());
  const bool even = batches >= threads && batches % threads == 0;
  if (batches > 1 && (even || work < kSmallProduct)) {
    std::vector<uint64_t> offsets(2 * batches);
    for (uint64_t bt = 0; bt < batches; ++bt, bi.next()) {
      offsets[2 * bt] = bi.offsets()[0];
      offsets[2 * bt + 1] = bi.offsets()[1];
    }
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, work));
    cpu::parallel_for(static_cast<int64_t>(batches), grain, [&](int64_t lo, int64_t hi) {
      for (auto bt = static_cast<uint64_t>(lo); bt < static_cast<uint64_t>(hi); ++bt) one(bt, offsets[2 * bt], offsets[2 * bt + 1]);
    });
    return;
  }
  for (uint64_t bt = 0; bt < batches; ++bt, bi.next()) one(bt, bi.offsets()[0], bi.offsets()[1]);
}

// An output of `type` and `shape` that writes over input i's bytes where no
// later node reads them (the interpreter says so; never with an observer,
// which is shown the node's inputs after it ran): an elementwise result
// element i only reads its inputs' element i before writing it. Otherwise a
// fresh output (allocate_output).
inline Tensor& output_over_input(KernelContext& ctx, size_t i, DataType type, const Shape& shape) {
  const Tensor& in = ctx.input(i);
  if (in.dtype() == type && in.shape() == shape && !in.is_string() && in.byte_size() > 0)
    if (std::shared_ptr<Buffer> b = ctx.reusable_input_buffer(i)) {
      ctx.output(0) = Value(Tensor::from_buffer(type, shape, std::move(b)));
      return ctx.output(0).tensor();
    }
  return ctx.allocate_output(0, type, shape);
}

// y = f(x) over one tensor, same type and shape. `f` is generic over the compute type.
template <unsigned Types, typename F>
void unary(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = output_over_input(ctx, 0, x.dtype(), x.shape());
  dispatch<Types>(ctx, x.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* const px = x.raw();
    std::byte* const py = y.mutable_raw();
    for_chunks(x.element_count(), [&](uint64_t lo, uint64_t hi) {
      // Local copies: a store through a std::byte pointer may alias anything
      // reached by reference, so with the captured ones the loop reloaded
      // both pointers at every element and was never vectorised.
      const std::byte* const in = px;
      std::byte* const out = py;
      for (uint64_t i = lo; i < hi; ++i)
        store_at<S>(out, i, from_compute<S>(static_cast<compute_t<S>>(f(to_compute(load_at<S>(in, i))))));
    });
  });
}

// y = f(x) over a float32 tensor through double: each chunk widened, `f`
// applied in place over the doubles (the eight-lane functions of
// math/exp_f64.h, within an ulp of libm's in double), then rounded once to
// float. Sigmoid and Tanh: a call of expf or tanhf per element was most of
// a transformer's non-product time (GPT-2's Tanh 12.7 ns an element), and
// the value rounded once from double is the nearer float (not always
// expf's or tanhf's).
template <typename F>
void float_through_double(KernelContext& ctx, F f) {
  const Tensor& x = ctx.input(0);
  Tensor& y = output_over_input(ctx, 0, DataType::Float, x.shape());
  const float* const px = x.data<float>();
  float* const py = y.mutable_data<float>();
  for_chunks(x.element_count(), [&](uint64_t lo, uint64_t hi) {
    constexpr uint64_t kBlock = 512;
    double buf[kBlock];
    for (uint64_t i = lo; i < hi; i += kBlock) {
      const uint64_t m = std::min(kBlock, hi - i);
      for (uint64_t k = 0; k < m; ++k) buf[k] = px[i + k];  // read before the write: y may be x's bytes
      f(buf, static_cast<int64_t>(m));
      for (uint64_t k = 0; k < m; ++k) py[i + k] = static_cast<float>(buf[k]);
    }
  });
}

// --- binary with broadcasting ------------------------------------------------

// op(i + k, qa + k * sa, qb + k * sb) for k < len, the steps 0 or 1: one
// plain loop for each pair of steps, so the compiler vectorises each.
template <typename Op>
inline void run_of(const Op& op, uint64_t i, uint64_t qa, uint64_t qb, uint64_t len, uint64_t sa, uint64_t sb) {
  if (sa && sb) {
    for (uint64_t k = 0; k < len; ++k) op(i + k, qa + k, qb + k);
  } else if (sa) {
    for (uint64_t k = 0; k < len; ++k) op(i + k, qa + k, qb);
  } else if (sb) {
    for (uint64_t k = 0; k < len; ++k) op(i + k, qa, qb + k);
  } else {
    for (uint64_t k = 0; k < len; ++k) op(i + k, qa, qb);
  }
}

// z = f(a, b) with numpy broadcasting; output type `out` (the input type if Undefined).
template <unsigned Types, typename F>
void binary(KernelContext& ctx, F f, DataType out = DataType::Undefined) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have different element types: " + std::string(dtype_name(a.dtype())) + " and " +
             std::string(dtype_name(b.dtype())));
  const Shape* shapes[] = {&a.shape(), &b.shape()};
  Shape shape = broadcast_shapes(ctx, shapes);
  const DataType zt = out == DataType::Undefined ? a.dtype() : out;
  // Over a's bytes, or b's, where one of them has the output's shape and dies here.
  Tensor& z = a.shape() == shape ? output_over_input(ctx, 0, zt, shape)
              : b.shape() == shape ? output_over_input(ctx, 1, zt, shape)
                                   : ctx.allocate_output(0, zt, shape);
  dispatch<Types>(ctx, a.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    const std::byte* const pa = a.raw();
    const std::byte* const pb = b.raw();
    std::byte* const pz = z.mutable_raw();
    // Pointers by value (see unary): the stores cannot change them.
    auto one = [pa, pb, pz, out, &f](uint64_t i, uint64_t ia, uint64_t ib) {
      auto r = f(to_compute(load_at<S>(pa, ia)), to_compute(load_at<S>(pb, ib)));
      if constexpr (std::is_same_v<decltype(r), bool>) {
        if (out == DataType::Bool) {
          store_at<bool>(pz, i, r);
          return;
        }
      }
      store_at<S>(pz, i, from_compute<S>(static_cast<compute_t<S>>(r)));
    };
    // The common broadcasts walk their inputs without an index per element
    // (BroadcastBlock); any other through BroadcastIndex.
    const uint64_t n = z.element_count();
    const auto ba = BroadcastBlock::of(a.shape(), shape), bb = BroadcastBlock::of(b.shape(), shape);
    if (n > 0 && ba && bb) {
      // In runs where each input is read at a step of 0 or 1: plain loops the
      // compiler vectorises (a bias row, a per-row scale, a scalar, the same shape).
      for_chunks(n, [&](uint64_t lo, uint64_t hi) {
        const auto op = one;  // a local copy (see unary)
        BroadcastBlock wa = *ba, wb = *bb;
        wa.start(lo);
        wb.start(lo);
        for (uint64_t i = lo; i < hi;) {
          uint64_t sa = 0, sb = 0;
          const uint64_t len = std::min({wa.run(sa), wb.run(sb), hi - i});
          run_of(op, i, wa.q, wb.q, len, sa, sb);
          wa.advance(len);
          wb.advance(len);
          i += len;
        }
      });
      return;
    }
    // Any other broadcast, a row at a time (a middle dim broadcast: Swin's
    // window mask [1, W, 1, 49, 49] over [1, W, H, 49, 49]).
    if (n == 0) return;
    const BroadcastRows rows(shape, shapes);
    const uint64_t L = rows.row_length(), sa = rows.step(0), sb = rows.step(1);
    for_rows(n / L, L, [&](uint64_t lo, uint64_t hi) {
      const auto op = one;  // a local copy (see unary)
      uint64_t at[2];
      for (uint64_t r = lo; r < hi; ++r) {
        rows.row(r, at);
        run_of(op, r * L, at[0], at[1], L, sa, sb);
      }
    });
  });
}

template <unsigned Types, typename F>
void compare(KernelContext& ctx, F f) {
  binary<Types>(ctx, [&](auto x, auto y) -> bool { return f(x, y); }, DataType::Bool);
}

namespace math {

// Accumulator for an element type: double for floats, uint64 (wrapping) for ints.
template <typename S> using acc_t = std::conditional_t<std::is_integral_v<compute_t<S>>, uint64_t, double>;

template <typename T> std::vector<T> values_as(const Tensor& t) {
  std::vector<T> v(t.element_count());
  if constexpr (std::is_same_v<T, double>) {
    v = real_values(t);
  } else if (v.empty() || !widen_integers(t, v.data())) {
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

// y = A B for row-major int64 A [M, K] and B [K, N] through the double GEMM
// (gemm_f64.cpp) when every partial sum is an integer below 2^53, so the
// result is the integer one exactly (8-bit operands minus their zero
// points: any K below 2^37); false, and nothing written, otherwise.
bool exact_integer_gemm(const int64_t* a, const int64_t* b, int64_t M, int64_t N, int64_t K, int64_t* y);

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
    if constexpr (std::is_same_v<T, int64_t>) {
      if (exact_integer_gemm(ap, bp, M, N, K, yp)) continue;  // the same integers, blocked and threaded
    }
    for (int64_t i = 0; i < M; ++i, poll_deadline())  // a run's time limit holds inside one long node too
      for (int64_t j = 0; j < N; ++j) {
        T acc = T(0);
        for (int64_t t = 0; t < K; ++t) acc += ap[i * K + t] * bp[t * N + j];
        yp[i * N + j] = acc;
      }
  }
  return y;
}

}  // namespace math

}  // namespace onnxscope::ref
