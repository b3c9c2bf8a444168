// 1-D Conv and FusedConv, group 1, float32. With X zero-padded into rows of
// Wp = W + pads, output column t reads column t*s + j*d of the padded rows
// for tap j. On AVX-512, register tiles of Y (4 rows by 96 columns) sum every
// (c, j) in place (run_avx512): one pass over Y, near the FMA peak, the fused
// activation applied in registers as a tile is stored. At unit stride a tile
// inside X reads X where it lies and only the tiles at its ends read padded
// strips. At stride s the padded rows are split into s phases (phase r holds
// columns r, r + s, ...), so tap j reads phase (j*d) mod s from column
// t + (j*d) div s: contiguous again.
// Elsewhere (no AVX-512: unit stride, no activation) tap j's share of Y
// [M, OW] is W_j [M, C] times the C x OW window of the padded X starting at
// column j*d (a strided view: no im2col copy), accumulated by oneDNN's
// sgemm, one call per tap.
// oneDNN's own 1-D convolution pays two layout reorders around its kernel
// (0.76x onnxruntime at [1,64,1000] k3; wav2vec2's first layer, 1 channel in
// and 512 out at stride 5, 0.22x): this kernel takes every unit-stride one,
// and strided ones whose sums are short (C*K at most kShortSum), where the
// reorders cost more than oneDNN's faster product saves.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in masked stores.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/nn/fused_activation_avx512.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

struct Conv1d {
  int64_t N = 0, C = 0, W = 0, M = 0, K = 0, stride = 1, dil = 1, pl = 0, pr = 0, OW = 0;
  bool bias = false;
  FusedActivation act;
};

const bool kAvx512 = ONNXSCOPE_CPU_AVX512("avx512f");
constexpr int64_t kShortSum = 64;  // C*K of the strided convolutions taken (see above)
constexpr int64_t kTileSlack = 16 * 6;  // floats past each padded (phase) row a tile may read

bool conv1d_of(const KernelContext& ctx, Conv1d& p, bool fused) {
  if (!float_conv_inputs(ctx)) return false;
  if (fused && (!kAvx512 || !fused_activation_of(ctx, p.act))) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const Tensor& w = ctx.input_value(1)->tensor();
  if (x.rank() != 3 || w.rank() != 3 || x.element_count() == 0 || w.element_count() == 0) return false;
  if (ctx.attr_int("group", 1) != 1 || w.shape()[1] != x.shape()[1]) return false;
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != std::vector<int64_t>{w.shape()[2]}) return false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (b->tensor().rank() != 1 || b->tensor().shape()[0] != w.shape()[0]) return false;
    p.bias = true;
  }
  ref::nn::Window win;
  try {
    win = ref::nn::resolve_window(ctx, {x.shape()[2]}, {w.shape()[2]}, false);
  } catch (const std::exception&) {
    return false;  // the reference names what is wrong
  }
  // A window inside X and its padding (a mutated dilation of 2^40 is the
  // reference's); a stride only on AVX-512, over a short sum.
  if ((w.shape()[2] - 1) * win.dilations[0] + 1 > x.shape()[2] + win.pad_begin[0] + win.pad_end[0]) return false;
  if (win.strides[0] != 1 && (!kAvx512 || win.strides[0] < 1 || x.shape()[1] * w.shape()[2] > kShortSum)) return false;
  p.stride = win.strides[0];
  p.N = x.shape()[0];
  p.C = x.shape()[1];
  p.W = x.shape()[2];
  p.M = w.shape()[0];
  p.K = w.shape()[2];
  p.dil = win.dilations[0];
  p.pl = win.pad_begin[0];
  p.pr = win.pad_end[0];
  p.OW = win.out[0];
  // The padded copy of X (s phases of C rows, each a share of the padded
  // width plus a tile's slack) is this kernel's own allocation: a mutated pad
  // or stride of 2^40 must not make it; the reference names the problem.
  const double width = static_cast<double>(p.W) + static_cast<double>(p.pl) + static_cast<double>(p.pr);
  const double padded = static_cast<double>(p.C) * (width + static_cast<double>(p.stride) * (kTileSlack + 1)) * sizeof(float);
  return padded <= static_cast<double>(ctx.max_tensor_bytes());
}

