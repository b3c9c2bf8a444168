// NhwcQLinearConv with a 1x1 window, group 1 and no padding (the pointwise
// convolutions of MobileNets, EfficientNets and ResNet bottlenecks): on a
// channels-last image it is a product of the [pixels, C] uint8/int8 rows by
// the [C, M] int8 weights, here in AVX-512 VNNI (vpdpbusd: four u8 x s8
// products into each int32 lane) with the requantization done on each tile
// while it is in cache. oneDNN's int8 convolution wrote the int32 sums to
// memory and the requantization read them back: 4.8 MB for MobileNetV2's
// 16 -> 96 layer at 112x112, 0.44 ms in oneDNN alone.
//
// The sums are exact in int32 as the reference's int64 ones (no term past
// 255 * 128, at most 33,000 terms, as conv_integer.cpp takes). Signed input
// bytes are read as x + 128 (the sign bit flipped) and the weights' column
// sums take the 128 and the input's zero point away:
//   sum (x - zx) w = sum x' w - (zx + 128 [int8 x]) * sum w.
// Then each sum is requantized as the reference does (requantize.h), so Y is
// the reference's bit for bit.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // a product rounds before the rounding's add (requantize_avx512.h)
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <type_traits>
#include <climits>  // INT_MAX
#include <cstring>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/param_values.h"
#include "cpu/kernels/quantization/qlinear_conv_params.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/requantize_avx512.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

constexpr int64_t kRows = 6;       // pixels per register tile
constexpr int64_t kPanels = 4;     // 16-channel weight panels per register tile (64 output channels)
constexpr int64_t kMaxTerms = 33000;  // int32 sums stay exact

bool have_avx512_vnni() {
  static const bool yes = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  return yes;
}

int64_t int8_at(const Tensor& t, uint64_t i) {
  return t.dtype() == DataType::Int8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

// The weights minus their zero points, packed for vpdpbusd: panel p (output
// channels 16p..16p+15) holds, for each group of four input channels, 16
// lanes of four int8 (zeros past C and past M); and each channel's sum.
struct Packed {
  const void* source = nullptr;
  const void* zp_source = nullptr;
  bool fits = false;
  int64_t M = 0, C = 0, K4 = 0;
  std::vector<int8_t> panels;  // [ceil(M/16)][K4][16][4]
  std::vector<int64_t> column_sums;
};

bool pack(const Tensor& w, const Tensor* wz, Packed& p) {
  p.M = w.shape()[0];
  p.C = w.shape()[1];
  p.K4 = (p.C + 3) / 4;
  const int64_t P = (p.M + 15) / 16;
  p.panels.assign(static_cast<size_t>(P * p.K4 * 64), 0);
  p.column_sums.assign(static_cast<size_t>(p.M), 0);
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t c = 0; c < p.C; ++c) {
      const int64_t z = wz ? int8_at(*wz, wz->element_count() == 1 ? 0 : static_cast<uint64_t>(m)) : 0;
      const int64_t v = int8_at(w, static_cast<uint64_t>(m * p.C + c)) - z;
      if (v < -128 || v > 127) return false;
      p.panels[static_cast<size_t>(((m / 16 * p.K4 + c / 4) * 16 + m % 16) * 4 + c % 4)] = static_cast<int8_t>(v);
      p.column_sums[static_cast<size_t>(m)] += v;
    }
  return true;
}

// The node's packed weights, made again when the initializer changes.
const Packed* packed_of(const KernelContext& ctx, Packed& local) {
  Packed* p = node_state<Packed>(ctx);
  if (!p) p = &local;
  const Tensor& w = ctx.input(3);
  const Value* zv = ctx.input_count() > 5 ? ctx.input_value(5) : nullptr;
  const void* zsrc = zv ? zv->tensor().raw() : nullptr;
  if (p->source == w.raw() && p->zp_source == zsrc && p->source) return p;
  p->source = w.raw();
  p->zp_source = zsrc;
  p->fits = pack(w, zv ? &zv->tensor() : nullptr, *p);
  return p;
}

