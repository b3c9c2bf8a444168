// The reference's double-precision matrix product (gemm_f64.h): A's rows
// are packed into double once per chunk, B's columns are shared out to the
// threads in items each packs once, and the result is computed in tiles of
// 8 x 24 kept in registers while t runs from 0 to K - 1. The compiler may not
// contract a multiply and an add into an FMA (which rounds once where the
// plain loop rounds twice); the tile uses FMA itself only where the products
// are exact (float operands), where it rounds as the pair does. So AVX-512,
// the plain loop and any blocking give the same bits.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_pd.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "reference/ops/math/gemm_f64.h"
#include "reference/ops/math/transpose8_avx512.h"
#include "reference/ops/math/vector_isa.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "cpu/thread_pool.h"
#include "onnxscope/deadline.h"
#include "reference/thread_scratch.h"

namespace onnxscope::ref::math {
namespace {

// A register tile: 24 accumulators of the 32 vector registers, 3 loads of B
// and 8 broadcasts of A per 24 fused multiply-adds. 6 x 16 (12 of them, 2
// and 6 per 12) ran at 31 against 43 G multiply-adds a second on one core of
// the Intel Xeon with B's panel in L2 (its peak: 42): the loads, not the
// arithmetic, set its pace.
constexpr int64_t kMR = 8, kNR = 24, kNV = kNR / 8;
constexpr int64_t kKC = 256;                  // t in blocks: A's 8 rows of a block are 16 KiB (L1)
constexpr int64_t kNCPanels = 16;             // the most panels of B one work item packs
constexpr int64_t kTileMax = kMR * kNR;       // the largest tile's sums
constexpr int64_t kAPackBytes = int64_t{8} << 20;  // A's rows packed at once (shared by the threads)
constexpr int64_t kBBlockBytes = int64_t{512} << 10;  // an item's B for one block of t (kept in L2)
constexpr int64_t kBPackBytes = int64_t{4} << 20;     // an item's B for every t
constexpr int64_t kPartBytes = int64_t{256} << 10;    // sums kept between blocks of t
constexpr int64_t kItemProducts = int64_t{1} << 15;  // the fewest products worth a work item of their own
constexpr int64_t kMC = 256;  // rows counted for max_items (a chunk may hold more)

// c[r][j] = sum over t of a[t][r] * b[t][j], t in order, starting from 0
// or, with `resume`, from c's own values: the sums of the terms before
// (a block of t), so that t in blocks gives the bits t in one run gives.
// Fused: with fused multiply-adds, for exact products (gemm_f64.h), where
// acc + a * b rounds once either way; otherwise a multiply and an add.
template <bool Fused>
__attribute__((target("avx512f"))) void tile_avx512(int64_t K, const double* a, const double* b, double* c, bool resume) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  __m512d acc[kMR][kNV];
  for (int r = 0; r < kMR; ++r)
    for (int v = 0; v < kNV; ++v) acc[r][v] = resume ? _mm512_loadu_pd(c + r * kNR + 8 * v) : _mm512_setzero_pd();
  for (int64_t t = 0; t < K; ++t) {
    __m512d bv[kNV];
    for (int v = 0; v < kNV; ++v) bv[v] = _mm512_loadu_pd(b + t * kNR + 8 * v);
    for (int r = 0; r < kMR; ++r) {
      const __m512d av = _mm512_set1_pd(a[t * kMR + r]);
      for (int v = 0; v < kNV; ++v) {
        if constexpr (Fused) acc[r][v] = _mm512_fmadd_pd(av, bv[v], acc[r][v]);
        else acc[r][v] = _mm512_add_pd(acc[r][v], _mm512_mul_pd(av, bv[v]));
      }
    }
  }
  for (int r = 0; r < kMR; ++r)
    for (int v = 0; v < kNV; ++v) _mm512_storeu_pd(c + r * kNR + 8 * v, acc[r][v]);
}

void tile_plain(int64_t K, const double* a, const double* b, double* c, bool resume) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  double acc[kMR][kNR] = {};
  if (resume)
    for (int r = 0; r < kMR; ++r)
      for (int j = 0; j < kNR; ++j) acc[r][j] = c[r * kNR + j];
  for (int64_t t = 0; t < K; ++t)
    for (int r = 0; r < kMR; ++r) {
      const double av = a[t * kMR + r];
      for (int j = 0; j < kNR; ++j) {
        const double p = av * b[t * kNR + j];
        acc[r][j] = acc[r][j] + p;
      }
    }
  for (int r = 0; r < kMR; ++r)
    for (int j = 0; j < kNR; ++j) c[r * kNR + j] = acc[r][j];
}