template <bool Fused>
bool accepts(const KernelContext& ctx) {
  Conv1d p;
  return conv1d_of(ctx, p, Fused);
}

// --- AVX-512: the product computed in place ---------------------------------------
// Y[m, t] = act(b[m] + sum over c, then j, of W[m, c, j] * Xp[c, t*s + j*dil]),
// with Xp X zero-padded (and with a tail of zeros a tile may read past), held
// as s phases of C rows each: tap j of channel c reads phase row
// ((j*dil) mod s, c) from column t + (j*dil) div s, at xp + c*Wph + tap[j].
// A tile is R rows of Y by V vectors of 16 columns, its sums in registers for every
// (c, j): V loads of Xp and R broadcasts of W per R*V fused multiply-adds,
// with no column matrix and no pass over Y per tap (the three sgemm calls
// wrote Y three times).

template <int R, int V>
__attribute__((target("avx512f"))) void conv1d_tile(const Conv1d& p, const float* xt, int64_t rs, const int64_t* tap,
                                                    const float* w, const float* bias, int64_t m0, int64_t t0, int64_t cols,
                                                    float* y) {
  __m512 acc[R * V];
#pragma GCC unroll 24
  for (int i = 0; i < R * V; ++i) acc[i] = _mm512_set1_ps(bias ? bias[m0 + i / V] : 0.0f);
  const int64_t CK = p.C * p.K;
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t j = 0; j < p.K; ++j) {
      const float* src = xt + c * rs + tap[j];
      const float* wr = w + m0 * CK + c * p.K + j;
#pragma GCC unroll 6
      for (int v = 0; v < V; ++v) {
        const __m512 xv = _mm512_loadu_ps(src + 16 * v);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) acc[r * V + v] = _mm512_fmadd_ps(_mm512_set1_ps(wr[r * CK]), xv, acc[r * V + v]);
      }
    }
  const int64_t tail = cols - 16 * (V - 1);
  const auto last = static_cast<__mmask16>(tail >= 16 ? 0xffffu : (1u << tail) - 1u);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float* dst = y + (m0 + r) * p.OW + t0;
#pragma GCC unroll 6
    for (int v = 0; v + 1 < V; ++v) _mm512_storeu_ps(dst + 16 * v, activate(p.act, acc[r * V + v]));
    _mm512_mask_storeu_ps(dst + 16 * (V - 1), last, activate(p.act, acc[r * V + V - 1]));
  }
}

template <int R>
__attribute__((target("avx512f"))) void conv1d_tile_v(int64_t vectors, const Conv1d& p, const float* xt, int64_t rs,
                                                      const int64_t* tap, const float* w, const float* bias, int64_t m0,
                                                      int64_t t0, int64_t cols, float* y) {
  switch (vectors) {
    case 1: return conv1d_tile<R, 1>(p, xt, rs, tap, w, bias, m0, t0, cols, y);
    case 2: return conv1d_tile<R, 2>(p, xt, rs, tap, w, bias, m0, t0, cols, y);
    case 3: return conv1d_tile<R, 3>(p, xt, rs, tap, w, bias, m0, t0, cols, y);
    case 4: return conv1d_tile<R, 4>(p, xt, rs, tap, w, bias, m0, t0, cols, y);
    case 5: return conv1d_tile<R, 5>(p, xt, rs, tap, w, bias, m0, t0, cols, y);
    default: return conv1d_tile<R, 6>(p, xt, rs, tap, w, bias, m0, t0, cols, y);
  }
}

