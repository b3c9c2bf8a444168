// Depthwise NhwcQLinearConv (group = C = M, a 2-D window of any size,
// strides, dilations, pads) on a channels-last image in AVX-512 VNNI, each
// sum requantized in registers as the reference does: MobileNets' and
// EfficientNets' 3x3 and 5x5 layers, which oneDNN ran with int32 sums
// written out and read back by the requantization.
//
// Per output pixel and 16 channels: each tap's 16 input bytes widened to
// int32 lanes, and vpdpbusd with the tap's weights in the low byte of each
// lane (the other three bytes zero) adds x' * w ("cpu-int8"); where the CPU
// has AVX-512 VBMI, four taps' bytes permuted into each lane, so one
// vpdpbusd adds four taps ("cpu-int8-vbmi", first in the list; the same
// integer sums). Taps in the padding read a
// row of the input's zero point, so every sum has all taps, and
//   sum (x - zx) w = sum x' w - zx' * sum w
// with x' = x (+ 128 for int8, the sign bit flipped: vpdpbusd reads its
// first operand unsigned) and zx' likewise. Exact in int32 (at most 255 *
// 128 per tap and 33,000 taps, as conv_integer.cpp takes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")  // a product rounds before the rounding's add (requantize_avx512.h)
#endif
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <climits>  // INT_MAX
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/quantization/kept_packing.h"
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

constexpr int64_t kMaxTaps = 64;
constexpr int kBlocks = 4;  // 16-channel blocks a pixel's step keeps in registers

bool have_avx512_vnni() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512vnni") && ONNXSCOPE_CPU_AVX512("avx512bw") &&
                          ONNXSCOPE_CPU_AVX512("avx512vl");
  return yes;
}

