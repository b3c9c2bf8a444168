// onnxscope.cpu::NchwcConv (contract in cpu/nchwc.h) for grouped 2-D
// convolutions whose groups are narrower than a block: 2, 4 or 8 input and
// output channels a group (RegNet's and ResNeXt's grouped 3x3 layers), on
// the 16-channel blocked layout, float32, AVX-512, with any activation
// NchwcConv fuses (fused_ops.h), applied in registers.
//
// oneDNN has no kernel of its own for such groups on nChw16c (its exact
// problem gives only its reference kernel), so NchwcConv ran them on
// nChw8c with a reorder of the input and of the output around each call:
// RegNet-Y-400MF at batch 1 spent ~1.2 ms of its 7.5 ms (2 threads) in those
// reorders.
//
// Here a block of 16 channels holds 16/c whole groups. For output channel j
// of each group, accumulator A_j sums, lane by lane, x[l] * W[group(l) * c +
// j][l % c] over the taps: one vector load of X per tap and position, no
// shuffle in the loop. After the taps, output lane g*c + j is the sum of A_j
// over group g's c lanes: a transpose-and-add tree (reduce_groups) of
// log2(c) levels, once per output position. The sums' order is fixed by the
// problem, not by the thread count. Padding taps are skipped (zero padding
// adds nothing); padding channels have zero weights and zero inputs, so
// they come out 0 before the activation and are set to 0 after it.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps
// and -Wuninitialized in _mm512_setzero_ps / _mm512_maskz_mov_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/math/vector_math_avx512.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/nn/fused_activation_avx512.h"
#include "cpu/kernels/output.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kBlock = 16;

struct Problem {
  int64_t N = 0, CB = 0, C = 0, H = 0, W = 0, OH = 0, OW = 0;
  int64_t c = 0;  // channels a group (in and out)
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  bool bias = false, sum = false;
  FusedActivation act;
  int64_t taps() const { return kh * kw; }
};

bool float_tensor(const Value* v) { return v && v->is_tensor() && v->tensor().dtype() == DataType::Float; }

bool problem(const KernelContext& ctx, Problem& p) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512 || ctx.input_count() < 2 || ctx.input_count() > 4) return false;
  // The group first: every NchwcConv asks this kernel before oneDNN's on
  // each run, and most are ungrouped.
  const int64_t G = ctx.attr_int("group", 1);
  if (G < 2) return false;
  if (ctx.attr_int("block", 0) != kBlock || ctx.attr_int("plain_input", 0) != 0) return false;
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(1);
  if (!float_tensor(xv) || !float_tensor(wv)) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  if (x.rank() != 5 || x.shape()[4] != kBlock || w.rank() != 4) return false;
  p.c = w.shape()[1];
  if (p.c != 2 && p.c != 4 && p.c != 8) return false;
  if (G > INT64_MAX / p.c) return false;
  p.C = p.c * G;
  if (w.shape()[0] != p.C || !blocks_hold(p.C, x.shape()[1], kBlock)) return false;
  p.N = x.shape()[0];
  p.CB = x.shape()[1];
  p.H = x.shape()[2];
  p.W = x.shape()[3];
  p.kh = w.shape()[2];
  p.kw = w.shape()[3];
  if (p.N < 1 || p.H < 1 || p.W < 1 || p.kh < 1 || p.kw < 1) return false;
  const std::vector<int64_t> kernel{p.kh, p.kw};
  const std::optional<ref::nn::Window> window = conv_window_2d(ctx, p.H, p.W, kernel);
  if (!window) return false;
  const ref::nn::Window& win = *window;
  // Taps are walked one by one: a window past X and its padding (a mutated
  // kernel or dilation) goes to the kernels that find them by division.
  for (size_t d = 0; d < 2; ++d)
    if (win.out[d] < 1 || (kernel[d] - 1) * win.dilations[d] + 1 > win.in[d] + win.pad_begin[d] + win.pad_end[d])
      return false;
  p.OH = win.out[0];
  p.OW = win.out[1];
  p.sh = win.strides[0];
  p.sw = win.strides[1];
  p.dh = win.dilations[0];
  p.dw = win.dilations[1];
  p.pt = win.pad_begin[0];
  p.pl = win.pad_begin[1];
  return nchwc_conv_extras(ctx, p.C, {p.N, p.CB, p.OH, p.OW, kBlock}, p.bias, p.sum) && fused_activation_of(ctx, p.act);
}

