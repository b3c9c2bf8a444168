// onnxscope.cpu::NchwcConv (contract in cpu/nchwc.h) for dense 3x3
// convolutions of stride 1 (ResNet's, DenseNet's, VGG's and U-Net's 3x3
// layers) on the 8-channel blocked layout, float32, on CPUs with AVX2 and
// FMA but no AVX-512, by Winograd's F(2x2, 3x3) (Lavin and Gray, 2015).
//
// On the AMD EPYC (Zen 3) oneDNN's direct AVX2 convolution ran ResNet's
// 3x3 layers at ~80% of the FMA peak and onnxruntime's at ~93%: no direct
// kernel can gain much there. F(2x2, 3x3) computes each 2x2 block of
// outputs from a 4x4 block of inputs with 16 multiplies a channel pair, not
// 36: per tile, V = B' d B (adds), then for each of the 16 positions a
// product over the channels M[pos] = V[pos] U[pos] (U = G g G', the weights,
// transformed once per node), then Y = A' M A (adds). The products are one
// GEMM per position, 6 tiles by 16 output channels a register tile, as the
// AVX2 float product's (math/float_gemm_avx2.cpp). Tiles go in chunks whose
// V and M (16 positions x (C + K) floats a tile) stay near 1 MiB; the
// chunks share out to the threads, or, where there are too few (a 7x7
// plane), each stage of one chunk does.
//
// Arithmetic: B and A hold 0 and +-1 only, G 0, 1/2 and 1 (the weights'
// transform is done in double and rounded once), so every output is the
// convolution's sum up to a few roundings more than a direct sum; its order
// is fixed by the problem, not by the thread count. An infinity in a tile's
// input would meet its own negation in the transforms (inf - inf: NaN where
// the convolution gives +-inf), so a tile whose V holds an infinity is
// computed directly from X and W instead. NaN goes through both alike (each
// output reads only the inputs under its window).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/nn/fused_activation_avx2.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kBlock = 8;    // channels a block (AVX2's nChw8c)
constexpr int64_t kPos = 16;     // a tile's 4x4 transformed positions
constexpr int64_t kNR = 16;      // output channels a panel of U
constexpr int64_t kMR = 6;       // tiles a register tile
constexpr int64_t kKC = 256;     // input channels a block of the products
// Fewer channels than this go to oneDNN: the products' depth (C) and width
// (K) too small to pay for the transforms.
constexpr int64_t kMinChannels = 16;

std::atomic<bool> g_on_avx512{false};  // force_winograd_conv_on_avx512

bool avx2_only() {
  const bool avx2 = cpu_has_avx2_fma();
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  return avx2 && (!avx512 || g_on_avx512.load(std::memory_order_relaxed));
}

struct Problem {
  int64_t N = 0, C = 0, CB = 0, Cp = 0;  // Cp: C padded to whole blocks
  int64_t K = 0, KB = 0, KP = 0, Kp = 0;  // output blocks, panels of 16, K padded to panels
  int64_t H = 0, W = 0, OH = 0, OW = 0, pt = 0, pl = 0;
  int64_t TH = 0, TW = 0, T = 0;  // tiles down, across, in all
  bool bias = false, sum = false;
  FusedActivation act;
};

bool float_tensor(const Value* v) { return v && v->is_tensor() && v->tensor().dtype() == DataType::Float; }

