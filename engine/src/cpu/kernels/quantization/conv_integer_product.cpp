// ConvInteger and QLinearConv on the 8-bit product of vnni_gemm.h, for CPUs
// where oneDNN's int8 convolution (conv_integer.cpp) cannot be used: without
// VNNI its u8 x s8 path saturates 16-bit pair sums, and the product's AVX2
// registers (int8_gemm_avx2.cpp) are exact. 1-D to 3-D, groups, strides,
// dilations, pads, auto_pad; bit for bit the reference's.
//
// Per image and group: X channels last, each output pixel's window gathered
// into one row of (kernel position, channel) bytes (padding holds X's zero
// point, so it adds nothing), the rows by the weights minus their zero points
// (packed once for the node), the sums requantized (QLinearConv) or kept
// (ConvInteger) in registers, then the channels-last result written into Y's
// NCHW planes. A 1x1 convolution with stride 1 and no pads reads its rows
// from X channels last without a gather.
#include <emmintrin.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <climits>  // INT_MAX
#include <cstring>
#include <optional>
#include <vector>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/int8_values.h"
#include "cpu/kernels/quantization/kept_packing.h"
#include "cpu/kernels/quantization/qlinear_conv_params.h"
#include "cpu/kernels/quantization/requantize.h"
#include "cpu/kernels/quantization/vnni_gemm.h"
#include "cpu/kernels/tensor/transpose_blocks.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"
#include "reference/ops/nn/common.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;

struct Slots {
  size_t x, x_zp, w, w_zp;
};
constexpr Slots kConvInteger{0, 2, 1, 3};
constexpr Slots kQLinearConv{0, 2, 3, 5};

bool eight_bit(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

struct Problem {
  Shape x, w, y;
  int64_t group = 1, C = 0, M = 0, Cg = 0, Mg = 0;
  int64_t window = 1;  // kernel positions
  int64_t in_pixels = 1, out_pixels = 1;
  bool direct = false;  // 1x1, stride 1, no pads: the rows are X's pixels
  bool depthwise = false;  // 2-D, one channel per group: depthwise()
  ref::nn::Window win;
  std::vector<int64_t> in_stride;  // pixels between neighbours along each spatial dim of X
};

// The problem, or nullopt where it is not this kernel's (fails on attributes
// the reference would refuse too: the caller wraps it in safely()).
std::optional<Problem> problem_of(const KernelContext& ctx, Slots sl) {
  // With VNNI, oneDNN's convolution (unless a test asked for this one: vnni::set_vnni).
  if (!vnni::available() || (has_int8_vnni() && vnni::vnni_allowed())) return std::nullopt;
  const Tensor* x = input_at(ctx, sl.x);
  const Tensor* w = input_at(ctx, sl.w);
  if (!x || !w || !eight_bit(x->dtype()) || !eight_bit(w->dtype()) || !is_initializer(ctx, sl.w)) return std::nullopt;
  if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank() || x->element_count() == 0 || w->element_count() == 0)
    return std::nullopt;
  Problem p;
  p.x = x->shape();
  p.w = w->shape();
  p.group = ctx.attr_int("group", 1);
  p.C = p.x[1];
  p.M = p.w[0];
  if (p.group < 1 || p.M % p.group != 0 || p.w[1] * p.group != p.C) return std::nullopt;
  p.Cg = p.w[1];
  p.Mg = p.M / p.group;
  std::vector<int64_t> kernel(p.w.begin() + 2, p.w.end());
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != kernel) return std::nullopt;
  for (int64_t k : kernel) p.window *= k;
  if (p.window * p.Cg > vnni::kMaxK) return std::nullopt;  // int32 sums stay exact
  if (const Tensor* z = input_at(ctx, sl.x_zp); z && (z->dtype() != x->dtype() || z->element_count() != 1)) return std::nullopt;
  if (const Value* zv = ctx.input_count() > sl.w_zp ? ctx.input_value(sl.w_zp) : nullptr) {
    if (!zv->is_tensor() || zv->tensor().dtype() != w->dtype() || !is_initializer(ctx, sl.w_zp)) return std::nullopt;
    const Tensor& t = zv->tensor();
    if (!(t.element_count() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.shape()[0] == p.M)) return std::nullopt;
  }
  p.win = ref::nn::resolve_window(ctx, std::vector<int64_t>(p.x.begin() + 2, p.x.end()), kernel, false);
  for (int64_t o : p.win.out)
    if (o <= 0) return std::nullopt;
  p.y = {p.x[0], p.M};
  p.y.insert(p.y.end(), p.win.out.begin(), p.win.out.end());
  p.in_stride.assign(p.win.in.size(), 1);
  for (size_t d = p.win.in.size(); d-- > 1;) p.in_stride[d - 1] = p.in_stride[d] * p.win.in[d];
  for (size_t d = 2; d < p.x.size(); ++d) {
    p.in_pixels *= p.x[d];
    p.out_pixels *= p.y[d];
  }
  // Depthwise (one channel in, one out per group) in planes (depthwise()
  // below): as products of one column each, a QOperator MobileNet's
  // [1,144,56,56] 3x3 took 3.6x the reference's time.
  p.depthwise = p.Cg == 1 && p.Mg == 1 && p.x.size() == 4 && p.window <= 258;
  p.direct = p.window == 1;
  for (size_t d = 0; d < p.win.out.size(); ++d)
    p.direct = p.direct && p.win.strides[d] == 1 && p.win.pad_begin[d] == 0 && p.win.pad_end[d] == 0;
  return p;
}

