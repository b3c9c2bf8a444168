// NchwcPool's windowed poolings (MaxPool, AveragePool) on the blocked layout
// (cpu/nchwc.h): [N, C/b, H, W, b] -> [N, C/b, OH, OW, b], 2-D, without
// dilation. The b channels of a pixel are one vector, so an output pixel is
// one vector accumulator run over the window's pixels: no shuffles, and no
// layout of its own. oneDNN's blocked pooling took 0.33 ms for ResNet's stem
// pool ([1,64,112,112] 3x3 s2) at one thread on an AMD EPYC, several times
// what the pool reads costs.
// MaxPool as the reference's: NaN taps skipped, ties keep the first tap in
// row-major order (the chain is one vmaxps per tap, exact unless the first
// tap is NaN; a lane that ends NaN is walked again with NaN skipped).
// AveragePool sums in float and multiplies by the count's inverse (within
// the harness's tolerance of the reference's double). AVX-512 for blocks of
// 16, AVX2 for blocks of 8 (a CPU without declines: oneDNN's runs). Windows lying wholly
// in the padding are declined (the reference gives NaN there; oneDNN
// declines them too). Padding channels are zeros in, so zeros out.
// GCC 12's avx512fintrin.h trips its own -Wmaybe-uninitialized in _mm512_set1_ps.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/common.h"
#include "cpu/kernels/output.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

struct BlockedPool {
  bool max = true, include_pad = false;
  int64_t N = 0, CB = 0, H = 0, W = 0, OH = 0, OW = 0, block = 16;
  std::vector<Span> rows, cols;  // each output row's / column's taps inside X
  std::vector<float> row_count, col_count;  // the counts AveragePool divides by
};

bool problem(const KernelContext& ctx, BlockedPool& p) {
  if (ctx.input_count() != 1 || ctx.output_count() != 1) return false;
  const Value* v = ctx.input_value(0);
  if (!v || !v->is_tensor()) return false;
  const Tensor& x = v->tensor();
  const std::string op = ctx.attr_string("op", "");
  if (op != "MaxPool" && op != "AveragePool") return false;
  const int64_t block = ctx.attr_int("block", 0), channels = ctx.attr_int("channels", 0);
  if (x.dtype() != DataType::Float || (block != 8 && block != 16) || x.rank() != 5 || x.shape()[4] != block ||
      x.element_count() == 0 || !blocks_hold(channels, x.shape()[1], block))
    return false;
  if (op == "MaxPool" && ctx.attr_int("storage_order", 0) != 0 && ctx.attr_int("storage_order", 0) != 1) return false;
  const Shape& s = x.shape();
  const std::optional<ref::nn::Window> win = pool_window_2d(ctx, s[2], s[3]);
  if (!win) return false;
  const ref::nn::Window& w = *win;
  p.max = op == "MaxPool";
  p.include_pad = !p.max && ctx.attr_int("count_include_pad", 0) != 0;
  p.N = s[0];
  p.CB = s[1];
  p.H = s[2];
  p.W = s[3];
  p.block = block;
  p.OH = w.out[0];
  p.OW = w.out[1];
  p.rows.resize(static_cast<size_t>(p.OH));
  p.cols.resize(static_cast<size_t>(p.OW));
  p.row_count.resize(static_cast<size_t>(p.OH));
  p.col_count.resize(static_cast<size_t>(p.OW));
  for (int64_t o = 0; o < p.OH; ++o) {
    p.rows[o] = window_span(o, w.strides[0], w.pad_begin[0], w.kernel[0], 0, p.H);
    if (p.rows[o].lo >= p.rows[o].hi) return false;  // wholly in the padding
    const Span c = p.include_pad ? window_span(o, w.strides[0], w.pad_begin[0], w.kernel[0], -w.pad_begin[0],
                                                p.H + w.pad_end[0])
                                 : p.rows[o];
    p.row_count[o] = static_cast<float>(c.hi - c.lo);
  }
  for (int64_t o = 0; o < p.OW; ++o) {
    p.cols[o] = window_span(o, w.strides[1], w.pad_begin[1], w.kernel[1], 0, p.W);
    if (p.cols[o].lo >= p.cols[o].hi) return false;
    const Span c = p.include_pad ? window_span(o, w.strides[1], w.pad_begin[1], w.kernel[1], -w.pad_begin[1],
                                                p.W + w.pad_end[1])
                                 : p.cols[o];
    p.col_count[o] = static_cast<float>(c.hi - c.lo);
  }
  return true;
}

bool accepts(const KernelContext& ctx) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f"), avx2 = __builtin_cpu_supports("avx2");
  BlockedPool p;
  return problem(ctx, p) && (p.block == 16 ? avx512 : avx2);
}

