// MatMul, Gemm, FusedMatMul and FusedGemm (bias, activation: cpu/fused_ops.h)
// of float32 rows by a constant 2-D B on CPUs with AVX2 and
// FMA but no AVX-512: B packed once for the node into panels of 16 columns
// ([K][16] each, zero past N), then register tiles of 6 rows by 16 columns
// (12 accumulators, 2 loads of B and a broadcast of A a step: AVX2's 16
// registers), t in blocks of 256 so a panel's block (16 KiB) stays in L1
// while the row tiles of a block of rows (rows_per_block: A's block in L1)
// pass, the next block of the panels requested ahead, the panels shared out
// to the threads; A packed into 6-row tiles where 8 or more panels read it
// and it has 3 or more rows (one or two rows take several panels a tile,
// wide_tile). On the AMD EPYC oneDNN's AVX2 matmul ran GPT-2's and
// BERT's Linear layers at about 57% of the FMA peak (GPT-2 at batch 1
// 0.79x onnxruntime, 86% of its time in Gemm). AVX-512 machines keep
// oneDNN's, which was measured there.
//
// Each output is one float sum in the order of t (the blocks carry it in
// memory), the bias first where there is one (Gemm's C a row of N or [1, N],
// beta 1; alpha 1, transA 0), the activation applied as the last block's
// tile is stored. Where the engine gives repacked weights back, B's
// plain bytes are given back too and restored from the panels if read.
#include <immintrin.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/float_product.h"
#include "cpu/kernels/math/vector_math_avx2.h"
#include "cpu/kernels/nn/fused_activation_avx2.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kNR = 16, kMR = 6, kKC = 256;

using Problem = FloatProduct;
using Op = ProductOp;

bool avx2_only() {
  static const bool yes =
      !ONNXSCOPE_CPU_AVX512("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

template <Op O>
bool problem_of(const KernelContext& ctx, Problem& p) {
  return avx2_only() && ctx.input_is_initializer(1) && float_product_of(ctx, p, O);  // B packed once: a constant
}

template <Op O>
bool accepts(const KernelContext& ctx) {
  Problem p;
  return problem_of<O>(ctx, p);
}

// B's panels, kept for the node while B's storage is the same.
struct PackedB {
  const Buffer* of = nullptr;
  int64_t K = 0, N = 0;
  bool trans_b = false;
  std::shared_ptr<std::vector<float>> storage;  // the panels, [ceil(N / 16)][K][16], at `at` (on a cache line)
  size_t at = 0;
  const float* panels() const { return storage->data() + at; }
};

// Storage for n floats with room to start them on a 64-byte line.
std::pair<std::shared_ptr<std::vector<float>>, size_t> aligned_floats(size_t n) {
  auto v = std::make_shared<std::vector<float>>(n + 16);
  const auto addr = reinterpret_cast<uintptr_t>(v->data());
  return {v, ((64 - addr % 64) % 64) / sizeof(float)};
}

// B(t, j) of B given as [K, N], or as [N, K] (transB).
void pack(const float* b, bool trans_b, int64_t K, int64_t N, float* out) {
  const int64_t panels = (N + kNR - 1) / kNR;
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      float* o = out + p * K * kNR;
      const int64_t j0 = p * kNR, n = std::min(kNR, N - j0);
      for (int64_t t = 0; t < K; ++t)
        for (int64_t j = 0; j < kNR; ++j)
          o[t * kNR + j] = j < n ? (trans_b ? b[(j0 + j) * K + t] : b[t * N + j0 + j]) : 0.0f;
    }
  });
}

// B's plain bytes written back from the panels (the restore of release_bytes).
void unpack(const float* panels, bool trans_b, int64_t K, int64_t N, float* b) {
  for (int64_t j = 0; j < N; ++j)
    for (int64_t t = 0; t < K; ++t) {
      const float v = panels[(j / kNR * K + t) * kNR + j % kNR];
      if (trans_b) b[j * K + t] = v;
      else b[t * N + j] = v;
    }
}