// The weights minus their zero points, one packed B per group: row k =
// kernel position * Cg + channel, column m of the group.
struct Packed : KeptPacking {
  std::vector<vnni::PackedB> groups;
};

const Packed* packed_of(const KernelContext& ctx, const Problem& p, Slots sl, Packed& local) {
  return kept_packing(ctx, local, sl.w, sl.w_zp, [&](Packed& k) {
    const Tensor& w = ctx.input(sl.w);
    const Tensor* zw = input_at(ctx, sl.w_zp);
    k.groups.clear();
    if (p.depthwise) return true;  // any int8 weights: depthwise() sums in int32
    k.groups.assign(static_cast<size_t>(p.group), vnni::PackedB{});
    for (int64_t g = 0; g < p.group; ++g) {
      const bool fits = vnni::pack(p.window * p.Cg, p.Mg, [&](int64_t kk, int64_t m) {
        const int64_t oc = g * p.Mg + m, pos = kk / p.Cg, c = kk % p.Cg;
        const int64_t z = zw ? int8_at(*zw, zw->element_count() == 1 ? 0 : static_cast<uint64_t>(oc)) : 0;
        return int8_at(w, static_cast<uint64_t>((oc * p.Cg + c) * p.window + pos)) - z;
      }, k.groups[static_cast<size_t>(g)]);
      if (!fits) return false;
    }
    return true;
  });
}

bool accepts_with(const KernelContext& ctx, Slots sl) {
  return safely([&] {
    const std::optional<Problem> p = problem_of(ctx, sl);
    if (!p) return false;
    Packed local;
    return packed_of(ctx, *p, sl, local)->fits;
  });
}

// Output pixel o's window into `row` (window * Cg bytes) from the group's
// channels of X channels last (`xl`, C bytes per pixel), padding as `zp`.
void gather(const Problem& p, const uint8_t* xl, int64_t c0, int64_t o, uint8_t zp, uint8_t* row) {
  const size_t rank = p.win.out.size();
  int64_t at[3] = {0, 0, 0}, rest = o;
  for (size_t d = rank; d-- > 0;) {
    at[d] = rest % p.win.out[d] * p.win.strides[d] - p.win.pad_begin[d];
    rest /= p.win.out[d];
  }
  for (int64_t pos = 0; pos < p.window; ++pos) {
    int64_t r = pos, pixel = 0;
    bool inside = true;
    for (size_t d = rank; d-- > 0;) {
      const int64_t i = at[d] + r % p.win.kernel[d] * p.win.dilations[d];
      r /= p.win.kernel[d];
      inside = inside && i >= 0 && i < p.win.in[d];
      pixel += i * p.in_stride[d];
    }
    uint8_t* dst = row + pos * p.Cg;
    if (inside) std::memcpy(dst, xl + pixel * p.C + c0, static_cast<size_t>(p.Cg));
    else std::memset(dst, zp, static_cast<size_t>(p.Cg));
  }
}