int64_t int8_at(const Tensor& t, uint64_t i) {
  return t.dtype() == DataType::Int8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

// The weights minus their zero points as int32 lanes holding the weight in
// their low byte ([block][tap][16]), and each channel's sum over its taps.
struct Packed : KeptPacking {
  int64_t C = 0, taps = 0;
  std::vector<int32_t> lanes;
  std::vector<int64_t> sums;
  // The same weights four taps to a lane (byte k of lane c: tap 4g + k of
  // channel c, 0 past the last tap), [block][group][16], for the VBMI form.
  int64_t groups = 0;
  std::vector<int32_t> quads;
};

bool pack(const Tensor& w, const Tensor* wz, Packed& p) {
  p.C = w.shape()[0];
  p.taps = w.shape()[2] * w.shape()[3];
  const int64_t blocks = (p.C + 15) / 16;
  p.lanes.assign(static_cast<size_t>(blocks * p.taps * 16), 0);
  p.sums.assign(static_cast<size_t>(p.C), 0);
  p.groups = (p.taps + 3) / 4;
  p.quads.assign(static_cast<size_t>(blocks * p.groups * 16), 0);
  for (int64_t c = 0; c < p.C; ++c) {
    const int64_t z = wz ? int8_at(*wz, wz->element_count() == 1 ? 0 : static_cast<uint64_t>(c)) : 0;
    for (int64_t t = 0; t < p.taps; ++t) {
      const int64_t v = int8_at(w, static_cast<uint64_t>(c * p.taps + t)) - z;
      if (v < -128 || v > 127) return false;
      const uint32_t byte = static_cast<uint8_t>(static_cast<int8_t>(v));
      p.lanes[static_cast<size_t>((c / 16 * p.taps + t) * 16 + c % 16)] = static_cast<int32_t>(byte);
      int32_t& quad = p.quads[static_cast<size_t>((c / 16 * p.groups + t / 4) * 16 + c % 16)];
      quad = static_cast<int32_t>(static_cast<uint32_t>(quad) | byte << (8 * (t % 4)));
      p.sums[static_cast<size_t>(c)] += v;
    }
  }
  return true;
}

const Packed* packed_of(const KernelContext& ctx, Packed& local) {
  return kept_packing(ctx, local, 3, 5, [&](Packed& p) {
    const Value* zv = ctx.input_count() > 5 ? ctx.input_value(5) : nullptr;
    return pack(ctx.input(3), zv ? &zv->tensor() : nullptr, p);
  });
}

// The window when the problem is this kernel's: X [N, H, W, C] 8-bit, W
// [C, 1, kh, kw] an 8-bit initializer, group C.
bool problem_of(const KernelContext& ctx, ref::nn::Window& win) {
  if (!have_avx512_vnni() || !qlinear_conv_params_ok(ctx)) return false;
  const Value* xv = ctx.input_value(0);
  const Value* wv = ctx.input_value(3);
  if (!xv || !xv->is_tensor() || !wv || !wv->is_tensor() || !is_initializer(ctx, 3)) return false;
  const Tensor& x = xv->tensor();
  const Tensor& w = wv->tensor();
  auto int8 = [](DataType t) { return t == DataType::Uint8 || t == DataType::Int8; };
  if (!int8(x.dtype()) || !int8(w.dtype()) || x.rank() != 4 || w.rank() != 4 || x.element_count() == 0) return false;
  const int64_t C = x.shape()[3];
  if (C < 2 || ctx.attr_int("group", 1) != C || w.shape()[0] != C || w.shape()[1] != 1) return false;
  if (w.shape()[2] * w.shape()[3] > kMaxTaps || w.shape()[2] < 1 || w.shape()[3] < 1) return false;
  if (ctx.has_attr("kernel_shape") && ctx.attr_ints("kernel_shape") != std::vector<int64_t>{w.shape()[2], w.shape()[3]})
    return false;
  if (const Value* z = ctx.input_value(2))
    if (!z->is_tensor() || z->tensor().dtype() != x.dtype() || z->tensor().element_count() != 1) return false;
  if (ctx.input_count() > 5)
    if (const Value* z = ctx.input_value(5)) {
      const Tensor& t = z->tensor();
      if (!z->is_tensor() || t.dtype() != w.dtype() || !is_initializer(ctx, 5)) return false;
      if (!(t.element_count() == 1 && t.rank() <= 1) && !(t.rank() == 1 && t.shape()[0] == C)) return false;
    }
  try {
    win = ref::nn::resolve_window(ctx, {x.shape()[1], x.shape()[2]}, {w.shape()[2], w.shape()[3]}, false);
  } catch (const std::exception&) {
    return false;
  }
  return win.out[0] > 0 && win.out[1] > 0;
}

bool accepts(const KernelContext& ctx) {
  return safely([&] {
    ref::nn::Window win;
    if (!problem_of(ctx, win)) return false;
    Packed local;
    return packed_of(ctx, local)->fits;
  });
}

bool accepts_quad(const KernelContext& ctx) {
  static const bool vbmi = ONNXSCOPE_CPU_AVX512("avx512vbmi");
  return vbmi && accepts(ctx);
}

// Per channel, padded to whole blocks: the sums' start, bias, multiplier.
struct Channels {
  const int32_t* start;
  const double* bias;
  const double* mult;
  double zp;
  uint32_t flip;  // 0x80 on each byte for int8 input
  const int32_t* bias_i = nullptr;  // round16_float's, where it may run
  const float* mult_f = nullptr;
};

#define ONNXSCOPE_VNNI "avx512f,avx512bw,avx512vl,avx512vnni"

// P output pixels, blocks [b0, b0 + J) of 16 channels: the sums start at
// each channel's zero-point term; mask[j] says which of block j's
// channels there are.
template <int P, int J>
__attribute__((target(ONNXSCOPE_VNNI), always_inline)) inline void start_sums(__m512i (&acc)[P][J], __mmask16 (&mask)[J],
                                                                              int64_t b0, int64_t C, const Channels& ch) {
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const int64_t c0 = (b0 + j) * 16;
    mask[j] = static_cast<__mmask16>(C - c0 >= 16 ? 0xffff : (1u << (C - c0)) - 1u);
    const __m512i s = _mm512_loadu_si512(ch.start + c0);
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) acc[p][j] = s;
  }
}