// C[R rows][16 columns; the lanes of m0, m1 where not Full] += A[R rows][kc]
// B-panel[kc][16], row r of A's t at a[t * 6 + r] (Packed, by pack_a) or at
// a[r * lda + t]; `first`: start from the bias row (or 0) instead of C;
// `act`: the last block, stored activated; `next`: where the next block of
// panel rows lies, requested into L2 a line a step (or null). (Packed is a
// template argument: with a constant step the six broadcasts are fixed
// offsets of one pointer.)
template <int R, bool Full, bool Packed>
__attribute__((target("avx2,fma"))) void tile(const float* a, int64_t lda, const float* bp, int64_t kc, float* c,
                                              int64_t ldc, bool first, const float* bias, const FusedActivation* act,
                                              const float* next, __m256i m0, __m256i m1) {
  const int64_t step = Packed ? kMR : 1, row = Packed ? 1 : lda;
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (!first) {
      acc[r][0] = Full ? _mm256_loadu_ps(c + r * ldc) : _mm256_maskload_ps(c + r * ldc, m0);
      acc[r][1] = Full ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_maskload_ps(c + r * ldc + 8, m1);
    } else if (bias) {
      acc[r][0] = Full ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, m0);
      acc[r][1] = Full ? _mm256_loadu_ps(bias + 8) : _mm256_maskload_ps(bias + 8, m1);
    } else {
      acc[r][0] = _mm256_setzero_ps();
      acc[r][1] = _mm256_setzero_ps();
    }
  }
  for (int64_t t = 0; t < kc; ++t) {
    const __m256 b0 = _mm256_load_ps(bp + t * kNR), b1 = _mm256_load_ps(bp + t * kNR + 8);
    if (next) _mm_prefetch(reinterpret_cast<const char*>(next + t * kNR), _MM_HINT_T1);  // (never faults)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 x = _mm256_broadcast_ss(a + t * step + r * row);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
  if (act && act->act != Act::None)
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      acc[r][0] = activate_avx2(*act, acc[r][0]);
      acc[r][1] = activate_avx2(*act, acc[r][1]);
    }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    if (Full) {
      _mm256_storeu_ps(c + r * ldc, acc[r][0]);
      _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
    } else {
      _mm256_maskstore_ps(c + r * ldc, m0, acc[r][0]);
      _mm256_maskstore_ps(c + r * ldc + 8, m1, acc[r][1]);
    }
  }
}

using TileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool, const float*, const FusedActivation*,
                       const float*, __m256i, __m256i);

template <bool Full, bool Packed>
TileFn tile_for(int64_t rows) {
  switch (rows) {
    case 1: return tile<1, Full, Packed>;
    case 2: return tile<2, Full, Packed>;
    case 3: return tile<3, Full, Packed>;
    case 4: return tile<4, Full, Packed>;
    case 5: return tile<5, Full, Packed>;
    default: return tile<6, Full, Packed>;
  }
}

TileFn tile_for(int64_t rows, bool full, bool packed) {
  if (packed) return full ? tile_for<true, true>(rows) : tile_for<false, true>(rows);
  return full ? tile_for<true, false>(rows) : tile_for<false, false>(rows);
}

// One or two rows (a decoder's token, a skinny product) by Q whole panels
// at once, A read where it lies: one panel's tile has only 2 or 4 chains of
// sums, each a multiply-add's latency behind the last, a quarter of the FMA
// peak at one row; Q panels give 8 (R 1, Q 4) or 12 (R 2, Q 3). The same
// sums in the same order as the one-panel tile.
template <int R, int Q>
__attribute__((target("avx2,fma"))) void wide_tile(const float* a, int64_t lda, const float* bp, int64_t panel_stride,
                                                   int64_t kc, float* c, int64_t ldc, bool first, const float* bias,
                                                   const FusedActivation* act) {
  __m256 acc[R][2 * Q];
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < 2 * Q; ++j)
      acc[r][j] = !first ? _mm256_loadu_ps(c + r * ldc + 8 * j) : bias ? _mm256_loadu_ps(bias + 8 * j) : _mm256_setzero_ps();
  for (int64_t t = 0; t < kc; ++t) {
    __m256 x[R];
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) x[r] = _mm256_broadcast_ss(a + r * lda + t);
#pragma GCC unroll 4
    for (int q = 0; q < Q; ++q) {
      const float* b = bp + q * panel_stride + t * kNR;
      const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 2
      for (int r = 0; r < R; ++r) {
        acc[r][2 * q] = _mm256_fmadd_ps(x[r], b0, acc[r][2 * q]);
        acc[r][2 * q + 1] = _mm256_fmadd_ps(x[r], b1, acc[r][2 * q + 1]);
      }
    }
  }
#pragma GCC unroll 2
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int j = 0; j < 2 * Q; ++j) {
      if (act && act->act != Act::None) acc[r][j] = activate_avx2(*act, acc[r][j]);
      _mm256_storeu_ps(c + r * ldc + 8 * j, acc[r][j]);
    }
}

