// Depthwise 2-D Conv (group = channels, one filter each) at unit stride on
// the plain NCHW layout, float32. Each plane is copied into a zero-padded
// buffer of rows Wp = W + pads wide; then output position (oh, ow) reads the
// buffer at (oh + i*dh) * Wp + ow + j*dw, so each tap (i, j) is one long
// contiguous multiply-add over the whole plane (its Wp - OW columns past
// each row's end are computed and dropped), not one short loop per row.
// Plain depthwise convolutions are those the blocked layout pass leaves
// plain (nchwc_layout.cpp: a depthwise convolution whose input is plain does
// not start a blocked chain); oneDNN's took 1.35x onnxruntime's time there,
// with two layout reorders around it.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct Depthwise : PlaneWindow {
  int64_t C = 0, dh = 1, dw = 1;
  bool bias = false;
  Shape y;
};

bool depthwise_of(const KernelContext& ctx, Depthwise& p) {
  if (!float_conv_inputs(ctx)) return false;
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
    if ((kernel[d] - 1) * win.dilations[d] + 1 > win.in[d] + win.pad_begin[d] + win.pad_end[d] || win.strides[d] != 1)
      return false;
  p.set(x.shape(), win, kernel[0], kernel[1]);
  p.C = C;
  p.dh = win.dilations[0];
  p.dw = win.dilations[1];
  p.y = {x.shape()[0], C, p.OH, p.OW};
  // Each thread's padded plane is this kernel's own allocation: bounded like a tensor.
  const double plane = static_cast<double>(p.H + p.pt + p.pb) * static_cast<double>(p.W + p.pl + p.pr) * sizeof(float);
  return plane <= static_cast<double>(ctx.max_tensor_bytes());
}

bool accepts(const KernelContext& ctx) {
  Depthwise p;
  return depthwise_of(ctx, p);
}

// One plane, built for AVX-512, AVX2 and the baseline. pad: the padded
// buffer ((H + pt + pb) x Wp, its borders zero), acc: (OH - 1) * Wp + OW floats.
__attribute__((target_clones("avx512f", "avx2", "default")))
void depthwise_plane(const Depthwise& p, const float* x, const float* w, float b, float* y, float* pad, float* acc) {
  const int64_t Wp = p.W + p.pl + p.pr;
  for (int64_t h = 0; h < p.H; ++h) {
    const float* src = x + h * p.W;
    float* dst = pad + (h + p.pt) * Wp + p.pl;
    for (int64_t c = 0; c < p.W; ++c) dst[c] = src[c];
  }
  const int64_t n = (p.OH - 1) * Wp + p.OW;
  for (int64_t t = 0; t < n; ++t) acc[t] = b;
  for (int64_t i = 0; i < p.kh; ++i)
    for (int64_t j = 0; j < p.kw; ++j) {
      const float wt = w[i * p.kw + j];
      const float* src = pad + i * p.dh * Wp + j * p.dw;
      for (int64_t t = 0; t < n; ++t) acc[t] += wt * src[t];
    }
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const float* src = acc + oh * Wp;
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

// The same on AVX-512 with every tap summed in registers, 32 outputs at a
// time: one load per tap and one store per 16 outputs (the loop above loads
// and stores the accumulator once per tap, and stores bound it). off: each
// tap's offset in the padded buffer.
__attribute__((target("avx512f")))
void depthwise_plane_avx512(const Depthwise& p, const int64_t* off, const float* x, const float* w, float b, float* y,
                            float* pad, float* acc) {
  const int64_t Wp = p.W + p.pl + p.pr;
  for (int64_t h = 0; h < p.H; ++h) copy_row(x + h * p.W, pad + (h + p.pt) * Wp + p.pl, p.W);
  const int64_t n = (p.OH - 1) * Wp + p.OW, taps = p.kh * p.kw;
  const __m512 vb = _mm512_set1_ps(b);
  int64_t t = 0;
  for (; t + 32 <= n; t += 32) {
    __m512 v0 = vb, v1 = vb;
    for (int64_t k = 0; k < taps; ++k) {
      const float* src = pad + off[k] + t;
      const __m512 wk = _mm512_set1_ps(w[k]);
      v0 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(src), v0);
      v1 = _mm512_fmadd_ps(wk, _mm512_loadu_ps(src + 16), v1);
    }
    _mm512_storeu_ps(acc + t, v0);
    _mm512_storeu_ps(acc + t + 16, v1);
  }
  for (; t < n; t += 16) {
    const __mmask16 m = n - t >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - t)) - 1);
    __m512 v = vb;
    for (int64_t k = 0; k < taps; ++k)
      v = _mm512_fmadd_ps(_mm512_set1_ps(w[k]), _mm512_maskz_loadu_ps(m, pad + off[k] + t), v);
    _mm512_mask_storeu_ps(acc + t, m, v);
  }
  for (int64_t oh = 0; oh < p.OH; ++oh) copy_row(acc + oh * Wp, y + oh * p.OW, p.OW);
}

void Run(KernelContext& ctx) {
  Depthwise p;
  if (!depthwise_of(ctx, p)) ctx.fail("problem not supported by the CPU depthwise convolution");
  const float* x = ctx.input(0).data<float>();
  const float* w = ctx.input(1).data<float>();
  const float* bias = p.bias ? ctx.input(2).data<float>() : nullptr;
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, p.y);
  float* y = out.mutable_data<float>();
  const int64_t Wp = p.W + p.pl + p.pr, Hp = p.H + p.pt + p.pb;
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  std::vector<int64_t> off(static_cast<size_t>(p.kh * p.kw));
  for (int64_t i = 0; i < p.kh; ++i)
    for (int64_t j = 0; j < p.kw; ++j) off[static_cast<size_t>(i * p.kw + j)] = i * p.dh * Wp + j * p.dw;
  parallel_for(p.planes, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> pad(static_cast<size_t>(Hp * Wp), 0.0f);  // borders stay zero: only the interior is written
    std::vector<float> acc(static_cast<size_t>((p.OH - 1) * Wp + p.OW));
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t ch = c % p.C;
      const float* wc = w + ch * p.kh * p.kw;
      const float bc = bias ? bias[ch] : 0.0f;
      if (avx512) depthwise_plane_avx512(p, off.data(), x + c * p.H * p.W, wc, bc, y + c * p.OH * p.OW, pad.data(), acc.data());
      else depthwise_plane(p, x + c * p.H * p.W, wc, bc, y + c * p.OH * p.OW, pad.data(), acc.data());
    }
  });
}

}  // namespace

void register_depthwise_conv_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "Conv", 1, INT_MAX, "cpu-simd", Run, accepts});
}

}  // namespace onnxscope::cpu