// One tile of R rows (1 to 4) from its first padded column xt, rows rs apart.
__attribute__((target("avx512f"))) void conv1d_tile_rv(int64_t rows, int64_t vectors, const Conv1d& p, const float* xt,
                                                       int64_t rs, const int64_t* tap, const float* w, const float* bias,
                                                       int64_t m0, int64_t t0, int64_t cols, float* y) {
  switch (rows) {
    case 1: return conv1d_tile_v<1>(vectors, p, xt, rs, tap, w, bias, m0, t0, cols, y);
    case 2: return conv1d_tile_v<2>(vectors, p, xt, rs, tap, w, bias, m0, t0, cols, y);
    case 3: return conv1d_tile_v<3>(vectors, p, xt, rs, tap, w, bias, m0, t0, cols, y);
    default: return conv1d_tile_v<4>(vectors, p, xt, rs, tap, w, bias, m0, t0, cols, y);
  }
}

constexpr int64_t kRows = 4, kCols = 96;  // 4 x 6 accumulators of 16

// Unit stride: a tile whose columns (16 per vector, all taps) lie inside X
// reads X in place; one that reaches into the padding (the first and the last,
// at most a few) reads a strip of C padded rows its thread builds. The padded
// copy of all of X this replaced (and the thread hand-off after it) were a
// fifth of [1,64,1000] k3's time.
void run_unit_stride(const Conv1d& p, const float* x, const float* w, const float* bias, float* y) {
  std::vector<int64_t> tap(static_cast<size_t>(p.K));
  for (int64_t j = 0; j < p.K; ++j) tap[static_cast<size_t>(j)] = j * p.dil;
  const int64_t reach = (p.K - 1) * p.dil;  // columns past a vector's 16 that its taps read
  const int64_t row_tiles = (p.M + kRows - 1) / kRows, col_tiles = (p.OW + kCols - 1) / kCols;
  for (int64_t n = 0; n < p.N; ++n) {
    const float* xn = x + n * p.C * p.W;
    float* yn = y + n * p.M * p.OW;
    parallel_for(row_tiles * col_tiles, 1, [&](int64_t i0, int64_t i1) {
      thread_local std::vector<float> strip;
      int64_t strip_t0 = -1;  // the column tile the strip holds
      for (int64_t i = i0; i < i1; ++i) {
        // Row tiles inner: one column tile's window of X (C x ~100 floats,
        // 25 KB at C = 64) stays in L1 for all of Y's rows.
        const int64_t m0 = (i % row_tiles) * kRows, t0 = (i / row_tiles) * kCols;
        const int64_t rows = std::min(kRows, p.M - m0), cols = std::min(kCols, p.OW - t0);
        const int64_t vectors = (cols + 15) / 16, span = 16 * vectors + reach;  // padded columns read
        const float* xt;
        int64_t rs;
        if (t0 >= p.pl && t0 - p.pl + span <= p.W) {
          xt = xn + (t0 - p.pl);
          rs = p.W;
        } else {
          if (strip_t0 != t0) {
            strip.resize(static_cast<size_t>(p.C * span));
            for (int64_t c = 0; c < p.C; ++c)
              for (int64_t u = 0; u < span; ++u) {
                const int64_t at = t0 + u - p.pl;
                strip[static_cast<size_t>(c * span + u)] = at >= 0 && at < p.W ? xn[c * p.W + at] : 0.0f;
              }
            strip_t0 = t0;
          }
          xt = strip.data();
          rs = span;
        }
        conv1d_tile_rv(rows, vectors, p, xt, rs, tap.data(), w, bias, m0, t0, cols, yn);
      }
    });
  }
}