// AVX2's tile: 6 x 8, with its own packing (A's panels 6 rows wide, B's 8
// columns): 12 accumulators, 2 loads of B and a broadcast of A, and a
// register for the unfused form's product, in AVX2's 16 registers. (The
// 8 x 24 tile run as four 4 x 12 quarters read each line of A and B twice
// a pass, and a 4 x 12 tile left GCC no register spare: both ran at about
// 4 multiply-adds a cycle of the AMD EPYC's 8, the second spilling its sums.)
constexpr int64_t kMR2 = 6, kNR2 = 8;

template <bool Fused>
__attribute__((target("avx2,fma"))) void tile_avx2(int64_t K, const double* a, const double* b, double* c, bool resume) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  __m256d acc[kMR2][2];
#pragma GCC unroll 6
  for (int r = 0; r < kMR2; ++r) {
    acc[r][0] = resume ? _mm256_loadu_pd(c + r * kNR2) : _mm256_setzero_pd();
    acc[r][1] = resume ? _mm256_loadu_pd(c + r * kNR2 + 4) : _mm256_setzero_pd();
  }
  for (int64_t t = 0; t < K; ++t) {
    const __m256d b0 = _mm256_loadu_pd(b + t * kNR2), b1 = _mm256_loadu_pd(b + t * kNR2 + 4);
#pragma GCC unroll 6
    for (int r = 0; r < kMR2; ++r) {
      const __m256d av = _mm256_broadcast_sd(a + t * kMR2 + r);
      if constexpr (Fused) {
        acc[r][0] = _mm256_fmadd_pd(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_pd(av, b1, acc[r][1]);
      } else {
        acc[r][0] = _mm256_add_pd(acc[r][0], _mm256_mul_pd(av, b0));
        acc[r][1] = _mm256_add_pd(acc[r][1], _mm256_mul_pd(av, b1));
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMR2; ++r) {
    _mm256_storeu_pd(c + r * kNR2, acc[r][0]);
    _mm256_storeu_pd(c + r * kNR2 + 4, acc[r][1]);
  }
}

using TileFn = void (*)(int64_t, const double*, const double*, double*, bool);

// A tile function and the panel widths it reads: A's rows packed `mr` at a
// time, B's columns `nr` at a time; c is mr x nr, rows nr apart.
struct Tile {
  TileFn fn;
  int64_t mr, nr;
};

}  // namespace

namespace {

void widen_rows(const float* src, int64_t stride, double* dst, int64_t K,
                                                            int64_t groups, int64_t width) {
  for (int64_t t = 0; t < K; ++t)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t k = 0; k < width; ++k) dst[(g * K + t) * width + k] = static_cast<double>(src[t * stride + g * width + k]);
}
}  // namespace

