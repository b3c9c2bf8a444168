// MaxPool over the plain NCHW layout, float32, uint8 and int8 (a
// QOperator model's pools run on its 8-bit tensors), 2-D windows without
// dilation, Y only (not Indices): the window maximum is separable, so each
// plane is reduced down the window's rows first (contiguous, W wide), then
// along that row's column windows (the strided ones of the stem's 3x3 s2
// pool included); that order does half the strided work of the other. As
// the reference's: NaN taps are skipped, a window of NaN only (or wholly in
// the padding) gives NaN. Of equal maxima the reference keeps the row-major
// first; this kernel the first along the row of column maxima, which differs
// only in the sign of a zero (-0 against +0 in one window). oneDNN's pooling
// on the plain layout ran at 0.73x onnxruntime on ResNet's stem pool; on the
// blocked layout oneDNN's still runs.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in masked loads.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/output.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct MaxPoolShape : PlaneWindow {
  int64_t sh = 1, sw = 1;
  Shape y;
};

// channels_last: X is [N, H, W, C] (NhwcMaxPool); p describes its NCHW problem.
bool max_pool_of(const KernelContext& ctx, MaxPoolShape& p, bool channels_last = false) {
  if (ctx.input_count() != 1 || ctx.output_count() != 1) return false;
  const Value* v = ctx.input_value(0);
  if (!v || !v->is_tensor() || v->tensor().rank() != 4) return false;
  const DataType t = v->tensor().dtype();
  if (t != DataType::Float && t != DataType::Uint8 && t != DataType::Int8) return false;
  if (channels_last && t == DataType::Float) return false;  // the pass makes 8-bit ones only
  const Shape x = channels_last ? channels_first_shape(v->tensor().shape()) : v->tensor().shape();
  const int64_t order = ctx.attr_int("storage_order", 0);
  if (order != 0 && order != 1) return false;  // the reference names it
  const std::optional<ref::nn::Window> win = pool_window_2d(ctx, x[2], x[3]);
  if (!win) return false;
  const ref::nn::Window& w = *win;
  p.set(x, w, w.kernel[0], w.kernel[1]);
  p.sh = w.strides[0];
  p.sw = w.strides[1];
  p.y = {x[0], x[1], p.OH, p.OW};
  return true;
}

// The larger of the running maximum m and a later tap x: NaN taps skipped,
// a NaN maximum (no tap yet, or NaN ones only) replaced, ties keep m.
// The exact maximum of a running m and a later tap x: NaN taps skipped, a
// NaN maximum (no tap yet, or NaN ones only) replaced, ties keep m.
inline float later_max(float m, float x) {
  const float larger = m < x ? x : m;
  return m != m ? x : larger;
}

// x > m ? x : m is one vmaxps (its NaN rule: a NaN x keeps m, a NaN m
// stays): exact when the first tap is not NaN, which the passes check.
inline float fast_max(float m, float x) { return x > m ? x : m; }

// col[w] = the maximum of a[w], b[w], c[w] (fast_max's rule) for w < W;
// true when some col[w] is NaN. The plain loop and one for AVX-512 that
// tests for NaN as it goes (a mask or-ed per vector, one test per row: the
// separate pass and its horizontal or took a fifth of the plane's time).
bool rows3_plain(const float* a, const float* b, const float* c, float* col, int64_t W) {
  int nan = 0;  // an int, not a bool: the or-reduction vectorises
  for (int64_t w = 0; w < W; ++w) {
    const float m = fast_max(fast_max(a[w], b[w]), c[w]);
    col[w] = m;
    nan |= m != m ? 1 : 0;
  }
  return nan != 0;
}

