// Depthwise 2-D Conv (group = channels, one filter each) on the plain NCHW
// layout, float32, any stride. Each plane is copied into zero-bordered phase
// buffers: with strides (sh, sw), phase (a, b) holds the padded plane's
// rows a, a + sh, ... and columns b, b + sw, ..., Wq = ceil(Wp / sw) wide
// (at unit stride the one phase is the padded plane). Output position
// (oh, ow) then reads phase ((i*dh) % sh, (j*dw) % sw) at row oh + (i*dh) / sh,
// column ow + (j*dw) / sw, so each tap (i, j) is one long contiguous
// multiply-add over the whole plane (its Wq - OW columns past each row's end
// are computed and dropped), not one short strided loop per row.
// Plain depthwise convolutions are those the blocked layout pass leaves
// plain (nchwc_layout.cpp: a depthwise convolution whose input is plain does
// not start a blocked chain); oneDNN's took 1.35x onnxruntime's time there at
// unit stride, and 1.5x at 5x5 stride 2, with two layout reorders around it.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Depthwise : PlaneWindow {
  bool half = false;  // float16 X, W, B and Y (AVX-512 only): float32 in between, Y rounded once
  int64_t C = 0, dh = 1, dw = 1, sh = 1, sw = 1;
  int64_t Hq = 0, Wq = 0;  // each phase buffer's rows and columns
  bool bias = false;
  Shape y;
  int64_t phase_floats() const { return Hq * Wq; }
  // Tap (i, j)'s offset in the phase buffers.
  int64_t offset(int64_t i, int64_t j) const {
    return ((i * dh) % sh * sw + (j * dw) % sw) * phase_floats() + (i * dh) / sh * Wq + (j * dw) / sw;
  }
};

// Inputs all float16 (X, W and B, if any): a float16 model's depthwise
// convolution, computed without the Casts around it (the same bits).
bool half_conv_inputs(const KernelContext& ctx) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512 || ctx.input_count() < 2 || ctx.input_count() > 3) return false;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const Value* v = ctx.input_value(i);
    if (i < 2 && !v) return false;
    if (v && (!v->is_tensor() || v->tensor().dtype() != DataType::Float16)) return false;
  }
  return true;
}

bool depthwise_of(const KernelContext& ctx, Depthwise& p) {
  p.half = half_conv_inputs(ctx);
  if (!p.half && !float_conv_inputs(ctx)) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const Tensor& w = ctx.input_value(1)->tensor();
  if (x.rank() != 4 || w.rank() != 4 || x.element_count() == 0) return false;
  const int64_t C = x.shape()[1];
  if (ctx.attr_int("group", 1) != C || C < 2 || w.shape()[0] != C || w.shape()[1] != 1) return false;
  const std::vector<int64_t> kernel = {w.shape()[2], w.shape()[3]};
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return false;
  if (const Value* b = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    if (b->tensor().rank() != 1 || b->tensor().shape()[0] != C) return false;
    p.bias = true;
  }
  ref::nn::Window win;
  try {
    win = ref::nn::resolve_window(ctx, {x.shape()[2], x.shape()[3]}, kernel, false);
  } catch (const std::exception&) {
    return false;  // the reference names what is wrong
  }
  // Taps are walked one by one: a window past X and its padding (a mutated
  // kernel or dilation of 2^40) goes to the reference, which finds them by division.
  for (size_t d = 0; d < 2; ++d)
    if ((kernel[d] - 1) * win.dilations[d] + 1 > win.in[d] + win.pad_begin[d] + win.pad_end[d] ||
        win.strides[d] > win.in[d] + win.pad_begin[d] + win.pad_end[d])
      return false;
  p.set(x.shape(), win, kernel[0], kernel[1]);
  p.C = C;
  p.dh = win.dilations[0];
  p.dw = win.dilations[1];
  p.sh = win.strides[0];
  p.sw = win.strides[1];
  p.Hq = (p.H + p.pt + p.pb + p.sh - 1) / p.sh;
  p.Wq = (p.W + p.pl + p.pr + p.sw - 1) / p.sw;
  p.y = {x.shape()[0], C, p.OH, p.OW};
  // Each thread's phase buffers are this kernel's own allocation: bounded like a tensor.
  const double plane = static_cast<double>(p.sh * p.Hq) * static_cast<double>(p.sw * p.Wq) * sizeof(float);
  return plane <= static_cast<double>(ctx.max_tensor_bytes());
}