// The problem, when it is this kernel's: X [N, D..., C] 8-bit, W [M, C, 1...]
// an 8-bit initializer, group 1, no padding; strides any (a strided 1x1
// reads every s-th pixel). Output dims in `out`.
bool problem_of(const KernelContext& ctx, std::vector<int64_t>& out, std::vector<int64_t>& strides) {
  if (!have_avx512_vnni() || !qlinear_conv_params_ok(ctx)) return false;
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(3);
  if (!xv || !xv->is_tensor() || !wv || !wv->is_tensor() || !onednn::is_initializer(ctx, 3)) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  auto int8 = [](DataType t) { return t == DataType::Uint8 || t == DataType::Int8; };
  if (!int8(x.dtype()) || !int8(w.dtype()) || x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank()) return false;
  if (ctx.attr_int("group", 1) != 1 || w.shape()[1] != x.shape().back() || w.shape()[1] > kMaxTerms) return false;
  for (size_t d = 2; d < w.shape().size(); ++d)
    if (w.shape()[d] != 1) return false;
  if (x.element_count() == 0 || w.element_count() == 0) return false;
  if (const Value* z = ctx.input_value(2))  // the input's zero point: a scalar of its type
    if (!z->is_tensor() || z->tensor().dtype() != x.dtype() || z->tensor().element_count() != 1) return false;
  if (ctx.input_count() > 5)
    if (const Value* z = ctx.input_value(5)) {
      const Tensor& t = z->tensor();
      if (!z->is_tensor() || t.dtype() != w.dtype() || !onednn::is_initializer(ctx, 5)) return false;
      if (!(t.element_count() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.shape()[0] == w.shape()[0])) return false;
    }
  const Shape& xs = x.shape();
  ref::nn::Window win;
  try {
    win = ref::nn::resolve_window(ctx, std::vector<int64_t>(xs.begin() + 1, xs.end() - 1),
                                  std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), false);
  } catch (const std::exception&) {
    return false;
  }
  for (size_t d = 0; d < win.out.size(); ++d)
    if (win.pad_begin[d] != 0 || win.pad_end[d] != 0 || win.out[d] <= 0) return false;
  out = win.out;
  strides = win.strides;
  return true;
}

// What a register tile needs besides its rows: the packed weights of its
// panels, and per output channel (padded to whole panels) the sums' start
// (minus the offset of x' against x - zx), the bias and the multiplier.
struct TileArgs {
  const int8_t* panels = nullptr;  // the tile's first panel
  int64_t panel_bytes = 0, C = 0, K4 = 0;
  uint32_t flip = 0;
  const int32_t* start = nullptr;  // from the tile's first column on
  const double* bias = nullptr;
  const double* mult = nullptr;
  double zp = 0;
  int64_t ldo = 0;    // elements between output rows
  int last_lanes = 16;  // columns of the last panel that exist
};

// Output rows [p, p + R) by panels [0, J) of the tile: the sums of the rows
// a[r] (C bytes each) by the panels, in registers (R * J <= 24 of the 32
// zmm), then each requantized there and stored to out + r * ldo as T
// (uint8 / int8), or, for T = int32_t, stored as the sums themselves.
// The step is written out in the loop: through a helper taking the
// accumulators by reference GCC kept them on the stack.
template <int R, int J, typename T>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void tile(const uint8_t* const* a, T* out,
                                                                         const TileArgs& t) {
  __m512i acc[R][J];
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const __m512i s = _mm512_loadu_si512(t.start + 16 * j);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][j] = s;
  }
  const int64_t whole = t.C / 4;
  const uint8_t* row[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) row[r] = a[r];
  for (int64_t k = 0; k < t.K4; ++k) {
    __m512i b[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) b[j] = _mm512_loadu_si512(t.panels + j * t.panel_bytes + k * 64);
    const size_t bytes = k < whole ? 4 : static_cast<size_t>(t.C - 4 * whole);  // the last 1-3 channels: zeros in the panels past C
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      uint32_t four = 0;
      if (bytes == 4) four = *reinterpret_cast<const uint32_t __attribute__((aligned(1), may_alias))*>(row[r] + 4 * k);
      else std::memcpy(&four, row[r] + 4 * k, bytes);
      const __m512i x = _mm512_set1_epi32(static_cast<int>(four ^ t.flip));
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], x, b[j]);
    }
  }
  const __mmask16 last = static_cast<__mmask16>((1u << t.last_lanes) - 1u);
  if constexpr (std::is_same_v<T, int32_t>) {
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) _mm512_mask_storeu_epi32(out + r * t.ldo + 16 * j, j + 1 < J ? 0xffff : last, acc[r][j]);
  } else {
    const __m512d zp = _mm512_set1_pd(t.zp);
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      const __m512d b0 = _mm512_loadu_pd(t.bias + 16 * j), b1 = _mm512_loadu_pd(t.bias + 16 * j + 8);
      const __m512d m0 = _mm512_loadu_pd(t.mult + 16 * j), m1 = _mm512_loadu_pd(t.mult + 16 * j + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m512d lo = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(acc[r][j])), b0);
        const __m512d hi = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc[r][j], 1)), b1);
        const __m128i v = narrow16<T>(round8_bounded<T>(_mm512_mul_pd(lo, m0), zp), round8_bounded<T>(_mm512_mul_pd(hi, m1), zp));
        _mm_mask_storeu_epi8(out + r * t.ldo + 16 * j, j + 1 < J ? 0xffff : last, v);
      }
    }
  }
}