// Rows of A a block of t's steps takes through each panel before the next
// panel: as many as fill L1 (48 rows of 256 steps at 48 KiB), 24 to 96.
// The row tiles of one block then read A from L1 while the panel comes from
// L2. Over all rows at once a block of A (1 MiB for BERT's 1024 rows at
// batch 8) came from L2 or beyond for every panel: one thread, Intel Xeon
// under the AVX2 cap, [1024,768]x[768,3072] 58.8 -> 47.5 ms and
// [1576,768]x[768,2304] 65.9 -> 53.1 ms; two threads 27.3 -> 24.7 and 37.1
// -> 28.2 ms; 24 to 48 rows within 3% of each other, 96 and more slower.
int64_t rows_per_block() {
  static const int64_t rows = [] {
    const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    const int64_t fit = (l1 > 0 ? l1 : 32 * 1024) / static_cast<int64_t>(kKC * sizeof(float));
    return std::clamp<int64_t>(fit / kMR * kMR, 24, 96);
  }();
  return rows;
}

// One tile of A: o[t * 6 + r] = row r's t (rows n .. 5 zero), 8 steps of t
// at a time through a register transpose (the 6 rows and two zeros in, each
// step's 6 values out as 4 + 2), the last steps one by one. Written a value
// at a time with a stride of 6 it took 3.6% of swin_t's time at batch 8.
__attribute__((target("avx2,fma"))) void pack_a_tile(const float* a, int64_t n, int64_t K, float* o) {
  int64_t t = 0;
  for (; t + 8 <= K; t += 8) {
    __m256 r[8];
    for (int64_t i = 0; i < 8; ++i) r[i] = i < n ? _mm256_loadu_ps(a + i * K + t) : _mm256_setzero_ps();
    avx2::transpose8(r);
    for (int64_t i = 0; i < 8; ++i) {
      float* d = o + (t + i) * kMR;
      _mm_storeu_ps(d, _mm256_castps256_ps128(r[i]));
      _mm_storel_pi(reinterpret_cast<__m64*>(d + 4), _mm256_extractf128_ps(r[i], 1));
    }
  }
  for (; t < K; ++t)
    for (int64_t i = 0; i < kMR; ++i) o[t * kMR + i] = i < n ? a[i * K + t] : 0.0f;
}

// A's rows in tiles of 6, each [K][6] (rows past the last zero): a tile's
// broadcasts then read one sequential stream, not six rows a few KiB apart.
void pack_a(const float* a, int64_t rows, int64_t K, float* out) {
  const int64_t tiles = (rows + kMR - 1) / kMR;
  parallel_for(tiles, std::max<int64_t>(1, 4096 / (K * kMR)), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) pack_a_tile(a + i * kMR * K, std::min(kMR, rows - i * kMR), K, out + i * K * kMR);
  });
}

// Columns panels [p0, p1) of Y = A B (+ bias), every row; A packed by pack_a
// (lda 0) or as given, rows lda apart.
__attribute__((target("avx2,fma"))) void panels_of(const Problem& p, const float* a, int64_t lda, const float* packed,
                                                   const float* bias, float* y, int64_t p0, int64_t p1) {
  const int64_t mc = rows_per_block();
  // One or two rows as they lie: whole panels Q at a time, the rest below.
  const int64_t wide = lda && p.rows <= 2 ? (p.rows == 1 ? 4 : 3) : 0;
  const int64_t whole_end = std::min(p1, p.N / kNR);  // panels [p0, whole_end) have 16 columns
  const int64_t wide_end = wide && whole_end > p0 ? p0 + (whole_end - p0) / wide * wide : p0;
  for (int64_t k0 = 0; k0 < p.K; k0 += kKC) {
    const int64_t kc = std::min(kKC, p.K - k0);
    for (int64_t q = p0; q < wide_end; q += wide) {
      const float* bp = packed + (q * p.K + k0) * kNR;
      float* c = y + q * kNR;
      const float* bq = bias ? bias + q * kNR : nullptr;
      const FusedActivation* act = k0 + kc == p.K ? &p.act : nullptr;
      if (p.rows == 1) wide_tile<1, 4>(a + k0, lda, bp, p.K * kNR, kc, c, p.N, k0 == 0, bq, act);
      else wide_tile<2, 3>(a + k0, lda, bp, p.K * kNR, kc, c, p.N, k0 == 0, bq, act);
    }
    for (int64_t b0 = 0; b0 < p.rows; b0 += mc) {
      const int64_t b1 = std::min(p.rows, b0 + mc);
      for (int64_t q = wide_end; q < p1; ++q) {
        const int64_t j0 = q * kNR, n = std::min(kNR, p.N - j0);
        const __m256i m0 = avx2::tail_mask(n), m1 = avx2::tail_mask(n - 8);
        const float* bp = packed + (q * p.K + k0) * kNR;
        // The block of panel rows the tiles take next, requested by this
        // block's first tile: a model's weights come from memory, each block
        // 16 KiB in one place, and the first tile over a block waited on
        // them (GPT-2's Gemms at 1 thread took 1.3x their time on a B in
        // cache; with 40 Bs in turn [128,768]x[768,3072] 7.06 -> 6.19 ms).
        const float* next = q + 1 < p1         ? bp + p.K * kNR
                            : b1 < p.rows      ? packed + (wide_end * p.K + k0) * kNR
                            : k0 + kc < p.K    ? packed + (p0 * p.K + k0 + kc) * kNR
                                               : nullptr;
        for (int64_t i0 = b0; i0 < b1; i0 += kMR) {
          const int64_t r = std::min(kMR, b1 - i0);
          const TileFn f = tile_for(r, n == kNR, lda == 0);
          const float* at = lda ? a + i0 * lda + k0 : a + (i0 * p.K + k0 * kMR);
          f(at, lda, bp, kc, y + i0 * p.N + j0, p.N, k0 == 0, bias ? bias + j0 : nullptr,
            k0 + kc == p.K ? &p.act : nullptr, i0 == b0 ? next : nullptr, m0, m1);
        }
      }
    }
  }
}