bool accepts(const KernelContext& ctx) {
  Depthwise p;
  return depthwise_of(ctx, p);
}

// Plane x into the phase buffers (their borders stay zero: only the
// positions of X are written, the same ones for every plane).
// Column c goes to phase (c + pl) % sw at (c + pl) / sw: the columns c0,
// c0 + sw, ... share a phase and lie next to each other there, so their
// place is worked out once per plane (a division per float took most of the
// AVX2 plane's time); at stride 1 a row is one copy.
void scatter_plane(const Depthwise& p, const float* x, float* buf) {
  for (int64_t c0 = 0; c0 < std::min(p.sw, p.W); ++c0) {
    const int64_t at = (c0 + p.pl) % p.sw * p.phase_floats() + (c0 + p.pl) / p.sw;
    int64_t a = p.pt % p.sh, hq = p.pt / p.sh;  // row h's phase row and its row there
    for (int64_t h = 0; h < p.H; ++h) {
      float* dst = buf + a * p.sw * p.phase_floats() + hq * p.Wq + at;  // phase (a, 0), then the column's
      if (++a == p.sh) a = 0, ++hq;
      const float* src = x + h * p.W;
      if (p.sw == 1) std::copy(src, src + p.W, dst);
      else
        for (int64_t c = c0; c < p.W; c += p.sw) *dst++ = src[c];
    }
  }
}

// 64 outputs at a time from t = 0 on, every tap summed in eight AVX2
// registers (tap_block below is the AVX-512 form): one load per tap and 8
// outputs, where a pass per tap over all of acc also loaded and stored acc
// once per tap (0.27x onnxruntime on an AVX2 EPYC). The last block runs
// whole into the buffers' slack (kBlockSlack: at most 63 floats past the
// last output read and written).
constexpr int64_t kAvx2Block = 64;
__attribute__((target("avx2,fma"))) void tap_rows_avx2(const float* buf, const int64_t* off, const float* w, int64_t taps,
                                                      int64_t n, float b, float* acc) {
  const __m256 vb = _mm256_set1_ps(b);
  for (int64_t t = 0; t < n; t += kAvx2Block) {
    __m256 v[8];
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) v[u] = vb;
    for (int64_t k = 0; k < taps; ++k) {
      const float* src = buf + off[k] + t;
      const __m256 wk = _mm256_set1_ps(w[k]);
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) v[u] = _mm256_fmadd_ps(wk, _mm256_loadu_ps(src + 8 * u), v[u]);
    }
#pragma GCC unroll 8
    for (int u = 0; u < 8; ++u) _mm256_storeu_ps(acc + t + 8 * u, v[u]);
  }
}

// One plane, built for AVX-512, AVX2 and the baseline. buf: the phase
// buffers, acc: (OH - 1) * Wq + OW floats.
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void depthwise_plane(const Depthwise& p, const int64_t* off, const float* x, const float* w, float b, float* y,
                     float* buf, float* acc) {
  const bool avx2 = cpu_has_avx2_fma();
  scatter_plane(p, x, buf);
  const int64_t n = (p.OH - 1) * p.Wq + p.OW;
  if (avx2) {
    tap_rows_avx2(buf, off, w, p.kh * p.kw, n, b, acc);
  } else {
    for (int64_t t = 0; t < n; ++t) acc[t] = b;
    for (int64_t k = 0; k < p.kh * p.kw; ++k) {
      const float wt = w[k];
      const float* src = buf + off[k];
      for (int64_t t = 0; t < n; ++t) acc[t] += wt * src[t];
    }
  }
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const float* src = acc + oh * p.Wq;
    float* dst = y + oh * p.OW;
    for (int64_t o = 0; o < p.OW; ++o) dst[o] = src[o];
  }
}