namespace {

__attribute__((target("avx512f"))) void pack_rows8_avx512(const float* src, int64_t stride, int64_t K, double* dst) {
  int64_t t = 0;
  for (; t + 8 <= K; t += 8) {
    __m512d r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm512_cvtps_pd(_mm256_loadu_ps(src + i * stride + t));
    store_transposed8(r, dst + t * 8, 8);
  }
  for (; t < K; ++t)
    for (int i = 0; i < 8; ++i) dst[t * 8 + i] = static_cast<double>(src[i * stride + t]);
}

// The same in AVX2 for `width` rows (AVX2's tile packs 6): four t of each
// row, 4 x 4 blocks transposed, the rows past a multiple of 4 one by one.
__attribute__((target("avx2,fma"))) void pack_rows_avx2(const float* src, int64_t stride, int64_t K, int64_t width,
                                                        double* dst) {
  const int64_t whole = width / 4 * 4;
  int64_t t = 0;
  for (; t + 4 <= K; t += 4) {
    for (int64_t i = whole; i < width; ++i)
      for (int64_t k = 0; k < 4; ++k) dst[(t + k) * width + i] = static_cast<double>(src[i * stride + t + k]);
    for (int64_t h = 0; h < whole; h += 4) {
      __m256d r[4];
      for (int i = 0; i < 4; ++i) r[i] = _mm256_cvtps_pd(_mm_loadu_ps(src + (h + i) * stride + t));
      const __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
      const __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
      double* o = dst + t * width + h;
      _mm256_storeu_pd(o + 0 * width, _mm256_permute2f128_pd(t0, t2, 0x20));
      _mm256_storeu_pd(o + 1 * width, _mm256_permute2f128_pd(t1, t3, 0x20));
      _mm256_storeu_pd(o + 2 * width, _mm256_permute2f128_pd(t0, t2, 0x31));
      _mm256_storeu_pd(o + 3 * width, _mm256_permute2f128_pd(t1, t3, 0x31));
    }
  }
  for (; t < K; ++t)
    for (int64_t i = 0; i < width; ++i) dst[t * width + i] = static_cast<double>(src[i * stride + t]);
}

}  // namespace

bool detail::pack_rows(const float* src, int64_t stride, int64_t K, int64_t width, double* dst) {
  const VectorIsa isa = vector_isa();
  if (isa == VectorIsa::Avx512 && width == 8) {
    pack_rows8_avx512(src, stride, K, dst);
    return true;
  }
  if (isa >= VectorIsa::Avx2 && width >= 4) {
    pack_rows_avx2(src, stride, K, width, dst);
    return true;
  }
  return false;
}

namespace {

// widen_rows in AVX-512, asking for the row kWidenAhead rows on as it goes:
// each row of a weight read here is a few cache lines a page apart, which
// the hardware's prefetchers do not follow, so every row waited on memory.
constexpr int64_t kWidenAhead = 8;

// Asks for the cache lines of `bytes` bytes from `row` (SSE: every x86-64).
inline void request_row(const float* row, int64_t bytes) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < bytes; b += 64) _mm_prefetch(p + b, _MM_HINT_T0);
  _mm_prefetch(p + bytes - 1, _MM_HINT_T0);
}

__attribute__((target("avx512f"))) void widen_avx512(const float* src, int64_t stride, double* dst, int64_t K,
                                                     int64_t groups, int64_t width) {
  const int64_t bytes = groups * width * static_cast<int64_t>(sizeof(float));  // of a row read here
  for (int64_t t = 0; t < K; ++t) {
    const float* row = src + t * stride;
    if (t + kWidenAhead < K) request_row(row + kWidenAhead * stride, bytes);
    for (int64_t g = 0; g < groups; ++g) {
      double* out = dst + (g * K + t) * width;
      const float* in = row + g * width;
      int64_t k = 0;
      for (; k + 8 <= width; k += 8) _mm512_storeu_pd(out + k, _mm512_cvtps_pd(_mm256_loadu_ps(in + k)));
      for (; k < width; ++k) out[k] = static_cast<double>(in[k]);
    }
  }
}