template <Op O>
void Run(KernelContext& ctx) {
  Problem p;
  if (!problem_of<O>(ctx, p)) ctx.fail("problem not supported by the AVX2 float product");
  PackedB local;
  PackedB* kept = onednn::node_state<PackedB>(ctx);
  PackedB& s = kept ? *kept : local;
  const std::shared_ptr<Buffer>& of = ctx.input(1).buffer();  // (its identity: reading its bytes would restore them)
  if (s.of != of.get() || !s.storage || s.K != p.K || s.N != p.N || s.trans_b != p.trans_b) {
    auto [storage, at] = aligned_floats(static_cast<size_t>((p.N + kNR - 1) / kNR * p.K * kNR));
    pack(ctx.input(1).data<float>(), p.trans_b, p.K, p.N, storage->data() + at);
    s = PackedB{of.get(), p.K, p.N, p.trans_b, storage, at};
    if (&s != &local && onednn::releasing_repacked_weights()) {
      const int64_t K = p.K, N = p.N;
      const bool tb = p.trans_b;
      of->release_bytes([storage = storage, at = at, tb, K, N](std::byte* dst) {
        unpack(storage->data() + at, tb, K, N, reinterpret_cast<float*>(dst));
      });
    }
  }
  // A packed where many panels read it (a tile's broadcasts then one
  // stream, not six rows K apart: 61% -> 80% of the FMA peak on
  // [128,768]x[768,3072], 10.5 -> 8.0 M cycles on [128,256]x[256,3072]);
  // with few panels the packing costs more than it saves ([1536,64]x[64,64],
  // 4 panels: 0.50 M cycles as A lies, 0.71 M packed).
  thread_local std::vector<float> ap;  // (the calling thread's; read by all)
  const float* a = ctx.input(0).data<float>();
  int64_t lda = p.K;
  if ((p.N + kNR - 1) / kNR >= 8 && p.rows > 2) {  // (one or two rows go as they lie, wide_tile)
    ap.resize(static_cast<size_t>((p.rows + kMR - 1) / kMR * kMR * p.K));
    pack_a(a, p.rows, p.K, ap.data());
    a = ap.data();
    lda = 0;
  }
  const float* bias = p.bias ? ctx.input(2).data<float>() : nullptr;
  float* y = uninitialized_output(ctx, 0, DataType::Float, p.out).mutable_data<float>();
  const int64_t panels = (p.N + kNR - 1) / kNR;
  // Panels in items of about a quarter of a thread's share, none under
  // 2^16 multiply-adds (a small product stays on the calling thread).
  const int64_t per_panel = std::max<int64_t>(1, p.rows * p.K * kNR);
  const int64_t grain = std::max<int64_t>({1, (int64_t{1} << 16) / per_panel, panels / (4 * thread_count())});
  const float* packed = s.panels();
  parallel_for(panels, grain, [&](int64_t q0, int64_t q1) { panels_of(p, a, lda, packed, bias, y, q0, q1); });
}

}  // namespace

void register_float_gemm_avx2_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "MatMul", 1, INT_MAX, "cpu-avx2", Run<Op::MatMul>, accepts<Op::MatMul>});
  r.add(KernelDef{"onnxscope.cpu", kFusedMatMul, 1, INT_MAX, "cpu-avx2", Run<Op::FusedMatMul>, accepts<Op::FusedMatMul>});
  r.add(KernelDef{"", "Gemm", 7, INT_MAX, "cpu-avx2", Run<Op::Gemm>, accepts<Op::Gemm>});
  r.add(KernelDef{"onnxscope.cpu", kFusedGemm, 1, INT_MAX, "cpu-avx2", Run<Op::FusedGemm>, accepts<Op::FusedGemm>});
}

}  // namespace onnxscope::cpu