// dst[c * ldd + r] = src[r * lds + c] for r < rows, c < cols (T: 1 or 4
// bytes), in 32 x 32 tiles split across the pool: each tile's lines stay in
// cache while it is read across and written down.
template <typename T>
void transpose(const T* src, int64_t rows, int64_t cols, int64_t lds, T* dst, int64_t ldd) {
  constexpr int64_t kTile = 32;
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  parallel_for(row_tiles * col_tiles, 16, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r0 = t / col_tiles * kTile, c0 = t % col_tiles * kTile;
      const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
      blocks::transpose_tile(src + r0 * lds + c0, r1 - r0, c1 - c0, lds, dst + c0 * ldd + r0, ldd);
    }
  });
}

// Y (NCHW, `esize`-byte elements) of one image and group from the product's
// channels-last rows [pixels o0.., Mg].
void scatter(const Problem& p, const std::byte* rows, int64_t o0, int64_t count, int64_t g, int64_t esize, std::byte* y) {
  std::byte* plane = y + (g * p.Mg * p.out_pixels + o0) * esize;
  if (esize == 1)
    transpose(reinterpret_cast<const uint8_t*>(rows), count, p.Mg, p.Mg, reinterpret_cast<uint8_t*>(plane), p.out_pixels);
  else
    transpose(reinterpret_cast<const int32_t*>(rows), count, p.Mg, p.Mg, reinterpret_cast<int32_t*>(plane), p.out_pixels);
}

// One plane's sums: acc[oh, ow] = sum over taps of taps[kh, kw] * plane[oh *
// sh + kh * dh, ow * sw + kw * dw] (the plane padded, PW values a row), the
// whole nest in one clone (a call per tap row was most of the time). In
// float: each product is an integer of at most 255 * 255 in magnitude, so
// sums of up to 258 of them are exact (2^24), and the FMA units take them
// (int32 multiplies ran at a third of the speed on an EPYC).
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void plane_sums(const float* __restrict plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH, int64_t KW, int64_t sh,
                int64_t sw, int64_t dh, int64_t dw, const float* __restrict taps, float* __restrict row,
                int32_t* __restrict acc) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    for (int64_t ow = 0; ow < OW; ++ow) row[ow] = 0;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        const float* src = plane + (oh * sh + kh * dh) * PW + kw * dw;
        const float w = taps[kh * KW + kw];
        if (sw == 1) {
          for (int64_t ow = 0; ow < OW; ++ow) row[ow] = std::fma(w, src[ow], row[ow]);
        } else {
          for (int64_t ow = 0; ow < OW; ++ow) row[ow] = std::fma(w, src[ow * sw], row[ow]);
        }
      }
    for (int64_t ow = 0; ow < OW; ++ow) acc[oh * OW + ow] = static_cast<int32_t>(row[ow]);
  }
}