// The same in AVX2.
__attribute__((target("avx2,fma"))) void widen_avx2(const float* src, int64_t stride, double* dst, int64_t K,
                                                    int64_t groups, int64_t width) {
  const int64_t bytes = groups * width * static_cast<int64_t>(sizeof(float));
  for (int64_t t = 0; t < K; ++t) {
    const float* row = src + t * stride;
    if (t + kWidenAhead < K) request_row(row + kWidenAhead * stride, bytes);
    for (int64_t g = 0; g < groups; ++g) {
      double* out = dst + (g * K + t) * width;
      const float* in = row + g * width;
      int64_t k = 0;
      for (; k + 4 <= width; k += 4) _mm256_storeu_pd(out + k, _mm256_cvtps_pd(_mm_loadu_ps(in + k)));
      for (; k < width; ++k) out[k] = static_cast<double>(in[k]);
    }
  }
}

}  // namespace

void detail::widen(const float* src, int64_t stride, double* dst, int64_t K, int64_t groups, int64_t width) {
  switch (vector_isa()) {
    case VectorIsa::Avx512: return widen_avx512(src, stride, dst, K, groups, width);
    case VectorIsa::Avx2: return widen_avx2(src, stride, dst, K, groups, width);
    default: return widen_rows(src, stride, dst, K, groups, width);
  }
}

namespace {

Tile best_tile(VectorIsa isa, bool exact_products) {
  switch (isa) {
    case VectorIsa::Avx512: return {exact_products ? tile_avx512<true> : tile_avx512<false>, kMR, kNR};
    case VectorIsa::Avx2: return {exact_products ? tile_avx2<true> : tile_avx2<false>, kMR2, kNR2};
    default: return {tile_plain, kMR, kNR};
  }
}

}  // namespace