// The sums stored to out[p] as T requantized, or as they are for T = int32_t.
template <int P, int J, typename T>
__attribute__((target(ONNXSCOPE_VNNI), always_inline)) inline void store_sums(const __m512i (&acc)[P][J],
                                                                              const __mmask16 (&mask)[J], int64_t b0,
                                                                              const Channels& ch, T* const* out) {
#pragma GCC unroll 4
  for (int j = 0; j < J; ++j) {
    const int64_t c0 = (b0 + j) * 16;
    if constexpr (std::is_same_v<T, int32_t>) {
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) _mm512_mask_storeu_epi32(out[p] + c0, mask[j], acc[p][j]);
    } else {
      const __m512d zp = _mm512_set1_pd(ch.zp);
      const __m512d b0v = _mm512_loadu_pd(ch.bias + c0), b1v = _mm512_loadu_pd(ch.bias + c0 + 8);
      const __m512d m0 = _mm512_loadu_pd(ch.mult + c0), m1 = _mm512_loadu_pd(ch.mult + c0 + 8);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        __m128i f;
        if (ch.mult_f && round16_float<T>(_mm512_add_epi32(acc[p][j], _mm512_loadu_si512(ch.bias_i + c0)),
                                          _mm512_loadu_ps(ch.mult_f + c0), static_cast<float>(ch.zp), f)) {
          _mm_mask_storeu_epi8(out[p] + c0, mask[j], f);
          continue;
        }
        const __m512d lo = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(acc[p][j])), b0v);
        const __m512d hi = _mm512_add_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(acc[p][j], 1)), b1v);
        const __m128i v = narrow16<T>(round8_bounded<T>(_mm512_mul_pd(lo, m0), zp), round8_bounded<T>(_mm512_mul_pd(hi, m1), zp));
        _mm_mask_storeu_epi8(out[p] + c0, mask[j], v);
      }
    }
  }
}

// A tap to a lane: pixel p's taps read from at[p * taps + t] (pixel rows of
// C bytes, or the zero-point row), each byte widened to an int32 lane and
// multiplied by the tap's weight in the lane's low byte. Each tap's weights
// are loaded once for the P pixels, and the P * J sums are independent
// chains (a pixel at a time waited on vpdpbusd's latency). Whole blocks
// (Masked false) widen their bytes straight from memory (vpmovzxbd with a
// memory operand: no masked load's extra uop on the ports vpmovzxbd and
// vpdpbusd need; a [1,144,56,56] 3x3 QLinearConv at one thread, its
// reorders included, 0.30 -> 0.28 ms).
template <int P, int J, typename T, bool Signed, bool Masked>
__attribute__((target(ONNXSCOPE_VNNI))) inline void pixels_blocks(const uint8_t* const* at, int64_t taps,
                                                                 const Packed& pk, int64_t b0, int64_t C,
                                                                 const Channels& ch, T* const* out) {
  __m512i acc[P][J];
  __mmask16 mask[J];
  start_sums<P, J>(acc, mask, b0, C, ch);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(ch.flip & 0xffu));  // the low byte of each lane
  for (int64_t t = 0; t < taps; ++t) {
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      const int64_t c0 = (b0 + j) * 16;
      const __m512i w = _mm512_loadu_si512(pk.lanes.data() + ((b0 + j) * taps + t) * 16);
#pragma GCC unroll 4
      for (int p = 0; p < P; ++p) {
        const uint8_t* src = at[p * taps + t] + c0;
        __m512i x = _mm512_cvtepu8_epi32(Masked ? _mm_maskz_loadu_epi8(mask[j], src)
                                                : _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
        if constexpr (Signed) x = _mm512_xor_si512(x, flip);  // x + 128 in the low byte, the rest 0
        acc[p][j] = _mm512_dpbusd_epi32(acc[p][j], x, w);
      }
    }
  }
  store_sums<P, J, T>(acc, mask, b0, ch, out);
}