bool problem(const KernelContext& ctx, Problem& p) {
  if (!avx2_only() || ctx.input_count() < 2 || ctx.input_count() > 4) return false;
  if (ctx.attr_int("group", 1) != 1 || ctx.attr_int("block", 0) != kBlock || ctx.attr_int("plain_input", 0) != 0)
    return false;
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(1);
  if (!float_tensor(xv) || !float_tensor(wv)) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  if (x.rank() != 5 || x.shape()[4] != kBlock || w.rank() != 4 || w.shape()[2] != 3 || w.shape()[3] != 3) return false;
  p.K = w.shape()[0];
  p.C = w.shape()[1];
  if (p.C < kMinChannels || p.K < kMinChannels || !blocks_hold(p.C, x.shape()[1], kBlock)) return false;
  p.N = x.shape()[0];
  p.CB = x.shape()[1];
  p.H = x.shape()[2];
  p.W = x.shape()[3];
  if (p.N < 1 || p.H < 1 || p.W < 1) return false;
  const std::optional<ref::nn::Window> window = conv_window_2d(ctx, p.H, p.W, {3, 3});
  if (!window) return false;
  const ref::nn::Window& win = *window;
  for (size_t d = 0; d < 2; ++d)
    if (win.strides[d] != 1 || win.dilations[d] != 1 || win.pad_begin[d] < 0 || win.pad_begin[d] > 2 ||
        win.pad_end[d] < 0 || win.pad_end[d] > 2 || win.out[d] < 4)
      return false;  // (under 4 rows or columns out, most of a tile's work is discarded: oneDNN crops taps there)
  p.OH = win.out[0];
  p.OW = win.out[1];
  p.pt = win.pad_begin[0];
  p.pl = win.pad_begin[1];
  p.Cp = p.CB * kBlock;
  p.KB = (p.K + kBlock - 1) / kBlock;
  p.KP = (p.K + kNR - 1) / kNR;
  p.Kp = p.KP * kNR;
  // U: 16/9 of the weights and padding; none past what a tensor may take.
  if (static_cast<uint64_t>(kPos * p.Cp * p.Kp) > ctx.max_tensor_bytes() / sizeof(float)) return false;
  p.TH = (p.OH + 1) / 2;
  p.TW = (p.OW + 1) / 2;
  p.T = p.N * p.TH * p.TW;
  return nchwc_conv_extras(ctx, p.K, {p.N, p.KB, p.OH, p.OW, kBlock}, p.bias, p.sum) && fused_activation_of(ctx, p.act);
}

bool accepts(const KernelContext& ctx) {
  Problem p;
  return problem(ctx, p);
}

// --- the weights: U = G g G' ------------------------------------------------

// G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] on three values.
inline void g_of(const double in[3], double out[4]) {
  out[0] = in[0];
  out[1] = (in[0] + in[1] + in[2]) * 0.5;
  out[2] = (in[0] - in[1] + in[2]) * 0.5;
  out[3] = in[2];
}

// U[pos][k][c] in panels of 16 output channels, [pos][K/16][Cp][16] (zero
// past K and past C), as the products read B.
void transform_weights(const Problem& p, const float* w, float* u) {
  parallel_for(p.K, 1, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k)
      for (int64_t c = 0; c < p.C; ++c) {
        const float* g = w + (k * p.C + c) * 9;
        double t[4][3], col[3], out[4];
        for (int j = 0; j < 3; ++j) {
          for (int i = 0; i < 3; ++i) col[i] = g[i * 3 + j];
          g_of(col, out);
          for (int i = 0; i < 4; ++i) t[i][j] = out[i];
        }
        for (int i = 0; i < 4; ++i) {
          g_of(t[i], out);
          for (int j = 0; j < 4; ++j)
            u[(((i * 4 + j) * p.KP + k / kNR) * p.Cp + c) * kNR + k % kNR] = static_cast<float>(out[j]);
        }
      }
  });
}

struct Packed {
  const Buffer* of = nullptr;  // the weights' storage it was made from
  Shape w;
  std::vector<float> u;
};

const float* transformed_weights(const KernelContext& ctx, const Problem& p, std::vector<float>& local) {
  const Tensor& w = ctx.input(1);
  const size_t n = static_cast<size_t>(kPos * p.KP * p.Cp * kNR);
  Packed* kept = ctx.input_is_initializer(1) ? onednn::node_state<Packed>(ctx) : nullptr;
  if (!kept) {
    local.assign(n, 0.0f);
    transform_weights(p, w.data<float>(), local.data());
    return local.data();
  }
  if (kept->of != w.buffer().get() || kept->w != w.shape() || kept->u.size() != n) {
    kept->u.assign(n, 0.0f);
    transform_weights(p, w.data<float>(), kept->u.data());
    kept->of = w.buffer().get();
    kept->w = w.shape();
  }
  return kept->u.data();
}

// --- one chunk of tiles: V, the products, Y ----------------------------------

// A position's rows of V or M this many floats apart: tb rows and 32 floats
// more, so that the 16 positions of one tile (read or written together) do
// not lie a power of two apart (tb * Cp is often 32 KiB: all 16 in one set
// of an 8-way L1).
inline int64_t pos_stride(int64_t tb, int64_t width) { return tb * width + 32; }

// A chunk's scratch: V [16][tb][Cp], M [16][tb][Kp] (positions pos_stride
// apart), and which tiles' V holds an infinity.
struct Scratch {
  std::vector<float> v, m;
  std::vector<uint8_t> inf;
  void fit(const Problem& p, int64_t tb) {
    v.resize(static_cast<size_t>(kPos * pos_stride(tb, p.Cp)));
    m.resize(static_cast<size_t>(kPos * pos_stride(tb, p.Kp)));
    inf.resize(static_cast<size_t>(tb));
  }
};