bool accepts(const KernelContext& ctx) {
  Problem p;
  return problem(ctx, p);
}

// The weights as the loop reads them: per block, tap and output j of the
// group, 16 lanes where lane l holds W[group(l) * c + j][l % c][tap] (zero
// past the channels). Kept with the node while the weights' storage stays.
// A vector's 16 floats on one cache line (a load across two lines costs two).
struct alignas(64) Lanes {
  float v[kBlock];
};

struct Packed {
  const Buffer* w_buf = nullptr;
  Shape w;
  std::vector<Lanes> v;
};

void pack(const Problem& p, const float* w, std::vector<Lanes>& lanes) {
  const int64_t taps = p.taps();
  lanes.assign(static_cast<size_t>(p.CB * taps * p.c), Lanes{});
  float* out = lanes.data()->v;
  for (int64_t ob = 0; ob < p.CB; ++ob)
    for (int64_t k = 0; k < taps; ++k)
      for (int64_t j = 0; j < p.c; ++j)
        for (int64_t l = 0; l < kBlock; ++l) {
          const int64_t ci = ob * kBlock + l;
          if (ci >= p.C) continue;
          const int64_t o = ci / p.c * p.c + j;
          out[((ob * taps + k) * p.c + j) * kBlock + l] = w[(o * p.c + ci % p.c) * taps + k];
        }
}

const float* packed_weights(const KernelContext& ctx, const Problem& p, std::vector<Lanes>& local) {
  const Tensor& w = ctx.input(1);
  std::shared_ptr<void>* slot = ctx.input_is_initializer(1) ? ctx.kernel_state() : nullptr;
  if (!slot) {
    pack(p, w.data<float>(), local);
    return local.data()->v;
  }
  if (!*slot) *slot = std::make_shared<Packed>();
  Packed& k = *static_cast<Packed*>(slot->get());
  if (k.w_buf != w.buffer().get() || k.w != w.shape() || k.v.empty()) {
    pack(p, w.data<float>(), k.v);
    k.w_buf = w.buffer().get();
    k.w = w.shape();
  }
  return k.v.data()->v;
}