// Four taps to a lane (AVX-512 VBMI): pixel p's taps read from at[p * 4G +
// t] (G groups of four; the taps past the last read any row, their weights
// 0). A group's four rows of 16 bytes go into one register's four 128-bit
// lanes and one vpermb gathers each channel's four bytes into its int32
// lane, so one vpdpbusd adds four taps: per tap, a load and a quarter of an
// insert, permute and vpdpbusd, where a tap to a lane takes a vpmovzxbd and
// a vpdpbusd on the same two ports.
template <int P, int J, typename T, bool Signed, bool Masked>
__attribute__((target(ONNXSCOPE_VNNI ",avx512vbmi"))) inline void pixels_blocks_quad(const uint8_t* const* at,
                                                                                   int64_t /*taps: pk.groups*/, const Packed& pk,
                                                                                   int64_t b0, int64_t C,
                                                                                   const Channels& ch, T* const* out) {
  __m512i acc[P][J];
  __mmask16 mask[J];
  start_sums<P, J>(acc, mask, b0, C, ch);
  alignas(64) static constexpr uint8_t kGather[64] = {  // byte 4c + k <- byte 16k + c
      0, 16, 32, 48, 1, 17, 33, 49, 2, 18, 34, 50, 3, 19, 35, 51, 4, 20, 36, 52, 5, 21, 37, 53,
      6, 22, 38, 54, 7, 23, 39, 55, 8, 24, 40, 56, 9, 25, 41, 57, 10, 26, 42, 58, 11, 27, 43, 59,
      12, 28, 44, 60, 13, 29, 45, 61, 14, 30, 46, 62, 15, 31, 47, 63};
  const __m512i gather = _mm512_load_si512(kGather);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(ch.flip));  // every byte
  const int64_t G = pk.groups;
  const int32_t* quads = pk.quads.data() + b0 * G * 16;
  for (int64_t g = 0; g < G; ++g) {
    // A pixel's four row pointers once for its J blocks (the weights, one
    // load each, again for each pixel): 16 pointers would not stay in
    // registers across the pixels.
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) {
      const uint8_t* const* a = at + p * 4 * G + 4 * g;
      const uint8_t* r0 = a[0] + b0 * 16;
      const uint8_t* r1 = a[1] + b0 * 16;
      const uint8_t* r2 = a[2] + b0 * 16;
      const uint8_t* r3 = a[3] + b0 * 16;
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) {
        auto row = [&](const uint8_t* r) {
          return Masked ? _mm_maskz_loadu_epi8(mask[j], r + 16 * j)
                        : _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + 16 * j));
        };
        __m512i x = _mm512_castsi128_si512(row(r0));
        x = _mm512_inserti32x4(x, row(r1), 1);
        x = _mm512_inserti32x4(x, row(r2), 2);
        x = _mm512_inserti32x4(x, row(r3), 3);
        x = _mm512_permutexvar_epi8(gather, x);
        if constexpr (Signed) x = _mm512_xor_si512(x, flip);  // each byte + 128
        acc[p][j] = _mm512_dpbusd_epi32(acc[p][j], x, _mm512_loadu_si512(quads + (j * G + g) * 16));
      }
    }
  }
  store_sums<P, J, T>(acc, mask, b0, ch, out);
}

// Every block of P output pixels, four blocks at a time, by `Blocks`
// (pixels_blocks or pixels_blocks_quad).
template <template <int, int, typename, bool, bool> class Blocks, int P, typename T, bool Signed>
void pixels(const uint8_t* const* at, int64_t taps, const Packed& pk, int64_t C, const Channels& ch, T* const* out) {
  const int64_t blocks = (C + 15) / 16, whole = C / 16;
  int64_t b = 0;
  for (; b + kBlocks <= whole; b += kBlocks) Blocks<P, kBlocks, T, Signed, false>::run(at, taps, pk, b, C, ch, out);
  switch (blocks - b) {  // the last few, the partial one among them
    case 1: Blocks<P, 1, T, Signed, true>::run(at, taps, pk, b, C, ch, out); break;
    case 2: Blocks<P, 2, T, Signed, true>::run(at, taps, pk, b, C, ch, out); break;
    case 3: Blocks<P, 3, T, Signed, true>::run(at, taps, pk, b, C, ch, out); break;
    case 4: Blocks<P, 4, T, Signed, true>::run(at, taps, pk, b, C, ch, out); break;
    default: break;
  }
}

template <int P, int J, typename T, bool Signed, bool Masked>
struct TapLanes {
  static void run(const uint8_t* const* at, int64_t taps, const Packed& pk, int64_t b0, int64_t C, const Channels& ch,
                  T* const* out) {
    pixels_blocks<P, J, T, Signed, Masked>(at, taps, pk, b0, C, ch, out);
  }
};
template <int P, int J, typename T, bool Signed, bool Masked>
struct QuadLanes {
  static void run(const uint8_t* const* at, int64_t taps, const Packed& pk, int64_t b0, int64_t C, const Channels& ch,
                  T* const* out) {
    pixels_blocks_quad<P, J, T, Signed, Masked>(at, taps, pk, b0, C, ch, out);
  }
};

template <bool Quad, int P, typename T, bool Signed>
void pixels_of(const uint8_t* const* at, int64_t taps, const Packed& pk, int64_t C, const Channels& ch, T* const* out) {
  if constexpr (Quad) pixels<QuadLanes, P, T, Signed>(at, taps, pk, C, ch, out);
  else pixels<TapLanes, P, T, Signed>(at, taps, pk, C, ch, out);
}

