// AveragePool over the plain NCHW layout, float32, 2-D windows without
// dilation: the window sum is separable, so each plane is summed along its
// rows first (every input row, one value per output column), then down the
// columns (contiguous rows of partial sums, which vectorise), and divided by
// the reference's count: the taps inside X, or with count_include_pad those
// inside X and its declared padding (not the extra ones ceil_mode adds). A
// window wholly in the padding gives 0 / 0 = NaN, or 0, as the reference's.
// oneDNN's pooling on the plain layout ran at 0.44x onnxruntime; on the
// blocked layout (inside a convolutional network) oneDNN's still runs.
#include <algorithm>
#include <vector>

#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

struct AvgPool : PlaneWindow {
  int64_t sh = 1, sw = 1;
  bool include_pad = false;
  Shape y;
};

bool avg_pool_of(const KernelContext& ctx, AvgPool& p) {
  if (ctx.input_count() != 1 || ctx.output_count() != 1) return false;
  const Value* v = ctx.input_value(0);
  if (!v || !v->is_tensor() || v->tensor().dtype() != DataType::Float || v->tensor().rank() != 4) return false;
  const Shape& x = v->tensor().shape();
  const std::optional<ref::nn::Window> win = pool_window_2d(ctx, x[2], x[3]);
  if (!win) return false;
  const ref::nn::Window& w = *win;
  p.set(x, w, w.kernel[0], w.kernel[1]);
  p.sh = w.strides[0];
  p.sw = w.strides[1];
  p.include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  p.y = {x[0], x[1], p.OH, p.OW};
  return true;
}

bool accepts(const KernelContext& ctx) {
  AvgPool p;
  return avg_pool_of(ctx, p);
}

// The columns' and rows' windows and divisors, shared by every plane.
struct Geometry {
  std::vector<Span> cols, rows;
  std::vector<float> col_count, row_count;
  std::vector<float> inv;  // OH x OW: 1 / (row count * column count)
  int64_t in_lo = 0, in_hi = 0;  // output columns whose window lies inside X (unit stride only)
};

// One plane, built for AVX-512, AVX2 and the baseline (the engine is built
// for the baseline: 4-wide vectors). part: H x OW floats, acc: OW floats.
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void avg_plane(const AvgPool& p, const Geometry& g, const float* plane, float* out_plane, float* part, float* acc) {
  // Along the rows: part[h][o] = sum of row h over column window o.
  for (int64_t h = 0; h < p.H; ++h) {
    const float* row = plane + h * p.W;
    float* dst = part + h * p.OW;
    for (int64_t o = 0; o < p.OW; ++o) {
      if (o == g.in_lo && g.in_hi > g.in_lo) {
        // The unit-stride run: one pass per kernel column, contiguous.
        const float* src = row + g.in_lo - p.pl;
        const int64_t n = g.in_hi - g.in_lo;
        float* d = dst + g.in_lo;
        // One pass for the common widths; wider windows add column by column.
        if (p.kw == 2) {
          for (int64_t i = 0; i < n; ++i) d[i] = src[i] + src[i + 1];
        } else if (p.kw == 3) {
          for (int64_t i = 0; i < n; ++i) d[i] = src[i] + src[i + 1] + src[i + 2];
        } else {
          for (int64_t i = 0; i < n; ++i) d[i] = src[i];
          for (int64_t j = 1; j < p.kw; ++j)
            for (int64_t i = 0; i < n; ++i) d[i] += src[i + j];
        }
        o = g.in_hi - 1;
        continue;
      }
      float s = 0;
      for (int64_t j = g.cols[o].lo; j < g.cols[o].hi; ++j) s += row[j];
      dst[o] = s;
    }
  }
  // Down the columns, then the division (a product with the count's inverse:
// within an ulp of the quotient, at a fraction of a division's time).
  for (int64_t oh = 0; oh < p.OH; ++oh) {
    const int64_t r0 = g.rows[oh].lo, r1 = g.rows[oh].hi;
    const float* inv = g.inv.data() + oh * p.OW;
    float* dst = out_plane + oh * p.OW;
    const float* a = part + std::min(r0, p.H - 1) * p.OW;  // read only when r0 < r1 <= H
    const float* b = r1 - r0 >= 2 ? a + p.OW : a;
    const float* c = r1 - r0 >= 3 ? b + p.OW : b;
    // One pass for up to three rows; more rows gather in acc first.
    switch (r1 - r0) {
      case 0:
        for (int64_t o = 0; o < p.OW; ++o) dst[o] = 0.0f * inv[o];
        break;
      case 1:
        for (int64_t o = 0; o < p.OW; ++o) dst[o] = a[o] * inv[o];
        break;
      case 2:
        for (int64_t o = 0; o < p.OW; ++o) dst[o] = (a[o] + b[o]) * inv[o];
        break;
      case 3:
        for (int64_t o = 0; o < p.OW; ++o) dst[o] = (a[o] + b[o] + c[o]) * inv[o];
        break;
      default: {
        for (int64_t o = 0; o < p.OW; ++o) acc[o] = a[o];
        for (int64_t r = r0 + 1; r < r1; ++r) {
          const float* src = part + r * p.OW;
          for (int64_t o = 0; o < p.OW; ++o) acc[o] += src[o];
        }
        for (int64_t o = 0; o < p.OW; ++o) dst[o] = acc[o] * inv[o];
      }
    }
  }
}