// Per quarter of 4 lanes: [u0 + u1, u2 + u3, v0 + v1, v2 + v3].
__attribute__((target("avx512f"), always_inline)) inline __m512 pairs(__m512 u, __m512 v) {
  return _mm512_add_ps(_mm512_shuffle_ps(u, v, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(u, v, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Lane g*c + j of the result: the sum of a[j] over group g's c lanes.
template <int C>
__attribute__((target("avx512f"), always_inline)) inline __m512 reduce_groups(const __m512* a) {
  if constexpr (C == 2) {
    return _mm512_permute_ps(pairs(a[0], a[1]), _MM_SHUFFLE(3, 1, 2, 0));
  } else if constexpr (C == 4) {
    return pairs(pairs(a[0], a[1]), pairs(a[2], a[3]));  // quarter q, lane j: the sum of a[j] over quarter q
  } else {
    const __m512 lo = pairs(pairs(a[0], a[1]), pairs(a[2], a[3]));
    const __m512 hi = pairs(pairs(a[4], a[5]), pairs(a[6], a[7]));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));  // [g0 j0-3, g1 j0-3, g0 j4-7, g1 j4-7]
    return _mm512_shuffle_f32x4(s, s, _MM_SHUFFLE(3, 1, 2, 0));
  }
}

// What one output row of one block reads: the input plane, the kept rows'
// taps, the packed weights of the block, the bias and residual of the block.
struct Row {
  const float* x;   // the block's input plane [H][W][16]
  const float* w;   // the block's packed weights [taps][c][16]
  const float* bias;  // the block's 16 biases (zeros past the channels)
  __mmask16 real;   // the block's real (not padding) channels
  const float* r;   // the residual row [OW][16], or nullptr
  float* y;         // the output row [OW][16]
  int64_t ih0 = 0;  // input row of the first kernel row
  int64_t k0 = 0, k1 = 0;  // kernel rows inside X
};

// T output positions from ow, every tap inside X (no bounds checks).
template <int C, int T>
__attribute__((target("avx512f"))) void positions_inside(const Problem& p, const Row& row, int64_t ow) {
  __m512 acc[T][C];
  #pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
    #pragma GCC unroll 16
    for (int j = 0; j < C; ++j) acc[t][j] = _mm512_setzero_ps();
  const int64_t iw0 = ow * p.sw - p.pl;
  for (int64_t ky = row.k0; ky < row.k1; ++ky) {
    const float* xr = row.x + (row.ih0 + ky * p.dh) * p.W * kBlock;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const float* wk = row.w + (ky * p.kw + kx) * C * kBlock;
      __m512 wv[C];
      #pragma GCC unroll 16
      for (int j = 0; j < C; ++j) wv[j] = _mm512_load_ps(wk + j * kBlock);
      const float* xp = xr + (iw0 + kx * p.dw) * kBlock;
      #pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512 xt = _mm512_loadu_ps(xp + t * p.sw * kBlock);
        #pragma GCC unroll 16
        for (int j = 0; j < C; ++j) acc[t][j] = _mm512_fmadd_ps(xt, wv[j], acc[t][j]);
      }
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    __m512 v = _mm512_add_ps(reduce_groups<C>(acc[t]), _mm512_loadu_ps(row.bias));
    if (row.r) v = _mm512_add_ps(v, _mm512_loadu_ps(row.r + (ow + t) * kBlock));
    _mm512_storeu_ps(row.y + (ow + t) * kBlock, _mm512_maskz_mov_ps(row.real, activate(p.act, v)));
  }
}

// One output position near the left or right edge: taps past X skipped.
template <int C>
__attribute__((target("avx512f"))) void position_at_edge(const Problem& p, const Row& row, int64_t ow) {
  __m512 acc[C];
  #pragma GCC unroll 16
  for (int j = 0; j < C; ++j) acc[j] = _mm512_setzero_ps();
  const int64_t iw0 = ow * p.sw - p.pl;
  for (int64_t ky = row.k0; ky < row.k1; ++ky) {
    const float* xr = row.x + (row.ih0 + ky * p.dh) * p.W * kBlock;
    for (int64_t kx = 0; kx < p.kw; ++kx) {
      const int64_t iw = iw0 + kx * p.dw;
      if (iw < 0 || iw >= p.W) continue;
      const float* wk = row.w + (ky * p.kw + kx) * C * kBlock;
      const __m512 xt = _mm512_loadu_ps(xr + iw * kBlock);
      #pragma GCC unroll 16
      for (int j = 0; j < C; ++j) acc[j] = _mm512_fmadd_ps(xt, _mm512_loadu_ps(wk + j * kBlock), acc[j]);
    }
  }
  __m512 v = _mm512_add_ps(reduce_groups<C>(acc), _mm512_loadu_ps(row.bias));
  if (row.r) v = _mm512_add_ps(v, _mm512_loadu_ps(row.r + ow * kBlock));
  _mm512_storeu_ps(row.y + ow * kBlock, _mm512_maskz_mov_ps(row.real, activate(p.act, v)));
}

// First and one-past-last output column whose taps all lie inside X.
void inside_columns(const Problem& p, int64_t& lo, int64_t& hi) {
  lo = std::min(p.OW, p.pl == 0 ? 0 : (p.pl - 1) / p.sw + 1);  // ceil(pl / sw), with no pl + sw to overflow
  const int64_t last = p.W - 1 + p.pl - (p.kw - 1) * p.dw;  // ow * sw must not pass it
  hi = last < 0 ? 0 : std::min(p.OW, last / p.sw + 1);
  if (hi < lo) hi = lo;
}

// A whole output row: the edges one position at a time, the inside 16 / c at a time.
template <int C>
__attribute__((target("avx512f"))) void output_row(const Problem& p, const Row& row, int64_t lo, int64_t hi) {
  constexpr int T = 16 / C;  // 16 accumulators
  for (int64_t ow = 0; ow < lo; ++ow) position_at_edge<C>(p, row, ow);
  int64_t ow = lo;
  for (; ow + T <= hi; ow += T) positions_inside<C, T>(p, row, ow);
  for (; ow < hi; ++ow) positions_inside<C, 1>(p, row, ow);
  for (ow = hi; ow < p.OW; ++ow) position_at_edge<C>(p, row, ow);
}

void Run(KernelContext& ctx) {
  Problem p;
  if (!problem(ctx, p)) ctx.fail("problem not supported by the grouped blocked convolution");
  std::vector<Lanes> local;
  const float* wp = packed_weights(ctx, p, local);
  const float* x = ctx.input(0).data<float>();
  const float* bias = p.bias ? ctx.input(2).data<float>() : nullptr;
  std::vector<float> bias_padded(static_cast<size_t>(p.CB * kBlock), 0.f);
  if (bias) std::copy(bias, bias + p.C, bias_padded.begin());
  const Shape yb{p.N, p.CB, p.OH, p.OW, kBlock};
  const float* r = nullptr;  // the residual: the output's own storage where it dies here
  float* y = nchwc_conv_output(ctx, yb, p.sum, r).mutable_data<float>();
  int64_t lo = 0, hi = 0;
  inside_columns(p, lo, hi);
  const int64_t taps = p.taps(), rows = p.N * p.CB * p.OH;
  const int64_t row_macs = std::max<int64_t>(1, p.OW * taps * p.c * kBlock);
  parallel_for(rows, std::max<int64_t>(1, 65536 / row_macs), [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t oh = i % p.OH, nb = i / p.OH, ob = nb % p.CB;
      Row row;
      row.x = x + nb * p.H * p.W * kBlock;
      row.w = wp + ob * taps * p.c * kBlock;
      row.bias = bias_padded.data() + ob * kBlock;
      const int64_t real = std::min<int64_t>(kBlock, p.C - ob * kBlock);
      row.real = static_cast<__mmask16>(real >= 16 ? 0xffff : (1u << real) - 1);
      row.r = r ? r + i * p.OW * kBlock : nullptr;
      row.y = y + i * p.OW * kBlock;
      row.ih0 = oh * p.sh - p.pt;
      // Kernel rows ky with 0 <= ih0 + ky * dh < H.
      row.k0 = row.ih0 >= 0 ? 0 : (-row.ih0 + p.dh - 1) / p.dh;
      row.k1 = p.H - 1 - row.ih0 < 0 ? 0 : std::min(p.kh, (p.H - 1 - row.ih0) / p.dh + 1);
      if (row.k1 < row.k0) row.k1 = row.k0;
      switch (p.c) {
        case 2: output_row<2>(p, row, lo, hi); break;
        case 4: output_row<4>(p, row, lo, hi); break;
        default: output_row<8>(p, row, lo, hi); break;
      }
    }
  });
}

}  // namespace

void register_grouped_conv_nchwc_kernels(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcConv, 1, INT_MAX, "cpu-avx512", Run, accepts});
}

}  // namespace onnxscope::cpu