// Copies n floats (short rows: memmove's call costs more than the copy).
__attribute__((target("avx512f"))) inline void copy_row(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_loadu_ps(src + i));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_maskz_loadu_ps(m, src + i));
  }
}

// Rows of n floats (the first at padded column pl) into their phases at
// stride 2: the even elements to one phase row, the odd ones to the other.
// The masks of a row's last 1 to 31 floats and the two destinations'
// offsets are worked out once per plane (a 28-wide row is only that tail:
// per row, they cost as much as the copy).
struct Deinterleave {
  int64_t n, even_at, odd_at, full;
  __mmask16 mlo, mhi, meven, modd;
  Deinterleave(int64_t n_, int64_t pl, int64_t phase_floats) : n(n_) {
    even_at = (pl & 1) * phase_floats + (pl >> 1);
    odd_at = (1 - (pl & 1)) * phase_floats + ((pl + 1) >> 1);
    full = n / 32 * 32;
    const int64_t r = n - full;
    mlo = static_cast<__mmask16>(r >= 16 ? 0xffff : (1u << r) - 1);
    mhi = static_cast<__mmask16>(r > 16 ? (1u << (r - 16)) - 1 : 0);
    meven = static_cast<__mmask16>((1u << ((r + 1) / 2)) - 1);
    modd = static_cast<__mmask16>((1u << (r / 2)) - 1);
  }
  __attribute__((target("avx512f"))) void row(const float* src, float* phase0) const {
    float* even = phase0 + even_at;
    float* odd = phase0 + odd_at;
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    int64_t c = 0;
    for (; c < full; c += 32) {
      const __m512 lo = _mm512_loadu_ps(src + c), hi = _mm512_loadu_ps(src + c + 16);
      _mm512_storeu_ps(even + c / 2, _mm512_permutex2var_ps(lo, ie, hi));
      _mm512_storeu_ps(odd + c / 2, _mm512_permutex2var_ps(lo, io, hi));
    }
    if (c < n) {  // the last 1 to 31: masked
      const __m512 lo = _mm512_maskz_loadu_ps(mlo, src + c), hi = _mm512_maskz_loadu_ps(mhi, src + c + 16);
      _mm512_mask_storeu_ps(even + c / 2, meven, _mm512_permutex2var_ps(lo, ie, hi));
      _mm512_mask_storeu_ps(odd + c / 2, modd, _mm512_permutex2var_ps(lo, io, hi));
    }
  }
};

// Floats after the phase buffers and the accumulators, so that a block of
// 128 outputs may run past the last output (tap_block's last call).
constexpr int64_t kBlockSlack = 128;
static_assert(kAvx2Block - 1 <= kBlockSlack, "tap_rows_avx2's last block runs into the slack");

// 16 * V outputs from t on with every tap summed in registers: one load
// per tap and one store per 16 outputs, into dst (the last vector under
// `last`: a row's end when the sums go straight into Y). Eight FMA chains
// in flight (an FMA's latency is four cycles, two issue a cycle); with two,
// a 5 x 5 kernel waited on its chains. The last block of a plane takes only
// the vectors it needs (a 14 x 14 output at stride 2 is 222 sums: 128 + 96,
// not 256).
template <int V>
__attribute__((target("avx512f"))) inline void tap_block(const float* pad, const int64_t* off, const float* w,
                                                         int64_t taps, int64_t t, __m512 vb, float* dst, __mmask16 last) {
  __m512 v[V];
#pragma GCC unroll 8
  for (int u = 0; u < V; ++u) v[u] = vb;
  for (int64_t k = 0; k < taps; ++k) {
    const float* src = pad + off[k] + t;
    const __m512 wk = _mm512_set1_ps(w[k]);
#pragma GCC unroll 8
    for (int u = 0; u < V; ++u) v[u] = _mm512_fmadd_ps(wk, _mm512_loadu_ps(src + 16 * u), v[u]);
  }
#pragma GCC unroll 8
  for (int u = 0; u + 1 < V; ++u) _mm512_storeu_ps(dst + 16 * u, v[u]);
  _mm512_mask_storeu_ps(dst + 16 * (V - 1), last, v[V - 1]);
}