// plane_sums for stride 1 in AVX2 registers: up to 32 outputs of a row
// held in registers across all the taps, `left` lanes of the last vector (the loop above loaded and stored
// its row once per tap: 36% of a depthwise 3x3 QLinearConv's time on the
// AVX2 path), each output's terms in the same order, so the same sums.
template <int V>
__attribute__((target("avx2,fma"), always_inline)) inline void row_chunk(const float* base, int64_t PW, int64_t KH,
                                                                       int64_t KW, int64_t dh, int64_t dw,
                                                                       const float* taps, int32_t* acc, int left) {
  __m256 s[V];
  for (int v = 0; v < V; ++v) s[v] = _mm256_setzero_ps();
  // The last vector of a row's tail: lanes past the row neither read nor stored.
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) {
      const __m256 w = _mm256_broadcast_ss(taps + kh * KW + kw);
      const float* src = base + kh * dh * PW + kw * dw;
      for (int v = 0; v < V; ++v) {
        const __m256 x = left < 8 && v == V - 1 ? _mm256_maskload_ps(src + 8 * v, tail) : _mm256_loadu_ps(src + 8 * v);
        s[v] = _mm256_fmadd_ps(w, x, s[v]);
      }
    }
  for (int v = 0; v < V; ++v) {
    const __m256i q = _mm256_cvttps_epi32(s[v]);
    if (left < 8 && v == V - 1) _mm256_maskstore_epi32(acc + 8 * v, tail, q);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 8 * v), q);
  }
}

__attribute__((target("avx2,fma"))) void plane_sums_avx2(const float* plane, int64_t PW, int64_t OH, int64_t OW, int64_t KH,
                                                        int64_t KW, int64_t sh, int64_t dh, int64_t dw, const float* taps,
                                                        int32_t* acc) {
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* base = plane + oh * sh * PW;
    int32_t* out = acc + oh * OW;
    int64_t ow = 0;
    for (; OW - ow > 32; ow += 32) row_chunk<4>(base + ow, PW, KH, KW, dh, dw, taps, out + ow, 8);
    // The rest in one chunk of up to four vectors, the last one partial
    // (a vector alone is one chain of dependent multiply-adds).
    const int64_t rest = OW - ow, vectors = (rest + 7) / 8;
    const int left = static_cast<int>(rest - 8 * (vectors - 1));
    switch (vectors) {
      case 1: row_chunk<1>(base + ow, PW, KH, KW, dh, dw, taps, out + ow, left); break;
      case 2: row_chunk<2>(base + ow, PW, KH, KW, dh, dw, taps, out + ow, left); break;
      case 3: row_chunk<3>(base + ow, PW, KH, KW, dh, dw, taps, out + ow, left); break;
      case 4: row_chunk<4>(base + ow, PW, KH, KW, dh, dw, taps, out + ow, left); break;
      default: break;
    }
  }
}

// row[v] = x[v] - zero_point for a row of uint8 or int8 bytes.
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void widen_unsigned(const uint8_t* x, int64_t n, int64_t zero_point, float* row) {
  const auto z = static_cast<int32_t>(zero_point);
  for (int64_t v = 0; v < n; ++v) row[v] = static_cast<float>(x[v] - z);
}
ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default")
void widen_signed(const uint8_t* x, int64_t n, int64_t zero_point, float* row) {
  const auto z = static_cast<int32_t>(zero_point);
  for (int64_t v = 0; v < n; ++v) row[v] = static_cast<float>(static_cast<int8_t>(x[v]) - z);
}