__attribute__((target("avx512f"))) bool rows3_avx512(const float* a, const float* b, const float* c, float* col, int64_t W) {
  __mmask16 nan = 0;
  int64_t w = 0;
  // fast_max(m, x) = x > m ? x : m is vmaxps(x, m): its second operand when either is NaN.
  for (; w + 16 <= W; w += 16) {
    const __m512 m = _mm512_max_ps(_mm512_loadu_ps(c + w), _mm512_max_ps(_mm512_loadu_ps(b + w), _mm512_loadu_ps(a + w)));
    _mm512_storeu_ps(col + w, m);
    nan |= _mm512_cmp_ps_mask(m, m, _CMP_UNORD_Q);
  }
  if (w < W) {
    const auto k = static_cast<__mmask16>((1u << (W - w)) - 1u);
    const __m512 m = _mm512_max_ps(_mm512_maskz_loadu_ps(k, c + w),
                                   _mm512_max_ps(_mm512_maskz_loadu_ps(k, b + w), _mm512_maskz_loadu_ps(k, a + w)));
    _mm512_mask_storeu_ps(col + w, k, m);
    nan |= _mm512_mask_cmp_ps_mask(k, m, m, _CMP_UNORD_Q);
  }
  return nan != 0;
}

using Rows3 = bool (*)(const float*, const float*, const float*, float*, int64_t);

struct Geometry {
  std::vector<Span> cols, rows;
  int64_t in_lo = 0, in_hi = 0;  // output columns whose whole window lies inside X
};

// One plane, built for AVX-512, AVX2 and the baseline (the engine is built
// for the baseline: 4-wide vectors). Per output row: the maximum down its
// window's input rows (contiguous, W wide) into col, then along col's
// column windows. col: W floats.
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void max_plane(const MaxPoolShape& p, const Geometry& g, const float* plane, float* out_plane, float* col, Rows3 rows3) {
  const int64_t sw = p.sw, kw = p.kw, W = p.W;
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t r0 = g.rows[oh].lo, r1 = g.rows[oh].hi;
    float* dst = out_plane + oh * p.OW;
    if (r0 >= r1) {
      for (int64_t o = 0; o < p.OW; ++o) dst[o] = NAN;  // no taps, as the reference's
      continue;
    }
    const float* a = plane + r0 * W;
    // A NaN in col (a first tap NaN, or NaN ones only) would be skipped
    // along the row with the taps under it: such a row, rare, runs exactly.
    bool nan = false;
    if (r1 - r0 == 3) {
      nan = rows3(a, a + W, a + 2 * W, col, W);
    } else {
      for (int64_t w = 0; w < W; ++w) col[w] = a[w];
      for (int64_t r = r0 + 1; r < r1; ++r) {
        const float* src = plane + r * W;
        for (int64_t w = 0; w < W; ++w) col[w] = fast_max(col[w], src[w]);
      }
      int any = 0;  // an int, not a bool: the or-reduction vectorises
      for (int64_t w = 0; w < W; ++w) any |= col[w] != col[w] ? 1 : 0;
      nan = any != 0;
    }
    if (nan) {
      for (int64_t o = 0; o < p.OW; ++o) {
        float m = NAN;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = g.cols[o].lo; j < g.cols[o].hi; ++j) m = later_max(m, plane[r * W + j]);
        dst[o] = m;
      }
      continue;
    }
    for (int64_t o = 0; o < p.OW; ++o) {
      if (o == g.in_lo && g.in_hi > g.in_lo) {
        // The columns whose window lies inside X: fixed taps, no clamping.
        const float* src = col + g.in_lo * sw - p.pl;
        const int64_t n = g.in_hi - g.in_lo;
        float* d = dst + g.in_lo;
        if (kw == 3 && sw == 2) {
          for (int64_t i = 0; i < n; ++i) d[i] = fast_max(fast_max(src[2 * i], src[2 * i + 1]), src[2 * i + 2]);
        } else if (kw == 3 && sw == 1) {
          for (int64_t i = 0; i < n; ++i) d[i] = fast_max(fast_max(src[i], src[i + 1]), src[i + 2]);
        } else if (kw == 2 && sw == 2) {
          for (int64_t i = 0; i < n; ++i) d[i] = fast_max(src[2 * i], src[2 * i + 1]);
        } else {
          for (int64_t i = 0; i < n; ++i) d[i] = src[i * sw];
          for (int64_t j = 1; j < kw; ++j)
            for (int64_t i = 0; i < n; ++i) d[i] = fast_max(d[i], src[i * sw + j]);
        }
        o = g.in_hi - 1;
        continue;
      }
      const Span c = g.cols[o];
      float m = c.lo < c.hi ? col[c.lo] : NAN;
      for (int64_t j = c.lo + 1; j < c.hi; ++j) m = fast_max(m, col[j]);
      dst[o] = m;
    }
  }
}