template <bool Quad>
void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    ref::nn::Window win;
    if (!problem_of(ctx, win)) ctx.fail("problem not supported by the depthwise int8 kernel");
    Packed local;
    const Packed& pk = *packed_of(ctx, local);
    if (!pk.fits) ctx.fail("the weights minus their zero points do not fit int8");
    const Tensor& x = ctx.input(0);
    const int64_t N = x.shape()[0], H = x.shape()[1], W = x.shape()[2], C = pk.C;
    const int64_t OH = win.out[0], OW = win.out[1], KH = win.kernel[0], KW = win.kernel[1];
    const Tensor& yz = ctx.input(7);
    const bool u8 = yz.dtype() == DataType::Uint8;
    Tensor& y = uninitialized_output(ctx, 0, yz.dtype(), {N, OH, OW, C});
    const int64_t padded = (C + 15) / 16 * 16;
    std::vector<double> mult = qlinear_conv_multipliers(ctx, C);
    const bool bounded = std::all_of(mult.begin(), mult.end(), bounded_multiplier);  // else the checked requantization
    mult.resize(static_cast<size_t>(padded), 0.0);
    const int32_t* bias = ctx.input_count() > 8 && ctx.input_value(8) ? ctx.input(8).data<int32_t>() : nullptr;
    std::vector<double> bias_d(static_cast<size_t>(padded), 0.0);
    const bool x_signed = x.dtype() == DataType::Int8;
    const uint8_t zx_byte = ctx.input_value(2) ? reinterpret_cast<const uint8_t*>(ctx.input(2).raw())[0] : 0;
    const int64_t zx_shifted = (x_signed ? static_cast<int8_t>(zx_byte) + 128 : zx_byte);  // zx'
    std::vector<int32_t> start(static_cast<size_t>(padded), 0);
    for (int64_t c = 0; c < C; ++c) {
      if (bias) bias_d[static_cast<size_t>(c)] = bias[c];
      start[static_cast<size_t>(c)] = static_cast<int32_t>(
          static_cast<uint32_t>(static_cast<uint64_t>(-zx_shifted * pk.sums[static_cast<size_t>(c)])));
    }
    const std::vector<uint8_t> pad_row(static_cast<size_t>(C), zx_byte);  // what a tap in the padding reads
    Channels ch{start.data(), bias_d.data(), mult.data(), static_cast<double>(int8_at(yz, 0)),
                x_signed ? 0x80808080u : 0u};
    // The float requantization where it is exact (requantize_avx512.h).
    std::vector<int32_t> bias_i(static_cast<size_t>(padded), 0);
    std::vector<float> mult_f(static_cast<size_t>(padded), 0.0f);
    if (bounded && float_requantization(mult.data(), C, bias, KH * KW)) {
      for (int64_t c = 0; c < C; ++c) {
        bias_i[static_cast<size_t>(c)] = bias ? bias[c] : 0;
        mult_f[static_cast<size_t>(c)] = static_cast<float>(mult[static_cast<size_t>(c)]);
      }
      ch.bias_i = bias_i.data();
      ch.mult_f = mult_f.data();
    }
    const uint8_t* xb = reinterpret_cast<const uint8_t*>(x.raw());
    std::byte* yb = y.mutable_raw();
    const int64_t taps = KH * KW;
    // Where tap t of a pixel whose window lies inside X reads, from the
    // window's first pixel; and the output columns whose windows do.
    std::vector<int64_t> tap_offset(static_cast<size_t>(taps));
    for (int64_t i = 0; i < KH; ++i)
      for (int64_t j = 0; j < KW; ++j)
        tap_offset[static_cast<size_t>(i * KW + j)] = (i * win.dilations[0] * W + j * win.dilations[1]) * C;
    auto inside = [](int64_t o, int64_t s, int64_t pad, int64_t span, int64_t n) {
      return o * s - pad >= 0 && o * s - pad + span <= n;
    };
    const int64_t span_h = (KH - 1) * win.dilations[0] + 1, span_w = (KW - 1) * win.dilations[1] + 1;
    int64_t ow_lo = 0, ow_hi = 0;  // [ow_lo, ow_hi): inside along W
    while (ow_lo < OW && !inside(ow_lo, win.strides[1], win.pad_begin[1], span_w, W)) ++ow_lo;
    ow_hi = ow_lo;
    while (ow_hi < OW && inside(ow_hi, win.strides[1], win.pad_begin[1], span_w, W)) ++ow_hi;
    constexpr int kPixels = 4;
    const int64_t row_work = OW * taps * padded;
    parallel_for(N * OH, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(row_work, 1)), [&](int64_t r0, int64_t r1) {
      const uint8_t* at[kPixels * kMaxTaps];
      std::vector<int32_t> sums(bounded ? 0 : static_cast<size_t>(C));
      // Output pixels [ow, ow + P) of row r: P at once.
      // Each pixel's taps, `stride` apart: the quad form's last group reads
      // the zero-point row for the taps past the last (their weights are 0).
      const int64_t stride = Quad ? 4 * pk.groups : taps;
      for (int p = 0; p < kPixels; ++p)
        for (int64_t t = taps; t < stride; ++t) at[p * stride + t] = pad_row.data();
      auto run = [&](auto p_const, int64_t r, int64_t ow, bool all_inside) {
        constexpr int P = decltype(p_const)::value;
        const int64_t n = r / OH, oh = r % OH;
        for (int p = 0; p < P; ++p) {
          const int64_t ow_p = ow + p, ih0 = oh * win.strides[0] - win.pad_begin[0], iw0 = ow_p * win.strides[1] - win.pad_begin[1];
          const uint8_t** a = at + p * stride;
          if (all_inside) {
            const uint8_t* base = xb + ((n * H + ih0) * W + iw0) * C;
            for (int64_t t = 0; t < taps; ++t) a[t] = base + tap_offset[static_cast<size_t>(t)];
            continue;
          }
          for (int64_t i = 0; i < KH; ++i) {
            const int64_t ih = ih0 + i * win.dilations[0];
            for (int64_t j = 0; j < KW; ++j) {
              const int64_t iw = iw0 + j * win.dilations[1];
              a[i * KW + j] = ih >= 0 && ih < H && iw >= 0 && iw < W ? xb + ((n * H + ih) * W + iw) * C : pad_row.data();
            }
          }
        }
        const int64_t o = (r * OW + ow) * C;
        if (!bounded) {  // the sums, then the reference's requantization (NaN products give the zero point)
          for (int p = 0; p < P; ++p) {
            int32_t* s = sums.data();
            if (x_signed) pixels_of<Quad, 1, int32_t, true>(at + p * stride, taps, pk, C, ch, &s);
            else pixels_of<Quad, 1, int32_t, false>(at + p * stride, taps, pk, C, ch, &s);
            requantize_channels_last(sums.data(), 1, C, bias, mult.data(), ch.zp, u8, yb + o + p * C);
          }
        } else if (u8) {
          uint8_t* outs[P];
          for (int p = 0; p < P; ++p) outs[p] = reinterpret_cast<uint8_t*>(yb) + o + p * C;
          if (x_signed) pixels_of<Quad, P, uint8_t, true>(at, taps, pk, C, ch, outs);
          else pixels_of<Quad, P, uint8_t, false>(at, taps, pk, C, ch, outs);
        } else {
          int8_t* outs[P];
          for (int p = 0; p < P; ++p) outs[p] = reinterpret_cast<int8_t*>(yb) + o + p * C;
          if (x_signed) pixels_of<Quad, P, int8_t, true>(at, taps, pk, C, ch, outs);
          else pixels_of<Quad, P, int8_t, false>(at, taps, pk, C, ch, outs);
        }
      };
      using One = std::integral_constant<int, 1>;
      using Four = std::integral_constant<int, kPixels>;
      for (int64_t r = r0; r < r1; ++r) {
        const bool row_inside = inside(r % OH, win.strides[0], win.pad_begin[0], span_h, H);
        // Four pixels at a time wherever there are four (those by the
        // border read the zero-point row for their taps in the padding),
        // so a padded border is not a pixel at a time.
        int64_t ow = 0;
        for (; ow + kPixels <= OW; ow += kPixels) run(Four{}, r, ow, row_inside && ow >= ow_lo && ow + kPixels <= ow_hi);
        for (; ow < OW; ++ow) run(One{}, r, ow, row_inside && ow >= ow_lo && ow < ow_hi);
      }
    });
  });
}

}  // namespace

void register_qlinear_conv_depthwise_kernels(KernelRegistry& r) {
  // Four taps to a lane where the CPU has VBMI's byte permute, one otherwise.
  r.add(KernelDef{kCpuDomain, kNhwcQLinearConv, 1, INT_MAX, "cpu-int8-vbmi", Run<true>, accepts_quad});
  r.add(KernelDef{kCpuDomain, kNhwcQLinearConv, 1, INT_MAX, "cpu-int8", Run<false>, accepts});
}

}  // namespace onnxscope::cpu
