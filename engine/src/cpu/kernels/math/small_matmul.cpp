// MatMul and FusedMatMul (bias, fused activation: cpu/fused_ops.h), and Gemm
// and FusedGemm with alpha 1 and C absent or a bias row (beta 1), of a few
// rows by a plain matrix B [K, N] (or a constant B [N, K] with transB, as
// torch's Linear exports: transposed once, kept for the node), float32,
// AVX-512, on the calling thread:
// a tiny MLP's layers, a decoder's one-token step over small weights, the
// products inside a Loop body. oneDNN's primitive call costs about a
// microsecond of its own (an argument map built and freed per call) and the
// engine's plan for it more, which such a product does not: 100 chained
// [1,64] x [64,64] products with Tanh took 2.0 us a node against
// onnxruntime's 1.3 for the MatMul and the Tanh.
//
// Register tiles of R rows (up to 4) by V vectors of 16 columns (up to 4):
// for each k, V loads of B's row and R broadcasts of A, R*V fused
// multiply-adds; the bias starts the sums, the activation is applied as the
// tile is stored. Each output is one sum in the order of k, whatever the
// tile. Larger products (more rows, or more multiply-adds than kMaxMacs) go
// to oneDNN, whose packed kernels and threads are then worth their call.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h in masked loads
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/float_product.h"
#include "cpu/kernels/nn/fused_activation_avx512.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kMaxRows = 16;
constexpr int64_t kMaxMacs = int64_t{1} << 18;  // ~2.5 us of sums at one thread

using Product = FloatProduct;

// A constant B [N, K] as [K, N], kept for the node while B's storage is the
// same. Where the engine gives repacked weights back (run, bench), B's plain
// bytes are given back too, restored from this copy if anyone reads them:
// the weight stays resident once.
struct TransposedB {
  const Buffer* of = nullptr;
  std::shared_ptr<std::vector<float>> kn;
};

using Op = ProductOp;

bool product_of(const KernelContext& ctx, Product& p, Op op) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512 || !float_product_of(ctx, p, op)) return false;
  return p.rows <= kMaxRows && p.rows * p.K <= kMaxMacs && p.rows * p.K * p.N <= kMaxMacs;
}

template <Op O>
bool accepts(const KernelContext& ctx) {
  Product p;
  return product_of(ctx, p, O);
}

// Y[m0 .. m0+R, n0 .. n0+16V) of Y = act(A B + bias); `last` masks the columns
// of the tile's last vector that are in Y.
template <int R, int V>
__attribute__((target("avx512f"))) void tile(const Product& p, const float* a, const float* b, const float* bias,
                                             int64_t m0, int64_t n0, __mmask16 last, float* y) {
  __m512 acc[R * V];
#pragma GCC unroll 16
  for (int i = 0; i < R * V; ++i) {
    const int v = i % V;
    const __mmask16 in = v + 1 == V ? last : static_cast<__mmask16>(0xffff);
    acc[i] = bias ? _mm512_maskz_loadu_ps(in, bias + n0 + 16 * v) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < p.K; ++k) {
    __m512 brow[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      brow[v] = _mm512_maskz_loadu_ps(v + 1 == V ? last : static_cast<__mmask16>(0xffff), b + k * p.N + n0 + 16 * v);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(a[(m0 + r) * p.K + k]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r * V + v] = _mm512_fmadd_ps(x, brow[v], acc[r * V + v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      _mm512_mask_storeu_ps(y + (m0 + r) * p.N + n0 + 16 * v, v + 1 == V ? last : static_cast<__mmask16>(0xffff),
                            activate(p.act, acc[r * V + v]));
}

template <int R>
void tile_v(int V, const Product& p, const float* a, const float* b, const float* bias, int64_t m0, int64_t n0,
            __mmask16 last, float* y) {
  switch (V) {
    case 1: return tile<R, 1>(p, a, b, bias, m0, n0, last, y);
    case 2: return tile<R, 2>(p, a, b, bias, m0, n0, last, y);
    case 3: return tile<R, 3>(p, a, b, bias, m0, n0, last, y);
    default: return tile<R, 4>(p, a, b, bias, m0, n0, last, y);
  }
}

template <Op O>
void Run(KernelContext& ctx) {
  Product p;
  if (!product_of(ctx, p, O)) ctx.fail("problem not supported by the small-product kernel");
  const float* a = ctx.input(0).data<float>();
  const float* b = nullptr;
  TransposedB local;
  if (p.trans_b) {
    TransposedB* kept = onednn::node_state<TransposedB>(ctx);
    TransposedB& t = kept ? *kept : local;
    const std::shared_ptr<Buffer>& of = ctx.input(1).buffer();  // (its identity: reading its bytes would restore them)
    if (t.of != of.get() || !t.kn || t.kn->size() != static_cast<size_t>(p.K * p.N)) {
      const float* given = ctx.input(1).data<float>();
      auto kn = std::make_shared<std::vector<float>>(static_cast<size_t>(p.K * p.N));
      for (int64_t n = 0; n < p.N; ++n)
        for (int64_t k = 0; k < p.K; ++k) (*kn)[static_cast<size_t>(k * p.N + n)] = given[n * p.K + k];
      t.kn = kn;
      t.of = of.get();
      const int64_t K = p.K, N = p.N;
      if (&t != &local && onednn::releasing_repacked_weights())
        of->release_bytes([kn, K, N](std::byte* dst) {
          float* out = reinterpret_cast<float*>(dst);
          for (int64_t n = 0; n < N; ++n)
            for (int64_t k = 0; k < K; ++k) out[n * K + k] = (*kn)[static_cast<size_t>(k * N + n)];
        });
    }
    b = t.kn->data();
  } else {
    b = ctx.input(1).data<float>();
  }
  const float* bias = p.bias ? ctx.input(2).data<float>() : nullptr;
  float* y = uninitialized_output(ctx, 0, DataType::Float, p.out).mutable_data<float>();
  for (int64_t m0 = 0; m0 < p.rows; m0 += 4) {
    const int64_t rows = std::min<int64_t>(4, p.rows - m0);
    for (int64_t n0 = 0; n0 < p.N; n0 += 64) {
      const int64_t cols = std::min<int64_t>(64, p.N - n0);
      const int V = static_cast<int>((cols + 15) / 16);
      const int64_t tail = cols - 16 * (V - 1);
      const auto last = static_cast<__mmask16>(tail >= 16 ? 0xffffu : (1u << tail) - 1u);
      switch (rows) {
        case 1: tile_v<1>(V, p, a, b, bias, m0, n0, last, y); break;
        case 2: tile_v<2>(V, p, a, b, bias, m0, n0, last, y); break;
        case 3: tile_v<3>(V, p, a, b, bias, m0, n0, last, y); break;
        default: tile_v<4>(V, p, a, b, bias, m0, n0, last, y); break;
      }
    }
  }
}

}  // namespace

void register_small_matmul_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "MatMul", 1, INT_MAX, "cpu-avx512", Run<Op::MatMul>, accepts<Op::MatMul>});
  r.add(KernelDef{"onnxscope.cpu", kFusedMatMul, 1, INT_MAX, "cpu-avx512", Run<Op::FusedMatMul>, accepts<Op::FusedMatMul>});
  r.add(KernelDef{"", "Gemm", 7, INT_MAX, "cpu-avx512", Run<Op::Gemm>, accepts<Op::Gemm>});
  r.add(KernelDef{"onnxscope.cpu", kFusedGemm, 1, INT_MAX, "cpu-avx512", Run<Op::FusedGemm>, accepts<Op::FusedGemm>});
}

}  // namespace onnxscope::cpu