void run_avx512(const Conv1d& p, const float* x, const float* w, const float* bias, float* y) {
  if (p.stride == 1) return run_unit_stride(p, x, w, bias, y);
  const int64_t s = p.stride, padded = p.W + p.pl + p.pr;
  const int64_t Wph = (padded + s - 1) / s + kTileSlack;  // a phase row
  std::vector<int64_t> tap(static_cast<size_t>(p.K));
  for (int64_t j = 0; j < p.K; ++j) tap[static_cast<size_t>(j)] = (j * p.dil) % s * p.C * Wph + (j * p.dil) / s;
  // Xp is kept from run to run on the calling thread (up to 16 MB): a fresh
  // 256 KB block per run went back to the system at each free with the
  // output's, and came back as a hundred page faults a run.
  thread_local std::vector<float> kept;
  std::vector<float> local;
  const auto need = static_cast<size_t>(s * p.C * Wph);
  std::vector<float>& xp = need * sizeof(float) <= (size_t{16} << 20) ? kept : local;
  if (xp.size() < need) xp.resize(need);
  const int64_t row_tiles = (p.M + kRows - 1) / kRows, col_tiles = (p.OW + kCols - 1) / kCols;
  for (int64_t n = 0; n < p.N; ++n) {
    const float* xn = x + n * p.C * p.W;
    parallel_for(p.C, std::max<int64_t>(1, 16384 / (s * Wph)), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const float* src = xn + c * p.W;
        for (int64_t r = 0; r < s; ++r) {  // phase r: padded columns r, r + s, ...
          float* row = xp.data() + (r * p.C + c) * Wph;
          for (int64_t u = 0; u < Wph; ++u) {
            const int64_t at = u * s + r - p.pl;
            row[u] = at >= 0 && at < p.W ? src[at] : 0.0f;
          }
        }
      }
    });
    float* yn = y + n * p.M * p.OW;
    parallel_for(row_tiles * col_tiles, 1, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t m0 = (i % row_tiles) * kRows, t0 = (i / row_tiles) * kCols;
        const int64_t rows = std::min(kRows, p.M - m0), cols = std::min(kCols, p.OW - t0);
        conv1d_tile_rv(rows, (cols + 15) / 16, p, xp.data() + t0, Wph, tap.data(), w, bias, m0, t0, cols, yn);
      }
    });
  }
}

template <bool Fused>
void Run(KernelContext& ctx) {
  Conv1d p;
  if (!conv1d_of(ctx, p, Fused)) ctx.fail("problem not supported by the CPU 1-D convolution");
  const float* x = ctx.input(0).data<float>();
  const float* w = ctx.input(1).data<float>();
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, {p.N, p.M, p.OW});
  float* y = out.mutable_data<float>();
  if (kAvx512) return run_avx512(p, x, w, p.bias ? ctx.input(2).data<float>() : nullptr, y);
  // W [M, C, K] as K matrices [M, C]; X padded.
  std::vector<float> wk(static_cast<size_t>(p.K * p.M * p.C));
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t c = 0; c < p.C; ++c)
      for (int64_t j = 0; j < p.K; ++j) wk[static_cast<size_t>((j * p.M + m) * p.C + c)] = w[(m * p.C + c) * p.K + j];
  const int64_t Wp = p.W + p.pl + p.pr;
  std::vector<float> xp(static_cast<size_t>(p.C * Wp), 0.0f);
  for (int64_t n = 0; n < p.N; ++n) {
    for (int64_t c = 0; c < p.C; ++c) {
      const float* src = x + (n * p.C + c) * p.W;
      std::copy(src, src + p.W, xp.begin() + c * Wp + p.pl);
    }
    float* yn = y + n * p.M * p.OW;
    float beta = 0.0f;
    if (p.bias) {
      const float* b = ctx.input(2).data<float>();
      for (int64_t m = 0; m < p.M; ++m) std::fill(yn + m * p.OW, yn + (m + 1) * p.OW, b[m]);
      beta = 1.0f;
    }
    onednn::sync_threads();
    for (int64_t j = 0; j < p.K; ++j) {
      const dnnl::status st = dnnl::sgemm('N', 'N', p.M, p.OW, p.C, 1.0f, wk.data() + j * p.M * p.C, p.C,
                                          xp.data() + j * p.dil, Wp, j ? 1.0f : beta, yn, p.OW);
      if (st != dnnl::status::success) ctx.fail("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) + ")");
    }
  }
}

}  // namespace

void register_conv1d_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Conv", 1, INT_MAX, "cpu-gemm", Run<false>, accepts<false>});
  r.add(KernelDef{"onnxscope.cpu", kFusedConv, 1, INT_MAX, "cpu-avx512", Run<true>, accepts<true>});
}

}  // namespace onnxscope::cpu