// A depthwise 2-D convolution plane by plane: X's plane minus its zero point
// with zeros for the padding, each output row the sum of its taps' rows
// (exact, plane_sums), then kept (ConvInteger) or requantized as the
// reference does (requantize_run).
void depthwise(KernelContext& ctx, const Problem& p, Slots sl, const double* mult, const int32_t* bias, double y_zero_point,
               DataType yt, std::byte* y) {
  const Tensor& x = ctx.input(sl.x);
  const Tensor& w = ctx.input(sl.w);
  const Tensor* zx = input_at(ctx, sl.x_zp);
  const Tensor* zw = input_at(ctx, sl.w_zp);
  const int64_t za = zx ? int8_at(*zx, 0) : 0;
  const int64_t H = p.x[2], W = p.x[3], OH = p.y[2], OW = p.y[3], KH = p.win.kernel[0], KW = p.win.kernel[1];
  const int64_t sh = p.win.strides[0], sw = p.win.strides[1], dh = p.win.dilations[0], dw = p.win.dilations[1];
  const int64_t PH = H + p.win.pad_begin[0] + p.win.pad_end[0], PW = W + p.win.pad_begin[1] + p.win.pad_end[1];
  ref::check_work_buffer(ctx, {PH, PW}, "the padded plane", 4);
  std::vector<float> taps(static_cast<size_t>(p.C * p.window));
  for (int64_t c = 0; c < p.C; ++c)
    for (int64_t t = 0; t < p.window; ++t)
      taps[static_cast<size_t>(c * p.window + t)] = static_cast<float>(
          int8_at(w, static_cast<uint64_t>(c * p.window + t)) - (zw ? int8_at(*zw, zw->element_count() == 1 ? 0 : static_cast<uint64_t>(c)) : 0));
  const bool u8 = yt == DataType::Uint8, x_signed = x.dtype() == DataType::Int8;
  const auto* xb = reinterpret_cast<const uint8_t*>(x.raw());
  parallel_for(p.x[0] * p.C, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> plane(static_cast<size_t>(PH * PW)), row(static_cast<size_t>(OW));
    std::vector<int32_t> acc(static_cast<size_t>(OH * OW));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t c = i % p.C;
      std::fill(plane.begin(), plane.end(), 0.0f);
      const uint8_t* src = xb + i * H * W;
      for (int64_t h = 0; h < H; ++h) {
        float* at = plane.data() + (h + p.win.pad_begin[0]) * PW + p.win.pad_begin[1];
        if (x_signed) widen_signed(src + h * W, W, za, at);
        else widen_unsigned(src + h * W, W, za, at);
      }
      if (sw == 1 && cpu_has_avx2_fma()) plane_sums_avx2(plane.data(), PW, OH, OW, KH, KW, sh, dh, dw, taps.data() + c * p.window, acc.data());
      else plane_sums(plane.data(), PW, OH, OW, KH, KW, sh, sw, dh, dw, taps.data() + c * p.window, row.data(), acc.data());
      if (!mult) {
        std::memcpy(y + i * OH * OW * 4, acc.data(), static_cast<size_t>(OH * OW) * 4);
        continue;
      }
      requantize_run(acc.data(), OH * OW, bias ? bias[c] : 0, mult[c], y_zero_point, u8, y + i * OH * OW, p.window);
    }
  });
}

