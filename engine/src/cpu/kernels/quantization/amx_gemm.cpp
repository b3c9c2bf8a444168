// The 8-bit product of vnni_gemm.h on AMX tiles: blocks of 32 rows by 32
// columns as 2x2 tiles of 16x16 int32 sums, tdpbusd over 64 k at a time (a
// tile product is 16,384 multiply-adds where vpdpbusd does 64), then the
// same output stages as the VNNI path (vnni_epilogue.h) on the sums, read
// back from a small block in L1. The sums are exact int32 either way, so Y
// is the same bits.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // the stages round a product before adding to it
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__linux__) && defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "cpu/kernels/quantization/vnni_epilogue.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu::vnni {
namespace {

constexpr int64_t kBlock = 32;  // rows and columns of a block: 2x2 tiles
constexpr int64_t kChunk = 64;  // k per tile product

// Linux hands a process AMX's tile state only on request (arch_prctl), and
// only where the CPU and kernel have it; without it the first tile
// instruction faults.
bool amx_granted() {
#if defined(__linux__) && defined(__x86_64__)
  if (const char* off = std::getenv("ONNXSCOPE_CPU_NO_AMX"); off && *off && std::strcmp(off, "0") != 0) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = (d >> 24) & 1u, int8 = (d >> 25) & 1u;
  if (!tile || !int8 || !vnni_available()) return false;  // the stages are AVX-512
  constexpr long kReqXcompPerm = 0x1023, kXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) == 0;
#else
  return false;
#endif
}

std::atomic<bool> g_enabled{true};
std::atomic<int64_t> g_products{0};

// ldtilecfg's 64 bytes: palette 1, every tile used here 16 rows of 64 bytes
// (sums: 16 int32; A: 64 bytes of a row; B: 16 rows of four k for 16 columns).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// One block's sums into s[32][32]: tiles 0-3 the sums (row tile, column
// tile), 4-5 A's two row tiles, 6-7 B's two column tiles. RT, CT: how many
// of each a block at the edge needs (its other sums are not written).
// a0, a1: the two row tiles' A, 1 KiB (16 rows by 64 k) per 64 k; b0, b1:
// the columns' panels, 1 KiB (16 rows of four k for 16 columns) per 64 k.
// Contiguous tiles: strided A rows ran at about half the rate.
template <int RT, int CT>
__attribute__((target("amx-tile,amx-int8"))) void block(const uint8_t* a0, const uint8_t* a1, const int8_t* b0,
                                                         const int8_t* b1, int64_t chunks, int32_t* s) {
  constexpr int64_t ld = kBlock * 4;
  // GCC 12's tileloadd asm names no memory: without this the stores that
  // packed A could move past it.
  __asm__ __volatile__("" ::: "memory");
  _tile_zero(0);
  if constexpr (CT == 2) _tile_zero(1);
  if constexpr (RT == 2) _tile_zero(2);
  if constexpr (RT == 2 && CT == 2) _tile_zero(3);
  for (int64_t q = 0; q < chunks; ++q) {
    // Each load just before its first product: tiles are not renamed, so
    // a load waits for the products still reading its tile.
    _tile_loadd(4, a0 + q * 1024, 64);
    _tile_loadd(6, b0 + q * 1024, 64);
    _tile_dpbusd(0, 4, 6);
    if constexpr (CT == 2) {
      _tile_loadd(7, b1 + q * 1024, 64);
      _tile_dpbusd(1, 4, 7);
    }
    if constexpr (RT == 2) {
      _tile_loadd(5, a1 + q * 1024, 64);
      _tile_dpbusd(2, 5, 6);
      if constexpr (CT == 2) _tile_dpbusd(3, 5, 7);
    }
  }
  _tile_stored(0, s, ld);
  if constexpr (CT == 2) _tile_stored(1, s + 16, ld);
  if constexpr (RT == 2) _tile_stored(2, s + 16 * kBlock, ld);
  if constexpr (RT == 2 && CT == 2) _tile_stored(3, s + 16 * kBlock + 16, ld);
}

using BlockFn = void (*)(const uint8_t*, const uint8_t*, const int8_t*, const int8_t*, int64_t, int32_t*);
BlockFn block_for(int64_t rows, int64_t columns) {
  if (rows > 16) return columns > 16 ? block<2, 2> : block<2, 1>;
  return columns > 16 ? block<1, 2> : block<1, 1>;
}