__attribute__((target("avx512f"))) inline void tap_blocks(const float* pad, const int64_t* off, const float* w, int64_t taps,
                                                          int64_t t, __m512 vb, float* dst, __mmask16 last, int64_t vectors) {
  switch (vectors) {
    case 1: return tap_block<1>(pad, off, w, taps, t, vb, dst, last);
    case 2: return tap_block<2>(pad, off, w, taps, t, vb, dst, last);
    case 3: return tap_block<3>(pad, off, w, taps, t, vb, dst, last);
    case 4: return tap_block<4>(pad, off, w, taps, t, vb, dst, last);
    case 5: return tap_block<5>(pad, off, w, taps, t, vb, dst, last);
    case 6: return tap_block<6>(pad, off, w, taps, t, vb, dst, last);
    case 7: return tap_block<7>(pad, off, w, taps, t, vb, dst, last);
    default: return tap_block<8>(pad, off, w, taps, t, vb, dst, last);
  }
}

// The same plane on AVX-512, the taps summed in registers (tap_block). off:
// each tap's offset in the phase buffers.
__attribute__((target("avx512f")))
void depthwise_plane_avx512(const Depthwise& p, const int64_t* off, const float* x, const float* w, float b, float* y,
                            float* pad, float* acc) {
  if (p.sw <= 2) {
    int64_t a = p.pt % p.sh, hq = p.pt / p.sh;  // input row h's phase row and its row there
    const Deinterleave split(p.W, p.pl, p.phase_floats());
    for (int64_t h = 0; h < p.H; ++h) {
      float* row = pad + a * p.sw * p.phase_floats() + hq * p.Wq;
      if (p.sw == 1) copy_row(x + h * p.W, row + p.pl, p.W);
      else split.row(x + h * p.W, row);
      if (++a == p.sh) a = 0, ++hq;
    }
  } else {
    scatter_plane(p, x, pad);
  }
  const int64_t n = (p.OH - 1) * p.Wq + p.OW, taps = p.kh * p.kw;
  const __m512 vb = _mm512_set1_ps(b);
  if (p.OW >= 32) {
    // Rows of 32 and more: each output row's sums go straight into Y (at
    // most a quarter of its last vector wasted), with no pass through the
    // accumulators and copy out (a 56-wide plane spent a third of its time
    // in those stores).
    for (int64_t oh = 0; oh < p.OH; ++oh)
      for (int64_t c = 0; c < p.OW; c += 128) {
        const int64_t left = std::min<int64_t>(128, p.OW - c), vectors = (left + 15) / 16;
        const auto last = static_cast<__mmask16>(0xffffu >> (16 * vectors - left));
        tap_blocks(pad, off, w, taps, oh * p.Wq + c, vb, y + oh * p.OW + c, last, vectors);
      }
    return;
  }
  // The last block's last vector runs whole: the buffers have kBlockSlack
  // floats past their ends, so it reads zeros (or the next phase) and writes
  // results that are never copied out, without a mask per load and tap.
  int64_t t = 0;
  for (; t + 128 <= n; t += 128) tap_block<8>(pad, off, w, taps, t, vb, acc + t, 0xffff);
  if (t < n) tap_blocks(pad, off, w, taps, t, vb, acc + t, 0xffff, (n - t + 15) / 16);
  for (int64_t oh = 0; oh < p.OH; ++oh) copy_row(acc + oh * p.Wq, y + oh * p.OW, p.OW);
}