template <typename T>
using TileFn = void (*)(const uint8_t* const*, T*, const TileArgs&);

template <int R, typename T>
TileFn<T> tile_for(int64_t panels) {
  switch (panels) {
    case 1: return tile<R, 1, T>;
    case 2: return tile<R, 2, T>;
    case 3: return tile<R, 3, T>;
    default: return tile<R, 4, T>;
  }
}

template <typename T>
TileFn<T> tile_for(int64_t rows, int64_t panels) {
  switch (rows) {
    case 1: return tile_for<1, T>(panels);
    case 2: return tile_for<2, T>(panels);
    case 3: return tile_for<3, T>(panels);
    case 4: return tile_for<4, T>(panels);
    case 5: return tile_for<5, T>(panels);
    default: return tile_for<6, T>(panels);
  }
}

bool accepts(const KernelContext& ctx) {
  return safely([&] {
    std::vector<int64_t> out, strides;
    if (!problem_of(ctx, out, strides)) return false;
    Packed local;
    return packed_of(ctx, local)->fits;
  });
}

void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::vector<int64_t> out, strides;
    if (!problem_of(ctx, out, strides)) ctx.fail("problem not supported by the 1x1 int8 kernel");
    Packed local;
    const Packed& pk = *packed_of(ctx, local);
    if (!pk.fits) ctx.fail("the weights minus their zero points do not fit int8");
    const Tensor& x = ctx.input(0);
    const Shape& xs = x.shape();
    const int64_t N = xs[0], C = pk.C, M = pk.M;
    Shape ys{N};
    ys.insert(ys.end(), out.begin(), out.end());
    ys.push_back(M);
    const Tensor& yz = ctx.input(7);
    const bool u8 = yz.dtype() == DataType::Uint8;
    Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), ys);
    const int64_t P = (M + 15) / 16, padded = P * 16;
    // Per output channel, padded to whole panels: the multiplier, the bias,
    // and the sums' start: each sum over x' = x (+ 128) carries
    // (zx + 128) * sum(w) more than the exact one, taken away in int32
    // arithmetic (it wraps, the result fits).
    std::vector<double> mult = qlinear_conv_multipliers(ctx, M);
    const bool bounded = std::all_of(mult.begin(), mult.end(), bounded_multiplier);  // else the checked requantization
    mult.resize(static_cast<size_t>(padded), 0.0);
    const int32_t* bias = ctx.input_count() > 8 && ctx.input_value(8) ? ctx.input(8).data<int32_t>() : nullptr;
    std::vector<double> bias_d(static_cast<size_t>(padded), 0.0);
    const bool x_signed = x.dtype() == DataType::Int8;
    const int64_t zx = ctx.input_value(2) ? int8_at(ctx.input(2), 0) : 0;
    std::vector<int32_t> start(static_cast<size_t>(padded), 0);
    for (int64_t m = 0; m < M; ++m) {
      if (bias) bias_d[static_cast<size_t>(m)] = bias[m];
      const int64_t offset = (zx + (x_signed ? 128 : 0)) * pk.column_sums[static_cast<size_t>(m)];
      start[static_cast<size_t>(m)] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(-offset)));
    }

    // Pixels of the output (all images) and the input pixel each reads.
    int64_t pixels = N, in_pixels = 1;
    for (int64_t o : out) pixels *= o;
    for (size_t d = 1; d + 1 < xs.size(); ++d) in_pixels *= xs[d];
    const bool dense = std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 1; });
    const std::function<int64_t(int64_t)> row_of = [&](int64_t p) -> int64_t {
      if (dense) return p;
      int64_t rest = p, index = 0, scale = 1;
      for (size_t d = out.size(); d-- > 0;) {
        index += rest % out[d] * strides[d] * scale;
        rest /= out[d];
        scale *= xs[d + 1];
      }
      return rest * in_pixels + index;  // rest: the image
    };
    const uint8_t* xb = reinterpret_cast<const uint8_t*>(x.raw());
    std::byte* yb = y.mutable_raw();
    // Work items: a run of pixels by a block of 64 channels, enough of them
    // for the threads (a 7x7 map with 1280 channels is one run of pixels).
    // Panels shared evenly between the blocks (144 channels: 3 + 3 + 3 panels,
    // not 4 + 4 + 1, whose one-panel tiles broadcast six rows for four products).
    const int64_t column_blocks = (P + kPanels - 1) / kPanels, per_block = (P + column_blocks - 1) / column_blocks;
    const int64_t macs_per_pixel = C * std::min<int64_t>(M, per_block * 16);
    const int64_t run = std::clamp<int64_t>((int64_t{1} << 16) / std::max<int64_t>(macs_per_pixel, 1) / kRows * kRows, kRows, 240);
    const int64_t runs = (pixels + run - 1) / run;
    parallel_for(runs * column_blocks, 1, [&](int64_t i0, int64_t i1) {
      alignas(64) int32_t sums[kRows * 64];
      for (int64_t item = i0; item < i1; ++item) {
        // Column block outer: its panels (up to 64 channels by C) stay in L1
        // while the thread's runs of pixels stream past.
        const int64_t r0 = item % runs * run, r1 = std::min(pixels, r0 + run);
        const int64_t panel0 = item / runs * per_block, panels = std::min(per_block, P - panel0);
        const int64_t m0 = panel0 * 16, m1 = std::min(M, m0 + panels * 16);
        TileArgs t;
        t.panels = pk.panels.data() + panel0 * pk.K4 * 64;
        t.panel_bytes = pk.K4 * 64;
        t.C = C;
        t.K4 = pk.K4;
        t.flip = x_signed ? 0x80808080u : 0u;
        t.start = start.data() + m0;
        t.bias = bias_d.data() + m0;
        t.mult = mult.data() + m0;
        t.zp = static_cast<double>(int8_at(yz, 0));
        t.last_lanes = static_cast<int>(m1 - (m0 + (panels - 1) * 16));
        const uint8_t* rows[kRows];
        for (int64_t p = r0; p < r1; p += kRows) {
          const int64_t R = std::min(kRows, r1 - p);
          for (int64_t r = 0; r < R; ++r) rows[r] = xb + row_of(p + r) * C;
          if (!bounded) {  // the sums, then the reference's requantization of each
            t.ldo = 64;
            tile_for<int32_t>(R, panels)(rows, sums, t);
            requantize_channels_last(sums, 64, R, m1 - m0, bias ? bias + m0 : nullptr, mult.data() + m0, t.zp, u8,
                                     yb + p * M + m0, M);
            continue;
          }
          t.ldo = M;
          if (u8) tile_for<uint8_t>(R, panels)(rows, reinterpret_cast<uint8_t*>(yb) + p * M + m0, t);
          else tile_for<int8_t>(R, panels)(rows, reinterpret_cast<int8_t*>(yb) + p * M + m0, t);
        }
      }
    });
  });
}

}  // namespace

void register_qlinear_conv_1x1_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kNhwcQLinearConv, 1, INT_MAX, "cpu-int8", Run, accepts});
}

}  // namespace onnxscope::cpu