// Y for every image: sums (ConvInteger) when mult is null, else requantized.
void convolve(KernelContext& ctx, const Problem& p, Slots sl, const Packed& pk, const double* mult, const int32_t* bias,
              double y_zero_point, DataType yt, std::byte* y) {
  if (p.depthwise) return depthwise(ctx, p, sl, mult, bias, y_zero_point, yt, y);
  const Tensor& x = ctx.input(sl.x);
  const bool x_signed = x.dtype() == DataType::Int8;
  const Tensor* zx = input_at(ctx, sl.x_zp);
  const int64_t za = zx ? int8_at(*zx, 0) : 0;
  const auto zp_byte = static_cast<uint8_t>(za);
  const int64_t K = p.window * p.Cg, esize = mult ? 1 : 4;
  // Rows in blocks of about a megabyte of gathered windows.
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(K, 1), 64, p.out_pixels);
  ref::check_work_buffer(ctx, {p.in_pixels, p.C}, "X channels last", 1);
  ref::check_work_buffer(ctx, {block, std::max(K, p.Mg * esize)}, "the gathered windows", 1);
  std::vector<uint8_t> xl(static_cast<size_t>(p.in_pixels * p.C));
  std::vector<uint8_t> cols(p.direct ? 0 : static_cast<size_t>(block * K));
  std::vector<std::byte> out(static_cast<size_t>(block * p.Mg * esize));
  const auto* xb = reinterpret_cast<const uint8_t*>(x.raw());
  for (int64_t n = 0; n < p.x[0]; ++n) {
    const uint8_t* image = xb + n * p.C * p.in_pixels;
    transpose(image, p.C, p.in_pixels, p.in_pixels, xl.data(), p.C);
    std::byte* yn = y + n * p.M * p.out_pixels * esize;
    for (int64_t g = 0; g < p.group; ++g)
      for (int64_t o0 = 0; o0 < p.out_pixels; o0 += block) {
        const int64_t count = std::min(block, p.out_pixels - o0);
        vnni::Product pr;
        pr.b = &pk.groups[static_cast<size_t>(g)];
        pr.rows = count;
        if (p.direct) {
          pr.row = [&, o0, g](int64_t r) { return xl.data() + (o0 + r) * p.C + g * p.Cg; };
        } else {
          parallel_for(count, 64, [&](int64_t r0, int64_t r1) {
            for (int64_t r = r0; r < r1; ++r) gather(p, xl.data(), g * p.Cg, o0 + r, zp_byte, cols.data() + r * K);
          });
          pr.row = [&](int64_t r) { return cols.data() + r * K; };
        }
        pr.a_signed = x_signed;
        pr.a_zero_point = za;
        if (mult) {
          pr.stage = vnni::Stage::requantize;
          pr.bias = bias ? bias + g * p.Mg : nullptr;
          pr.mult = mult + g * p.Mg;
          pr.zero_point = y_zero_point;
          pr.type = yt == DataType::Uint8 ? vnni::Product::Type::u8 : vnni::Product::Type::s8;
        } else {
          pr.type = vnni::Product::Type::s32;
        }
        pr.y = out.data();
        vnni::run(pr);
        scatter(p, out.data(), o0, count, g, esize, yn);
      }
  }
}

bool conv_integer_accepts(const KernelContext& ctx) {
  return ctx.input_count() >= 2 && ctx.input_count() <= 4 && accepts_with(ctx, kConvInteger);
}

void ConvInteger(KernelContext& ctx) {
  guarded(ctx, [&] {
    const std::optional<Problem> p = problem_of(ctx, kConvInteger);
    Packed local;
    const Packed* pk = p ? packed_of(ctx, *p, kConvInteger, local) : nullptr;
    if (!pk || !pk->fits) ctx.fail("problem not supported by the 8-bit product's ConvInteger");
    Tensor& y = uninitialized_output(ctx, 0, DataType::Int32, p->y);
    convolve(ctx, *p, kConvInteger, *pk, nullptr, nullptr, 0, DataType::Int32, y.mutable_raw());
  });
}

bool qlinear_conv_accepts(const KernelContext& ctx) { return qlinear_conv_params_ok(ctx) && accepts_with(ctx, kQLinearConv); }

void QLinearConv(KernelContext& ctx) {
  guarded(ctx, [&] {
    const std::optional<Problem> p = qlinear_conv_params_ok(ctx) ? problem_of(ctx, kQLinearConv) : std::nullopt;
    Packed local;
    const Packed* pk = p ? packed_of(ctx, *p, kQLinearConv, local) : nullptr;
    if (!pk || !pk->fits) ctx.fail("problem not supported by the 8-bit product's QLinearConv");
    const std::vector<double> mult = qlinear_conv_multipliers(ctx, p->M);
    const Tensor* b = input_at(ctx, 8);
    const Tensor& yz = ctx.input(7);
    Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), p->y);
    convolve(ctx, *p, kQLinearConv, *pk, mult.data(), b ? b->data<int32_t>() : nullptr, static_cast<double>(int8_at(yz, 0)),
             yz.dtype(), y.mutable_raw());
  });
}

}  // namespace

void register_conv_integer_product_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "ConvInteger", 10, INT_MAX, "cpu-int8", ConvInteger, conv_integer_accepts});
  r.add(KernelDef{"", "QLinearConv", 10, INT_MAX, "cpu-int8", QLinearConv, qlinear_conv_accepts});
}

}  // namespace onnxscope::cpu