__attribute__((target("amx-tile"))) void load_config() {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) {
    cfg.colsb[i] = 64;
    cfg.rows[i] = 16;
  }
  // GCC 12's ldtilecfg asm says it reads 8 of the 64 bytes: the others'
  // stores were dropped without this.
  __asm__ __volatile__("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}
__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

// The block's sums (R rows, `cols` columns of s, 32 apart) completed with
// each column's start and each row's term, then E's stage into out (which
// may be s itself with ldy 32: each 16 sums are read before they are written).
template <class E, typename T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void finish(const Tile& t, const int32_t* s,
                                                                         const int32_t* row_terms, int64_t R,
                                                                         int64_t cols, T* out, int64_t ldy) {
  for (int64_t j = 0; j < cols; j += 16) {
    const __m512i start = _mm512_loadu_si512(t.start + j);
    const int lanes = static_cast<int>(std::min<int64_t>(16, cols - j));
    const auto m = static_cast<__mmask16>(lanes == 16 ? 0xffffu : (1u << lanes) - 1u);
    for (int64_t r = 0; r < R; ++r) {
      __m512i acc = _mm512_add_epi32(_mm512_loadu_si512(s + r * kBlock + j), start);
      if (row_terms) acc = _mm512_add_epi32(acc, _mm512_set1_epi32(row_terms[r]));
      E::template store<T>(t, j, acc, out + r * ldy + j, m);
    }
  }
}

// A row as the tiles read it: K bytes with their top bits flipped by `flip`
// (int8 A read as uint8), 64 k at a time 1 KiB apart; returns their sum.
__attribute__((target("avx512f,avx512bw"))) int64_t pack_row(const uint8_t* src, uint8_t* dst, int64_t K, uint8_t flip) {
  const __m512i x = _mm512_set1_epi8(static_cast<char>(flip));
  __m512i sums = _mm512_setzero_si512();
  for (int64_t k = 0; k < K; k += 64) {
    const __mmask64 m = K - k >= 64 ? ~__mmask64{0} : (__mmask64{1} << (K - k)) - 1;
    const __m512i v = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, src + k), _mm512_maskz_mov_epi8(m, x));
    _mm512_mask_storeu_epi8(dst + k * 16, m, v);
    sums = _mm512_add_epi64(sums, _mm512_sad_epu8(v, _mm512_setzero_si512()));  // eight bytes' sum per lane
  }
  return _mm512_reduce_add_epi64(sums);
}

}  // namespace

bool amx_available() {
  static const bool yes = amx_granted();
  return yes;
}

void set_amx(bool enabled) { g_enabled.store(enabled, std::memory_order_relaxed); }

int64_t amx_products() { return g_products.load(std::memory_order_relaxed); }

// At least four column pairs (N of 128): A is packed once for the tiles
// (a pass over it, rows x K bytes), which pays only where several pairs
// read it. A MobileNetV2's 1x1 layers down to 24 or 32 channels took 2-4
// times the VNNI registers' time on the tiles ([3136,144]x[144,24]: 0.144
// against 0.058 ms in the model); from N = 256 the tiles are faster.
bool amx_shape(int64_t rows, int64_t K, int64_t N) {
  return rows >= 16 && K >= kChunk && N >= 4 * kBlock && rows * K * N >= (int64_t{1} << 19);
}