void gemm_packed(const Packer& a, const Packer& b, int64_t M, int64_t N, int64_t K, const RowSink& sink,
                 bool exact_products) {
  if (M <= 0 || N <= 0) return;
  const Tile tl = best_tile(vector_isa(), exact_products);
  const TileFn tile = tl.fn;
  const int64_t kMR = tl.mr, kNR = tl.nr;  // (this product's tile, shadowing the AVX-512 one)
  const int64_t threads = cpu::thread_count();
  const int64_t k_bytes = std::max<int64_t>(K, 1) * static_cast<int64_t>(sizeof(double));
  auto ceil_div = [](int64_t x, int64_t y) { return (x + y - 1) / y; };
  // A is packed once per chunk of rows (at most kAPackBytes) into a buffer
  // every thread reads; the threads then share out B's column panels, each
  // packing its own once. So B (the weight, or the convolution's columns)
  // is widened once per chunk, not once per block of A's rows: with chunks
  // of 2 MiB, ViT's [197, 3072] x [3072, 768] widened its B three times
  // (a quarter of the product's time at one thread).
  const int64_t row_tiles = ceil_div(M, kMR);
  const int64_t chunks = ceil_div(row_tiles, std::max<int64_t>(1, kAPackBytes / (k_bytes * kMR)));
  const int64_t chunk_tiles = ceil_div(row_tiles, chunks);
  // Column items: about 8 per thread (the last one to finish waits for at
  // most one), each item's packed B for one block of t at most
  // kBBlockBytes, so it stays in L2 while every row tile passes over it.
  const int64_t panels = ceil_div(N, kNR);
  const int64_t block_bytes = std::min<int64_t>(std::max<int64_t>(K, 1), kKC) * static_cast<int64_t>(sizeof(double));
  const int64_t cap = std::clamp<int64_t>(std::min(kBBlockBytes / (block_bytes * kNR), kBPackBytes / (k_bytes * kNR)), 1, kNCPanels);
  // A small product stays on one thread: starting the others costs more
  // than its work (a Loop body's [4, 64] x [64, 64], 16 thousand products).
  const int64_t max_items = std::max<int64_t>(1, std::min<int64_t>(M, kMC) * N * std::max<int64_t>(K, 1) / kItemProducts);
  const int64_t per_item =
      std::clamp<int64_t>(std::max(ceil_div(panels, 8 * threads), ceil_div(panels, max_items)), 1, cap);
  // Items of as near equal panel counts as can be, as many as a multiple of
  // the threads: 22 panels in 11 items of 2 kept one thread on 12 of them
  // while the other, done with 10, waited.
  int64_t col_items = ceil_div(panels, per_item);
  if (col_items > 1 && col_items % threads != 0) col_items = std::min(panels, ceil_div(col_items, threads) * threads);
  thread_local ScratchVector<double> ap;  // the calling thread's; read by all
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t t0 = chunk * chunk_tiles, tiles = std::min(chunk_tiles, row_tiles - t0);
    if (tiles <= 0) break;
    const int64_t i0 = t0 * kMR, rows = std::min(tiles * kMR, M - i0);
    ap.resize(static_cast<size_t>(tiles * K * kMR + 1));
    double* apd = ap.data();
    cpu::parallel_for(tiles, std::max<int64_t>(1, 4096 / (std::max<int64_t>(K, 1) * kMR)), [&](int64_t lo, int64_t hi) {
      a.fn(a.ctx, i0 + lo * kMR, std::min(hi * kMR, rows) - lo * kMR, K, kMR, apd + lo * K * kMR);
    });
    // Few columns (N small): split the rows too, so every thread has work.
    const int64_t row_splits =
        std::min({tiles, std::max<int64_t>(1, ceil_div(2 * threads, col_items)), std::max<int64_t>(1, max_items / col_items)});
    const int64_t split_tiles = ceil_div(tiles, row_splits);
    cpu::parallel_for(col_items * row_splits, 1, [&](int64_t lo, int64_t hi) {
      thread_local ScratchVector<double> bp, part;  // (on cache lines: the tile's loads are whole lines)
      alignas(64) double c[kTileMax];
      for (int64_t item = lo; item < hi; ++item) {
        poll_deadline();  // a run's time limit holds inside one long product too
        const int64_t ci = item / row_splits, p0 = ci * panels / col_items, np = (ci + 1) * panels / col_items - p0;
        const int64_t r0 = (item % row_splits) * split_tiles, nr = std::min(split_tiles, tiles - r0);
        if (np <= 0 || nr <= 0) continue;
        const int64_t j0 = p0 * kNR, cols = std::min(np * kNR, N - j0);
        bp.resize(static_cast<size_t>(np * K * kNR + 1));
        b.fn(b.ctx, j0, cols, K, kNR, bp.data());
        if (K <= kKC) {
          for (int64_t r = r0; r < r0 + nr; ++r)
            for (int64_t p = 0; p < np; ++p) {
              tile(K, apd + r * K * kMR, bp.data() + p * K * kNR, c, false);
              const int64_t n = std::min(kNR, cols - p * kNR);
              for (int64_t rr = 0; rr < kMR && r * kMR + rr < rows; ++rr)
                sink(i0 + r * kMR + rr, j0 + p * kNR, c + rr * kNR, n);
            }
          continue;
        }
        // t in blocks of kKC: a tile's rows of A for one block (16 KiB)
        // stay in L1 while it passes over the item's panels, and the item's
        // B for the block stays in L2 while the row tiles pass (with t
        // whole, a tile of [197, 3072] x [3072, 768] streamed 192 KiB of A
        // and 576 KiB of B). The sums wait in `part` between blocks: t still
        // runs in order for every result, so the bits are the same.
        const int64_t tile_doubles = kMR * kNR;
        const int64_t group = std::clamp<int64_t>(kPartBytes / (np * tile_doubles * 8), 1, nr);
        part.resize(static_cast<size_t>(group * np * tile_doubles));
        for (int64_t g0 = r0; g0 < r0 + nr; g0 += group) {
          const int64_t gn = std::min(group, r0 + nr - g0);
          for (int64_t k0 = 0; k0 < K; k0 += kKC) {
            const int64_t len = std::min(kKC, K - k0);
            for (int64_t r = 0; r < gn; ++r)
              for (int64_t p = 0; p < np; ++p)
                tile(len, apd + ((g0 + r) * K + k0) * kMR, bp.data() + (p * K + k0) * kNR,
                     part.data() + (r * np + p) * tile_doubles, k0 > 0);
          }
          for (int64_t r = 0; r < gn; ++r)
            for (int64_t p = 0; p < np; ++p) {
              const double* acc = part.data() + (r * np + p) * tile_doubles;
              const int64_t n = std::min(kNR, cols - p * kNR);
              for (int64_t rr = 0; rr < kMR && (g0 + r) * kMR + rr < rows; ++rr)
                sink(i0 + (g0 + r) * kMR + rr, j0 + p * kNR, acc + rr * kNR, n);
            }
        }
      }
    });
  }
}