// float16: each plane widened into the thread's float32 plane, computed as a
// float32 one, its outputs rounded to float16 by the Cast kernel's
// conversion (the Casts' bits, each plane in cache instead of two passes
// over the tensors).
void run_half(KernelContext& ctx, const Depthwise& p, const std::vector<int64_t>& off) {
  const auto* x = reinterpret_cast<const uint16_t*>(ctx.input(0).raw());
  const Tensor& wt = ctx.input(1);
  std::vector<float> w(wt.element_count()), bias(static_cast<size_t>(p.C), 0.0f);
  half_to_float_run(reinterpret_cast<const uint16_t*>(wt.raw()), w.data(), static_cast<int64_t>(w.size()));
  if (p.bias) half_to_float_run(reinterpret_cast<const uint16_t*>(ctx.input(2).raw()), bias.data(), p.C);
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float16, p.y);
  auto* y = reinterpret_cast<uint16_t*>(out.mutable_raw());
  parallel_for(p.planes, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> pad(static_cast<size_t>(p.sh * p.sw * p.phase_floats() + kBlockSlack), 0.0f);
    std::vector<float> acc(static_cast<size_t>((p.OH - 1) * p.Wq + p.OW + kBlockSlack));
    std::vector<float> xin(static_cast<size_t>(p.H * p.W)), yout(static_cast<size_t>(p.OH * p.OW));
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t ch = c % p.C;
      half_to_float_run(x + c * p.H * p.W, xin.data(), p.H * p.W);
      depthwise_plane_avx512(p, off.data(), xin.data(), w.data() + ch * p.kh * p.kw, bias[static_cast<size_t>(ch)], yout.data(),
                             pad.data(), acc.data());
      float_to_half_run(yout.data(), y + c * p.OH * p.OW, p.OH * p.OW);
    }
  });
}

void Run(KernelContext& ctx) {
  Depthwise p;
  if (!depthwise_of(ctx, p)) ctx.fail("problem not supported by the CPU depthwise convolution");
  std::vector<int64_t> off(static_cast<size_t>(p.kh * p.kw));
  for (int64_t i = 0; i < p.kh; ++i)
    for (int64_t j = 0; j < p.kw; ++j) off[static_cast<size_t>(i * p.kw + j)] = p.offset(i, j);
  if (p.half) return run_half(ctx, p, off);
  const float* x = ctx.input(0).data<float>();
  const float* w = ctx.input(1).data<float>();
  const float* bias = p.bias ? ctx.input(2).data<float>() : nullptr;
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, p.y);
  float* y = out.mutable_data<float>();
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  parallel_for(p.planes, 1, [&](int64_t c0, int64_t c1) {
    // Borders stay zero: only the positions of X are written.
    std::vector<float> pad(static_cast<size_t>(p.sh * p.sw * p.phase_floats() + kBlockSlack), 0.0f);
    std::vector<float> acc(static_cast<size_t>((p.OH - 1) * p.Wq + p.OW + kBlockSlack));
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t ch = c % p.C;
      const float* wc = w + ch * p.kh * p.kw;
      const float bc = bias ? bias[ch] : 0.0f;
      if (avx512) depthwise_plane_avx512(p, off.data(), x + c * p.H * p.W, wc, bc, y + c * p.OH * p.OW, pad.data(), acc.data());
      else depthwise_plane(p, off.data(), x + c * p.H * p.W, wc, bc, y + c * p.OH * p.OW, pad.data(), acc.data());
    }
  });
}

}  // namespace

bool depthwise_conv_takes_half(const Node& n, const std::function<const Tensor*(const std::string&)>& constant) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (!avx512 || !n.domain.empty() || n.op_type != "Conv" || n.inputs.size() < 2 || n.inputs.size() > 3) return false;
  const Tensor* w = constant(n.inputs[1]);
  if (!w || w->rank() != 4 || w->shape()[1] != 1 || w->shape()[0] < 2) return false;
  const Attribute* g = n.attribute("group");
  return g && g->i == w->shape()[0];
}

void register_depthwise_conv_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Conv", 1, INT_MAX, "cpu-simd", Run, accepts});
}

}  // namespace onnxscope::cpu