bool run_amx(const Product& p, const Columns& c) {
  const PackedB& b = *p.b;
  const int64_t K = b.K, N = b.N, P = (N + 15) / 16;
  // Below a tile's 16 rows or 64 k most of each tile product would be
  // padding, and below half a million multiply-adds packing A and loading
  // the tiles cost more than they save ([16,64]x[64,64]: 4.8 us against the
  // registers' 3.8; [32,128]x[128,128] even): the VNNI registers do those.
  if (!g_enabled.load(std::memory_order_relaxed) || !amx_shape(p.rows, K, N) || !amx_available()) return false;
  g_products.fetch_add(1, std::memory_order_relaxed);
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  const int64_t esize = p.type == Product::Type::f32 || p.type == Product::Type::s32 ? 4 : 1;
  const bool requant = p.stage == Stage::requantize;
  const int64_t row_blocks = (p.rows + kBlock - 1) / kBlock, pairs = (P + 1) / 2;
  // A once, as the tiles read it (flipped to uint8, zero past K): per 16
  // rows, 1 KiB per 64 k; with each row's term for a B offset. Its size is
  // A's (rounded up to the tiles): no more than the input it copies.
  const int64_t tile_bytes = chunks * 1024;
  LineVector<uint8_t> a(static_cast<size_t>(row_blocks * 2 * tile_bytes), 0);
  std::vector<int32_t> row_terms(static_cast<size_t>(row_blocks * kBlock), 0);
  const uint8_t flip = p.a_signed ? 0x80 : 0;
  parallel_for(p.rows, std::max<int64_t>(64, (int64_t{1} << 18) / K), [&](int64_t r0, int64_t r1) {  // small A: inline
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t sum = pack_row(p.row(r), a.data() + r / 16 * tile_bytes + r % 16 * 64, K, flip);
      if (!p.b_offset) continue;
      // b_offset * sum_k (a - za), in wrapping int32 (the sums fit)
      row_terms[static_cast<size_t>(r)] =
          static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(p.b_offset * (sum - K * c.za))));
    }
  });
  // Work items: up to kSpan row blocks by a group of column pairs; in an
  // item, a pair's panels are read from L1 or L2 by the item's row blocks
  // in turn. Threads split the rows first (each packs and reads its own A,
  // B is shared read-only), then the columns while there are too few.
  constexpr int64_t kSpan = 4;
  const int64_t want = 4 * thread_count();
  const int64_t span = std::clamp<int64_t>(row_blocks / want, 1, kSpan);
  const int64_t spans = (row_blocks + span - 1) / span;
  const int64_t groups = std::clamp<int64_t>((want + spans - 1) / spans, 1, pairs);
  const int64_t per_group = (pairs + groups - 1) / groups;
  // Two million multiply-adds a chunk at least: a smaller product is done
  // sooner by one thread than by two meeting twice.
  const int64_t item_macs = span * kBlock * per_group * 32 * K;
  parallel_for(spans * groups, ((int64_t{1} << 21) + item_macs - 1) / item_macs, [&](int64_t i0, int64_t i1) {
    alignas(64) int32_t s[kSpan][kBlock * kBlock];
    load_config();
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t rb0 = item % spans * span, rb1 = std::min(row_blocks, rb0 + span);
      const int64_t pair0 = item / spans * per_group, pair1 = std::min(pairs, pair0 + per_group);
      for (int64_t pair = pair0; pair < pair1; ++pair) {
        const int64_t n0 = pair * 32, cols = std::min<int64_t>(32, N - n0);
        const int8_t* b0 = b.panels.data() + (n0 / 16) * b.K4 * 64;
        for (int64_t rb = rb0; rb < rb1; ++rb) {
          const uint8_t* a0 = a.data() + rb * 2 * tile_bytes;
          block_for(std::min(kBlock, p.rows - rb * kBlock), cols)(a0, a0 + tile_bytes, b0, b0 + b.K4 * 64, chunks,
                                                                  s[rb - rb0]);
        }
        const Tile t = tile_at(p, c, n0);
        for (int64_t rb = rb0; rb < rb1; ++rb) {
          const int64_t r0 = rb * kBlock, R = std::min(kBlock, p.rows - r0);
          const int32_t* terms = p.b_offset ? row_terms.data() + r0 : nullptr;
          std::byte* y = p.y + (r0 * N + n0) * esize;
          int32_t* sums = s[rb - rb0];
          if (p.type == Product::Type::s32) {
            finish<StoreSums, int32_t>(t, sums, terms, R, cols, reinterpret_cast<int32_t*>(y), N);
          } else if (!c.bounded) {  // the sums, then the reference's requantization of each
            finish<StoreSums, int32_t>(t, sums, terms, R, cols, sums, kBlock);  // completed in place
            requantize_channels_last(sums, kBlock, R, cols, p.bias ? p.bias + n0 : nullptr, c.mult.data() + n0,
                                     p.zero_point, p.type == Product::Type::u8, y, N);
          } else if (p.type == Product::Type::f32) {
            finish<ScaleFloat, float>(t, sums, terms, R, cols, reinterpret_cast<float*>(y), N);
          } else if (p.type == Product::Type::u8) {
            auto* out = reinterpret_cast<uint8_t*>(y);
            if (requant && c.in_float) finish<RequantizeFloat, uint8_t>(t, sums, terms, R, cols, out, N);
            else if (requant) finish<Requantize, uint8_t>(t, sums, terms, R, cols, out, N);
            else finish<ScaleFloat, uint8_t>(t, sums, terms, R, cols, out, N);
          } else {
            auto* out = reinterpret_cast<int8_t*>(y);
            if (requant && c.in_float) finish<RequantizeFloat, int8_t>(t, sums, terms, R, cols, out, N);
            else if (requant) finish<Requantize, int8_t>(t, sums, terms, R, cols, out, N);
            else finish<ScaleFloat, int8_t>(t, sums, terms, R, cols, out, N);
          }
        }
      }
    }
    release_tiles();
  });
  return true;
}

}  // namespace onnxscope::cpu::vnni