void Run(KernelContext& ctx) {
  AvgPool p;
  if (!avg_pool_of(ctx, p)) ctx.fail("problem not supported by the CPU AveragePool kernel");
  const float* x = ctx.input(0).data<float>();
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, p.y);
  float* y = out.mutable_data<float>();
  if (out.element_count() == 0) return;
  // Per output column and row: the taps inside X, and the count that divides.
  Geometry g;
  g.cols.resize(static_cast<size_t>(p.OW));
  g.rows.resize(static_cast<size_t>(p.OH));
  g.col_count.resize(static_cast<size_t>(p.OW));
  g.row_count.resize(static_cast<size_t>(p.OH));
  for (int64_t o = 0; o < p.OW; ++o) {
    g.cols[o] = window_span(o, p.sw, p.pl, p.kw, 0, p.W);
    const Span c = p.include_pad ? window_span(o, p.sw, p.pl, p.kw, -p.pl, p.W + p.pr) : g.cols[o];
    g.col_count[o] = static_cast<float>(c.hi - c.lo);
  }
  for (int64_t o = 0; o < p.OH; ++o) {
    g.rows[o] = window_span(o, p.sh, p.pt, p.kh, 0, p.H);
    const Span r = p.include_pad ? window_span(o, p.sh, p.pt, p.kh, -p.pt, p.H + p.pb) : g.rows[o];
    g.row_count[o] = static_cast<float>(r.hi - r.lo);
  }
  // 1 / 0 is inf: a window wholly in the padding gives 0 * inf = NaN, as the reference's 0 / 0.
  g.inv.resize(static_cast<size_t>(p.OH * p.OW));
  for (int64_t oh = 0; oh < p.OH; ++oh)
    for (int64_t o = 0; o < p.OW; ++o) g.inv[oh * p.OW + o] = 1.0f / (g.row_count[oh] * g.col_count[o]);
  if (p.sw == 1) {
    g.in_lo = std::min(p.OW, std::max<int64_t>(0, p.pl));
    g.in_hi = std::max(g.in_lo, std::min(p.OW, p.W - p.kw + p.pl + 1));
  }
  parallel_for(p.planes, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> part(static_cast<size_t>(p.H * p.OW)), acc(static_cast<size_t>(p.OW));
    for (int64_t c = c0; c < c1; ++c)
      avg_plane(p, g, x + c * p.H * p.W, y + c * p.OH * p.OW, part.data(), acc.data());
  });
}

}  // namespace

void register_average_pool_kernels(KernelRegistry& r) {
  // AveragePool-7 on (count_include_pad); 10 added ceil_mode, 19 dilations.
  r.add(KernelDef{"", "AveragePool", 7, INT_MAX, "cpu-simd", Run, accepts});
}

}  // namespace onnxscope::cpu