// Where a chunk's data lie and which tiles it holds.
struct Chunk {
  const Problem* p;
  int64_t t0 = 0, rows = 0;  // first tile, tiles in it
  int64_t vs = 0, ms = 0;    // pos_stride of V and of M
  float* v;
  float* m;
  uint8_t* inf;
};

struct TileAt {
  int64_t n, oh, ow;  // image and top-left output
};

inline TileAt tile_at(const Problem& p, int64_t t) {
  const int64_t tx = t % p.TW, rest = t / p.TW;
  return {rest / p.TH, rest % p.TH * 2, tx * 2};
}

// B' d B on 4x4 vectors: rows then columns, each [d0 - d2, d1 + d2, d2 - d1, d1 - d3].
__attribute__((target("avx2,fma"), always_inline)) inline void bt_d_b(__m256 d[4][4]) {
  for (int j = 0; j < 4; ++j) {
    const __m256 a = d[0][j], b = d[1][j], c = d[2][j], e = d[3][j];
    d[0][j] = _mm256_sub_ps(a, c);
    d[1][j] = _mm256_add_ps(b, c);
    d[2][j] = _mm256_sub_ps(c, b);
    d[3][j] = _mm256_sub_ps(b, e);
  }
  for (int i = 0; i < 4; ++i) {
    const __m256 a = d[i][0], b = d[i][1], c = d[i][2], e = d[i][3];
    d[i][0] = _mm256_sub_ps(a, c);
    d[i][1] = _mm256_add_ps(b, c);
    d[i][2] = _mm256_sub_ps(c, b);
    d[i][3] = _mm256_sub_ps(b, e);
  }
}

// V of the chunk's rows [r0, r1), every channel block.
__attribute__((target("avx2,fma"))) void input_rows(const Chunk& ch, const float* x, int64_t r0, int64_t r1) {
  const Problem& p = *ch.p;
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m256 inf = _mm256_set1_ps(__builtin_inff());
  for (int64_t r = r0; r < r1; ++r) {
    const TileAt at = tile_at(p, ch.t0 + r);
    const int64_t ih0 = at.oh - p.pt, iw0 = at.ow - p.pl;
    const bool inside = ih0 >= 0 && ih0 + 4 <= p.H && iw0 >= 0 && iw0 + 4 <= p.W;
    __m256 seen = _mm256_setzero_ps();
    for (int64_t cb = 0; cb < p.CB; ++cb) {
      const float* plane = x + (at.n * p.CB + cb) * p.H * p.W * kBlock;
      __m256 d[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int64_t ih = ih0 + i, iw = iw0 + j;
          d[i][j] = inside || (ih >= 0 && ih < p.H && iw >= 0 && iw < p.W) ? _mm256_loadu_ps(plane + (ih * p.W + iw) * kBlock)
                                                                            : _mm256_setzero_ps();
        }
      bt_d_b(d);
      float* out = ch.v + r * p.Cp + cb * kBlock;
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          _mm256_storeu_ps(out + (i * 4 + j) * ch.vs, d[i][j]);
          seen = _mm256_or_ps(seen, _mm256_cmp_ps(_mm256_and_ps(d[i][j], abs_mask), inf, _CMP_EQ_OQ));
        }
    }
    ch.inf[r] = _mm256_movemask_ps(seen) != 0;
  }
}