PackedB::PackedB(const Packer& b, int64_t N, int64_t K, ScratchVector<double>& storage)
    : n_(N), k_(K), isa_(vector_isa()), panels_(&storage) {
  const int64_t nr = best_tile(isa_, true).nr;  // (the tile multiply will use reads panels this wide)
  const int64_t panels = (N + nr - 1) / nr;
  storage.resize(static_cast<size_t>(std::max<int64_t>(panels * K * nr, 1)));
  double* out = storage.data();
  // Panels shared out to the threads: each packs its own (every value).
  cpu::parallel_for(panels, std::max<int64_t>(1, 8192 / (std::max<int64_t>(K, 1) * nr)), [&](int64_t lo, int64_t hi) {
    b.fn(b.ctx, lo * nr, std::min(hi * nr, N) - lo * nr, K, nr, out + lo * K * nr);
  });
}

void PackedB::multiply(const Packer& a, int64_t M, double* out, int64_t ldo, bool exact_products) const {
  if (M <= 0 || n_ <= 0) return;
  const Tile tl = best_tile(isa_, exact_products);
  const TileFn tile = tl.fn;
  const int64_t mr = tl.mr, nr = tl.nr;
  const int64_t row_tiles = (M + mr - 1) / mr, panels = (n_ + nr - 1) / nr;
  ThreadScratch<double, PackedB> ap;  // A's rows packed
  ap->resize(static_cast<size_t>(std::max<int64_t>(row_tiles * k_ * mr, 1)));
  a.fn(a.ctx, 0, M, k_, mr, ap->data());
  const double* a_packed = ap->data();
  // B's panels shared out to the threads when the product is large enough
  // (inline inside another parallel region, such as a recurrent layer's
  // split over batch entries).
  const int64_t grain = std::max<int64_t>(1, kItemProducts / std::max<int64_t>(1, row_tiles * mr * k_ * nr));
  cpu::parallel_for(panels, grain, [&](int64_t p0, int64_t p1) {
    alignas(64) double c[kTileMax];
    for (int64_t p = p0; p < p1; ++p) {  // a panel of B (K x nr) stays in L1 while the row tiles pass
      const int64_t j0 = p * nr, n = std::min(nr, n_ - j0);
      for (int64_t r = 0; r < row_tiles; ++r) {
        tile(k_, a_packed + r * k_ * mr, panels_->data() + p * k_ * nr, c, false);
        for (int64_t rr = 0; rr < mr && r * mr + rr < M; ++rr)
          std::copy(c + rr * nr, c + rr * nr + n, out + (r * mr + rr) * ldo + j0);
      }
    }
  });
}