Geometry geometry_of(const MaxPoolShape& p) {
  Geometry g;
  g.cols.resize(static_cast<size_t>(p.OW));
  g.rows.resize(static_cast<size_t>(p.OH));
  g.in_lo = p.OW;
  g.in_hi = p.OW;
  for (int64_t o = 0; o < p.OW; ++o) {
    g.cols[o] = window_span(o, p.sw, p.pl, p.kw, 0, p.W);
    const int64_t start = o * p.sw - p.pl;
    if (start >= 0 && start + p.kw <= p.W) {  // the whole-window columns are one run
      if (g.in_lo == p.OW) g.in_lo = o;
      g.in_hi = o + 1;
    }
  }
  for (int64_t o = 0; o < p.OH; ++o) g.rows[o] = window_span(o, p.sh, p.pt, p.kh, 0, p.H);
  return g;
}

// Whether every window has a tap inside X (an 8-bit window wholly in the
// padding has no maximum to give: the reference's form takes those).
bool every_window_has_taps(const Geometry& g) {
  for (const Span& s : g.cols)
    if (s.lo >= s.hi) return false;
  for (const Span& s : g.rows)
    if (s.lo >= s.hi) return false;
  return true;
}

bool accepts(const KernelContext& ctx) {
  MaxPoolShape p;
  if (!max_pool_of(ctx, p)) return false;
  return ctx.input_value(0)->tensor().dtype() == DataType::Float || every_window_has_taps(geometry_of(p));
}

// One plane of 8-bit values: the maximum down each window's rows, then
// along the row's column windows (no NaN, so no exact path).
template <typename T>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void max_plane_8bit(const MaxPoolShape& p, const Geometry& g, const T* plane, T* out_plane, T* col) {
  const int64_t W = p.W;
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t r0 = g.rows[oh].lo, r1 = g.rows[oh].hi;
    const T* a = plane + r0 * W;
    for (int64_t w = 0; w < W; ++w) col[w] = a[w];
    for (int64_t r = r0 + 1; r < r1; ++r) {
      const T* src = plane + r * W;
      for (int64_t w = 0; w < W; ++w) col[w] = std::max(col[w], src[w]);
    }
    T* dst = out_plane + oh * p.OW;
    for (int64_t o = 0; o < p.OW; ++o) {
      const Span c = g.cols[o];
      T m = col[c.lo];
      for (int64_t j = c.lo + 1; j < c.hi; ++j) m = std::max(m, col[j]);
      dst[o] = m;
    }
  }
}

template <typename T>
void run_8bit(const MaxPoolShape& p, const Geometry& g, const Tensor& x, Tensor& out) {
  const T* xs = x.data<T>();
  T* y = out.mutable_data<T>();
  parallel_for(p.planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.H * p.W)), [&](int64_t c0, int64_t c1) {
    std::vector<T> col(static_cast<size_t>(p.W));
    for (int64_t c = c0; c < c1; ++c) max_plane_8bit<T>(p, g, xs + c * p.H * p.W, y + c * p.OH * p.OW, col.data());
  });
}