// c[R rows][16] (=, or += unless `first`) a[R rows][kc] b[kc][16]; rows lda and ldc apart.
template <int R>
__attribute__((target("avx2,fma"))) void product_tile(const float* a, int64_t lda, const float* b, int64_t kc, float* c,
                                                      int64_t ldc, bool first) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    acc[r][0] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc);
    acc[r][1] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8);
  }
  for (int64_t t = 0; t < kc; ++t) {
    const __m256 b0 = _mm256_loadu_ps(b + t * kNR), b1 = _mm256_loadu_ps(b + t * kNR + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 s = _mm256_broadcast_ss(a + r * lda + t);
      acc[r][0] = _mm256_fmadd_ps(s, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(s, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(c + r * ldc, acc[r][0]);
    _mm256_storeu_ps(c + r * ldc + 8, acc[r][1]);
  }
}

using ProductTile = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, bool);

constexpr ProductTile kTiles[kMR + 1] = {nullptr,          product_tile<1>, product_tile<2>, product_tile<3>,
                                         product_tile<4>, product_tile<5>, product_tile<6>};

// M[pos][rows][panel] = V[pos][rows][:] U[pos][:][panel] for items [i0, i1)
// of (pos, panel).
void product_items(const Chunk& ch, const float* u, int64_t i0, int64_t i1) {
  const Problem& p = *ch.p;
  for (int64_t item = i0; item < i1; ++item) {
    const int64_t pos = item / p.KP, panel = item % p.KP;
    const float* a = ch.v + pos * ch.vs;
    const float* b = u + (pos * p.KP + panel) * p.Cp * kNR;
    float* c = ch.m + pos * ch.ms + panel * kNR;
    for (int64_t k0 = 0; k0 < p.Cp; k0 += kKC) {
      const int64_t kc = std::min(kKC, p.Cp - k0);
      for (int64_t r = 0; r < ch.rows; r += kMR) {
        const int64_t n = std::min(kMR, ch.rows - r);
        kTiles[n](a + r * p.Cp + k0, p.Cp, b + k0 * kNR, kc, c + r * p.Kp, p.Kp, k0 == 0);
      }
    }
  }
}

// What the output stage adds and where it writes.
struct Outputs {
  const float* bias;  // Kp values, zero past K
  const float* r;     // the residual, or nullptr
  float* y;
  const float* w;     // the plain weights, for tiles computed directly
  const float* x;
};

// One output vector of 8 channels at (n, kb, oh, ow): bias in, residual,
// activation, padding channels zeroed.
__attribute__((target("avx2,fma"), always_inline)) inline void store_output(const Problem& p, const Outputs& o, __m256 v,
                                                                             int64_t n, int64_t kb, int64_t oh, int64_t ow,
                                                                             __m256 real) {
  const int64_t at = (((n * p.KB + kb) * p.OH + oh) * p.OW + ow) * kBlock;
  v = _mm256_add_ps(v, _mm256_loadu_ps(o.bias + kb * kBlock));
  if (o.r) v = _mm256_add_ps(v, _mm256_loadu_ps(o.r + at));
  _mm256_storeu_ps(o.y + at, _mm256_and_ps(activate_avx2(p.act, v), real));
}

// A tile's outputs straight from X and W (a tile whose V held an infinity).
__attribute__((target("avx2,fma"))) void direct_tile(const Problem& p, const Outputs& o, const TileAt& at, int64_t kb,
                                                     __m256 real) {
  const int64_t k0 = kb * kBlock, kn = std::min(kBlock, p.K - k0);
  for (int64_t dy = 0; dy < 2 && at.oh + dy < p.OH; ++dy)
    for (int64_t dx = 0; dx < 2 && at.ow + dx < p.OW; ++dx) {
      alignas(32) float acc[kBlock] = {};
      for (int64_t c = 0; c < p.C; ++c) {
        const float* plane = o.x + (at.n * p.CB + c / kBlock) * p.H * p.W * kBlock + c % kBlock;
        for (int64_t ky = 0; ky < 3; ++ky) {
          const int64_t ih = at.oh + dy - p.pt + ky;
          if (ih < 0 || ih >= p.H) continue;
          for (int64_t kx = 0; kx < 3; ++kx) {
            const int64_t iw = at.ow + dx - p.pl + kx;
            if (iw < 0 || iw >= p.W) continue;
            const float xv = plane[(ih * p.W + iw) * kBlock];
            for (int64_t l = 0; l < kn; ++l) acc[l] += xv * o.w[((k0 + l) * p.C + c) * 9 + ky * 3 + kx];
          }
        }
      }
      store_output(p, o, _mm256_load_ps(acc), at.n, kb, at.oh + dy, at.ow + dx, real);
    }
}

// Y = A' M A of the chunk's rows [r0, r1), every output block: per column,
// [m0 + m1 + m2, m1 - m2 - m3], then the same along the rows.
__attribute__((target("avx2,fma"))) void output_rows(const Chunk& ch, const Outputs& o, int64_t r0, int64_t r1) {
  const Problem& p = *ch.p;
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t r = r0; r < r1; ++r) {
    const TileAt at = tile_at(p, ch.t0 + r);
    const bool two_down = at.oh + 1 < p.OH, two_across = at.ow + 1 < p.OW;
    for (int64_t kb = 0; kb < p.KB; ++kb) {
      const int64_t kn = std::min(kBlock, p.K - kb * kBlock);
      const __m256 real = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(kn)), lanes));
      if (ch.inf[r]) {
        direct_tile(p, o, at, kb, real);
        continue;
      }
      const float* m = ch.m + r * p.Kp + kb * kBlock;
      __m256 s[2][4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const int64_t step = ch.ms;
        const __m256 a = _mm256_loadu_ps(m + j * step), b = _mm256_loadu_ps(m + (4 + j) * step),
                     c = _mm256_loadu_ps(m + (8 + j) * step), d = _mm256_loadu_ps(m + (12 + j) * step);
        s[0][j] = _mm256_add_ps(_mm256_add_ps(a, b), c);
        s[1][j] = _mm256_sub_ps(_mm256_sub_ps(b, c), d);
      }
      for (int i = 0; i < 2; ++i) {
        if (i == 1 && !two_down) break;
        store_output(p, o, _mm256_add_ps(_mm256_add_ps(s[i][0], s[i][1]), s[i][2]), at.n, kb, at.oh + i, at.ow, real);
        if (two_across)
          store_output(p, o, _mm256_sub_ps(_mm256_sub_ps(s[i][1], s[i][2]), s[i][3]), at.n, kb, at.oh + i, at.ow + 1, real);
      }
    }
  }
}