namespace {

// R rows (i0 ..) by up to 8 * V columns (j0 .., `cols` of them) of A B,
// t in order: the sums stay in registers while t runs (R x V of them), each
// of B's rows read once for the R rows. acc + a * b with a * b exact (two
// floats' product fits a double), so the fused multiply-add rounds as the
// plain loop's multiply and add do: the same bits.
template <int R, int V>
__attribute__((target("avx512f,avx512vl"))) void few_rows_block(const Operand& a, const Operand& b, int64_t i0, int64_t j0,
                                                                int64_t cols, int64_t K, double* out, int64_t ldo) {
  __m512d acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_pd();
  __mmask8 mask[V];
  for (int v = 0; v < V; ++v) {
    const int64_t left = cols - 8 * v;  // at least 1: V is cols / 8 rounded up
    mask[v] = left >= 8 ? __mmask8(0xff) : static_cast<__mmask8>((1u << left) - 1u);
  }
  const int64_t a_elem = static_cast<int64_t>(sizeof(float));
  for (int64_t t = 0; t < K; ++t) {
    const float* brow = reinterpret_cast<const float*>(b.data + (t * b.row + j0) * a_elem);
    __m512d bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(mask[v], brow + 8 * v));  // (masked lanes are not read)
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      float av;
      std::memcpy(&av, a.data + ((i0 + r) * a.row + t * a.col) * a_elem, sizeof av);
      const __m512d s = _mm512_set1_pd(static_cast<double>(av));
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_pd(s, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_mask_storeu_pd(out + r * ldo + 8 * v, mask[v], acc[r][v]);
}

// The same block in AVX2: R rows by up to 4 * V columns (12 at most: R x V
// sums, V loads of B and a broadcast in AVX2's 16 registers).
template <int R, int V>
__attribute__((target("avx2,fma"))) void few_rows_block_avx2(const Operand& a, const Operand& b, int64_t i0, int64_t j0,
                                                             int64_t cols, int64_t K, double* out, int64_t ldo) {
  __m256d acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_pd();
  __m128i fmask[V];  // lanes of 4 floats read (masked lanes are not read)
  __m256i dmask[V];  // and of 4 doubles written
  for (int v = 0; v < V; ++v) {
    const int left = static_cast<int>(std::min<int64_t>(cols - 4 * v, 4));  // at least 1
    fmask[v] = _mm_cmpgt_epi32(_mm_set1_epi32(left), _mm_setr_epi32(0, 1, 2, 3));
    dmask[v] = _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  const int64_t a_elem = static_cast<int64_t>(sizeof(float));
  for (int64_t t = 0; t < K; ++t) {
    const float* brow = reinterpret_cast<const float*>(b.data + (t * b.row + j0) * a_elem);
    __m256d bv[V];
    for (int v = 0; v < V; ++v) bv[v] = _mm256_cvtps_pd(_mm_maskload_ps(brow + 4 * v, fmask[v]));
    for (int r = 0; r < R; ++r) {
      float av;
      std::memcpy(&av, a.data + ((i0 + r) * a.row + t * a.col) * a_elem, sizeof av);
      const __m256d s = _mm256_set1_pd(static_cast<double>(av));
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_pd(s, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm256_maskstore_pd(out + r * ldo + 4 * v, dmask[v], acc[r][v]);
}

using BlockFn = void (*)(const Operand&, const Operand&, int64_t, int64_t, int64_t, int64_t, double*, int64_t);

template <int R>
BlockFn block_for(int64_t vectors) {
  switch (vectors) {
    case 1: return &few_rows_block<R, 1>;
    case 2: return &few_rows_block<R, 2>;
    case 3: return &few_rows_block<R, 3>;
    default: return &few_rows_block<R, 4>;
  }
}

template <int R>
BlockFn block_for_avx2(int64_t vectors) {
  switch (vectors) {
    case 1: return &few_rows_block_avx2<R, 1>;
    case 2: return &few_rows_block_avx2<R, 2>;
    default: return &few_rows_block_avx2<R, 3>;
  }
}

// The block for `rows` rows by `cols` columns (at most 32 in AVX-512, 12 in AVX2).
BlockFn few_rows_kernel(bool avx512, int64_t rows, int64_t cols) {
  const int64_t vectors = avx512 ? (cols + 7) / 8 : (cols + 3) / 4;
  switch (rows) {
    case 1: return avx512 ? block_for<1>(vectors) : block_for_avx2<1>(vectors);
    case 2: return avx512 ? block_for<2>(vectors) : block_for_avx2<2>(vectors);
    case 3: return avx512 ? block_for<3>(vectors) : block_for_avx2<3>(vectors);
    default: return avx512 ? block_for<4>(vectors) : block_for_avx2<4>(vectors);
  }
}

}  // namespace

bool gemm_few_rows_f32(const Operand& a, const Operand& b, int64_t M, int64_t N, int64_t K, const RowSink& sink) {
  const VectorIsa isa = vector_isa();
  // Up to 8 rows while B stays in the caches (4 MB of floats): each group of
  // 4 rows reads it again; past that, packing it once for all rows is cheaper.
  if (isa == VectorIsa::Plain || M > 8 || (M > 4 && K * N > (int64_t{1} << 20)) || M <= 0 || N <= 0 || b.col != 1)
    return false;
  // Columns in blocks of 512 (4 KB of sums a row), shared out to the
  // threads where the product is large enough to be worth it; within a
  // block, 4 rows by 32 columns (AVX-512) or 12 (AVX2) at a time in registers.
  const bool avx512 = isa == VectorIsa::Avx512;
  constexpr int64_t kCols = 512, kRows = 4;
  const int64_t kChunk = avx512 ? 32 : 12;
  const int64_t blocks = (N + kCols - 1) / kCols;
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, M * kCols * std::max<int64_t>(K, 1)));
  cpu::parallel_for(blocks, grain, [&](int64_t lo, int64_t hi) {
    double sums[kRows * kCols];  // rows n apart: a narrow block touches only the stack pages it needs
    for (int64_t blk = lo; blk < hi; ++blk) {
      poll_deadline();
      const int64_t j0 = blk * kCols, n = std::min(kCols, N - j0);
      for (int64_t i0 = 0; i0 < M; i0 += kRows) {
        const int64_t rows = std::min(kRows, M - i0);
        for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
          const int64_t cols = std::min(kChunk, n - c0);
          few_rows_kernel(avx512, rows, cols)(a, b, i0, j0 + c0, cols, K, sums + c0, n);
        }
        for (int64_t r = 0; r < rows; ++r) sink(i0 + r, j0, sums + r * n, n);
      }
    }
  });
  return true;
}

bool exact_integer_gemm(const int64_t* a, const int64_t* b, int64_t M, int64_t N, int64_t K, int64_t* y) {
  if (M <= 0 || N <= 0 || K <= 0) return false;
  auto largest = [](const int64_t* v, uint64_t n) {
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; ++i) m = std::max(m, v[i] < 0 ? 0 - static_cast<uint64_t>(v[i]) : static_cast<uint64_t>(v[i]));
    return m;
  };
  // Every partial sum is at most K * |a|max * |b|max: below 2^53 all are
  // integers double holds exactly (products and sums alike), so the double
  // product is the integer one, fused or not.
  const double bound = static_cast<double>(K) * static_cast<double>(largest(a, static_cast<uint64_t>(M * K))) *
                       static_cast<double>(largest(b, static_cast<uint64_t>(K * N)));
  if (!(bound < 9007199254740992.0)) return false;
  const Operand A{reinterpret_cast<const std::byte*>(a), K, 1}, B{reinterpret_cast<const std::byte*>(b), 1, N};
  const Packer pa{detail::pack_strided<int64_t>, &A}, pb{detail::pack_strided<int64_t>, &B};
  gemm_packed(pa, pb, M, N, K, [y, N](int64_t i, int64_t j0, const double* v, int64_t n) {
    int64_t* out = y + i * N + j0;
    for (int64_t k = 0; k < n; ++k) out[k] = static_cast<int64_t>(v[k]);
  }, /*exact_products=*/true);
  return true;
}

}  // namespace onnxscope::ref::math