void Run(KernelContext& ctx) {
  MaxPoolShape p;
  if (!max_pool_of(ctx, p)) ctx.fail("problem not supported by the CPU MaxPool kernel");
  const Tensor& xt = ctx.input(0);
  const DataType type = xt.dtype();
  Tensor& out = uninitialized_output(ctx, 0, type, p.y);
  if (out.element_count() == 0) return;
  const Geometry g = geometry_of(p);
  if (type != DataType::Float) {
    if (!every_window_has_taps(g)) ctx.fail("an 8-bit MaxPool window lies wholly in the padding");
    if (type == DataType::Uint8) run_8bit<uint8_t>(p, g, xt, out);
    else run_8bit<int8_t>(p, g, xt, out);
    return;
  }
  const float* x = xt.data<float>();
  float* y = out.mutable_data<float>();
  static const Rows3 rows3 = ONNXSCOPE_CPU_AVX512("avx512f") ? rows3_avx512 : rows3_plain;
  parallel_for(p.planes, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> col(static_cast<size_t>(p.W));
    for (int64_t c = c0; c < c1; ++c) max_plane(p, g, x + c * p.H * p.W, y + c * p.OH * p.OW, col.data(), rows3);
  });
}

// --- NhwcMaxPool: 8-bit, channels last -------------------------------------------

bool nhwc_accepts(const KernelContext& ctx) {
  MaxPoolShape p;
  return max_pool_of(ctx, p, true) && every_window_has_taps(geometry_of(p));
}

// Output rows [r0, r1) of the N * OH ones: each pixel the maximum of its
// window's pixels, C channels side by side (a vector of C at a time).
template <typename T>
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")  // (GCC 12 takes no avx512bw clone)
void nhwc_rows(const MaxPoolShape& p, const Geometry& g, int64_t C, const T* x, T* y, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / p.OH, oh = r % p.OH;
    const Span rows = g.rows[oh];
    const T* image = x + n * p.H * p.W * C;
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      const Span cols = g.cols[ow];
      T* dst = y + (r * p.OW + ow) * C;
      const T* first = image + (rows.lo * p.W + cols.lo) * C;
      for (int64_t c = 0; c < C; ++c) dst[c] = first[c];
      for (int64_t ih = rows.lo; ih < rows.hi; ++ih)
        for (int64_t iw = ih == rows.lo ? cols.lo + 1 : cols.lo; iw < cols.hi; ++iw) {
          const T* src = image + (ih * p.W + iw) * C;
          for (int64_t c = 0; c < C; ++c) dst[c] = std::max(dst[c], src[c]);
        }
    }
  }
}

void NhwcMaxPool(KernelContext& ctx) {
  MaxPoolShape p;
  if (!max_pool_of(ctx, p, true)) ctx.fail("problem not supported by the channels-last MaxPool kernel");
  const Tensor& xt = ctx.input(0);
  const int64_t C = xt.shape()[3];
  Tensor& out = uninitialized_output(ctx, 0, xt.dtype(), channels_last_shape(p.y));
  if (out.element_count() == 0) return;
  const Geometry g = geometry_of(p);
  if (!every_window_has_taps(g)) ctx.fail("an 8-bit MaxPool window lies wholly in the padding");
  const int64_t rows = p.y[0] * p.OH, grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.OW * C));
  parallel_for(rows, grain, [&](int64_t r0, int64_t r1) {
    if (xt.dtype() == DataType::Uint8) nhwc_rows<uint8_t>(p, g, C, xt.data<uint8_t>(), out.mutable_data<uint8_t>(), r0, r1);
    else nhwc_rows<int8_t>(p, g, C, xt.data<int8_t>(), out.mutable_data<int8_t>(), r0, r1);
  });
}

}  // namespace

void register_max_pool_kernels(KernelRegistry& r) {
  // MaxPool-1 on; 8 added Indices and storage_order, 10 ceil_mode and dilations.
  r.add(KernelDef{"", "MaxPool", 1, INT_MAX, "cpu-simd", Run, accepts});
  r.add(KernelDef{kCpuDomain, kNhwcMaxPool, 1, INT_MAX, "cpu-simd", NhwcMaxPool, nhwc_accepts});
}

}  // namespace onnxscope::cpu