// A lane that ended NaN after the vmaxps chain (its first tap NaN): walked
// again with NaN taps skipped, ties keeping the first.
float exact_max_lane(const BlockedPool& p, const float* x, Span r, Span c, int64_t B, int64_t l) {
  float m = NAN;
  for (int64_t i = r.lo; i < r.hi; ++i)
    for (int64_t j = c.lo; j < c.hi; ++j) {
      const float t = x[(i * p.W + j) * B + l];
      m = m != m || t > m ? t : m;
    }
  return m;
}

// One output row of one block (OW pixels of B lanes) from its image plane x
// (H x W pixels of B lanes), one vector per pixel. VMAX(t, acc) must be
// x86's max (t > acc ? t : acc); NANMASK gives the lanes that are NaN.
#define ONNXSCOPE_BLOCKED_WINDOW_POOL(NAME, TARGET, B, V, LOAD, STORE, MAX, ADD, MUL, SET1, NANMASK)            \
  __attribute__((target(TARGET))) void NAME(const BlockedPool& p, const float* x, int64_t oh, float* y) {         \
    const Span r = p.rows[static_cast<size_t>(oh)];                                                              \
    for (int64_t ow = 0; ow < p.OW; ++ow) {                                                                      \
      const Span c = p.cols[static_cast<size_t>(ow)];                                                            \
      V acc = LOAD(x + (r.lo * p.W + c.lo) * B);                                                                 \
      if (p.max) {                                                                                               \
        for (int64_t i = r.lo; i < r.hi; ++i)                                                                    \
          for (int64_t j = i == r.lo ? c.lo + 1 : c.lo; j < c.hi; ++j) acc = MAX(LOAD(x + (i * p.W + j) * B), acc); \
        if (unsigned nan = NANMASK(acc)) {                                                                       \
          alignas(64) float lanes[B];                                                                            \
          STORE(lanes, acc);                                                                                     \
          for (int64_t l = 0; l < B; ++l)                                                                        \
            if (nan >> l & 1u) lanes[l] = exact_max_lane(p, x, r, c, B, l);                                      \
          acc = LOAD(lanes);                                                                                     \
        }                                                                                                        \
      } else {                                                                                                   \
        for (int64_t i = r.lo; i < r.hi; ++i)                                                                    \
          for (int64_t j = i == r.lo ? c.lo + 1 : c.lo; j < c.hi; ++j) acc = ADD(acc, LOAD(x + (i * p.W + j) * B)); \
        acc = MUL(acc, SET1(1.0f / (p.row_count[static_cast<size_t>(oh)] * p.col_count[static_cast<size_t>(ow)]))); \
      }                                                                                                          \
      STORE(y + ow * B, acc);                                                                                    \
    }                                                                                                            \
  }
#define ONNXSCOPE_NAN16(v) static_cast<unsigned>(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q))
#define ONNXSCOPE_NAN8(v) static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
ONNXSCOPE_BLOCKED_WINDOW_POOL(pool_row16, "avx512f", 16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_max_ps,
                              _mm512_add_ps, _mm512_mul_ps, _mm512_set1_ps, ONNXSCOPE_NAN16)
ONNXSCOPE_BLOCKED_WINDOW_POOL(pool_row8, "avx2", 8, __m256, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_max_ps,
                              _mm256_add_ps, _mm256_mul_ps, _mm256_set1_ps, ONNXSCOPE_NAN8)
#undef ONNXSCOPE_BLOCKED_WINDOW_POOL
#undef ONNXSCOPE_NAN16
#undef ONNXSCOPE_NAN8

void Run(KernelContext& ctx) {
  BlockedPool p;
  if (!problem(ctx, p)) ctx.fail("problem not supported by the CPU blocked pooling");
  const float* x = ctx.input(0).data<float>();
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, Shape{p.N, p.CB, p.OH, p.OW, p.block});
  float* y = out.mutable_data<float>();
  auto* fn = p.block == 16 ? pool_row16 : pool_row8;  // accepts() checked the CPU has the block's ISA
  const int64_t plane = p.H * p.W * p.block, row = p.OW * p.block;
  // Output rows of every block and image, a few per task.
  const int64_t rows = p.N * p.CB * p.OH;
  parallel_for(rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, row)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t image_block = r / p.OH, oh = r % p.OH;
      fn(p, x + image_block * plane, oh, y + r * row);
    }
  });
}

}  // namespace

void register_pool_nchwc_kernels(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcPool, 1, INT_MAX, "cpu-simd", Run, accepts});
}

}  // namespace onnxscope::cpu