void Run(KernelContext& ctx) {
  Problem p;
  if (!problem(ctx, p)) ctx.fail("problem not supported by the Winograd 3x3 convolution");
  std::vector<float> local;
  const float* u = transformed_weights(ctx, p, local);
  std::vector<float> bias(static_cast<size_t>(p.Kp), 0.0f);
  if (p.bias) std::copy_n(ctx.input(2).data<float>(), p.K, bias.begin());
  const Shape yb{p.N, p.KB, p.OH, p.OW, kBlock};
  Outputs o;
  o.y = nchwc_conv_output(ctx, yb, p.sum, o.r).mutable_data<float>();
  o.bias = bias.data();
  o.x = ctx.input(0).data<float>();
  o.w = ctx.input(1).data<float>();
  // Tiles a chunk: V and M near 1 MiB (2^18 floats), but 64 or more (each
  // chunk streams all of U: 16 MiB for 512 channels in and out), in whole
  // register tiles; as many chunks as a multiple of the threads.
  const int threads = thread_count();
  const int64_t per_tile = kPos * (p.Cp + p.Kp);
  int64_t tb = std::min(p.T, std::max<int64_t>(64, (int64_t{1} << 18) / per_tile));
  int64_t chunks = (p.T + tb - 1) / tb;
  if (chunks > 1) {
    chunks = (chunks + threads - 1) / threads * threads;
    tb = (p.T + chunks - 1) / chunks;
    tb = std::min(p.T, (tb + kMR - 1) / kMR * kMR);
    chunks = (p.T + tb - 1) / tb;
  }
  auto chunk_at = [&](Scratch& s, int64_t i) {
    const int64_t t0 = i * tb;
    return Chunk{&p, t0, std::min(tb, p.T - t0), pos_stride(tb, p.Cp), pos_stride(tb, p.Kp), s.v.data(), s.m.data(),
                 s.inf.data()};
  };
  if (threads == 1 || chunks >= 2 * threads) {
    // Whole chunks to each thread, each in its own scratch.
    parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
      thread_local Scratch s;
      s.fit(p, tb);
      for (int64_t i = c0; i < c1; ++i) {
        const Chunk ch = chunk_at(s, i);
        input_rows(ch, o.x, 0, ch.rows);
        product_items(ch, u, 0, kPos * p.KP);
        output_rows(ch, o, 0, ch.rows);
      }
    });
    return;
  }
  // Few chunks: the threads share each stage of each chunk.
  thread_local Scratch s;  // (the calling thread's; all read and write it)
  s.fit(p, tb);
  for (int64_t i = 0; i < chunks; ++i) {
    const Chunk ch = chunk_at(s, i);
    parallel_for(ch.rows, 1, [&](int64_t r0, int64_t r1) { input_rows(ch, o.x, r0, r1); });
    parallel_for(kPos * p.KP, 1, [&](int64_t i0, int64_t i1) { product_items(ch, u, i0, i1); });
    parallel_for(ch.rows, 1, [&](int64_t r0, int64_t r1) { output_rows(ch, o, r0, r1); });
  }
}

}  // namespace

void force_winograd_conv_on_avx512(bool on) { g_on_avx512 = on; }

void register_winograd_conv_nchwc_kernels(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcConv, 1, INT_MAX, "cpu-winograd", Run, accepts});
}

}  // namespace onnxscope::cpu
