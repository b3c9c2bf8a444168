// ToNchwc / FromNchwc (cpu/nchwc.h) at block 16 on AVX-512: the reorders
// between plain NCHW and the blocked layout, 16x16 tiles transposed in
// registers. oneDNN's reorder takes its generic path when the channel count
// is not a multiple of the block (ShuffleNetV2's 58 and 116 channels: 11 us
// for a [1,116,14,14] value, about 8 GB/s), and ShuffleNet pays two of them
// per unit around its channel split. Block 8 (AVX2 machines) stays oneDNN's.
#include <immintrin.h>

#include <algorithm>
#include <climits>  // INT_MAX

#include "core/cpu_features.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"

#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's avx512fintrin.h
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kBlock = 16;
constexpr int64_t kTile = 64;       // pixels per work item: 64 cache lines of the blocked side stay in L1
constexpr int64_t kGrain = 32768;  // floats per chunk below which threads cost more than they save

bool have_avx512() {
  static const bool yes = ONNXSCOPE_CPU_AVX512("avx512f");
  return yes;
}

// In-register transpose of a 16x16 float tile: r[i][j] becomes r[j][i].
__attribute__((target("avx512f"), always_inline)) inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0x88);
      t[8 * i + j + 4] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + j + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

// One block of 16 channels (`valid` of them real) for pixels [s0, s1):
// dst[s][l] = src[l][s], zeros in the padding lanes. 16 pixels at a time:
// 16 channel rows loaded, transposed, stored as 16 pixels.
__attribute__((target("avx512f"))) void to_block(const float* src, int64_t S, int valid, int64_t s0, int64_t s1,
                                                 float* dst) {
  __m512 r[16];
  for (int64_t s = s0; s < s1; s += 16) {
    const int n = static_cast<int>(std::min<int64_t>(16, s1 - s));
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
    for (int l = 0; l < 16; ++l) r[l] = l < valid ? _mm512_maskz_loadu_ps(m, src + l * S + s) : _mm512_setzero_ps();
    transpose16(r);
    for (int p = 0; p < n; ++p) _mm512_storeu_ps(dst + (s + p) * kBlock, r[p]);
  }
}

// The way back for pixels [s0, s1) of one block: dst[l][s] = src[s][l] for
// the `valid` real channels (rows of `S` floats from dst).
__attribute__((target("avx512f"))) void from_block(const float* src, int64_t S, int valid, int64_t s0, int64_t s1,
                                                   float* dst) {
  __m512 r[16];
  for (int64_t s = s0; s < s1; s += 16) {
    const int n = static_cast<int>(std::min<int64_t>(16, s1 - s));
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
    for (int p = 0; p < 16; ++p) r[p] = p < n ? _mm512_loadu_ps(src + (s + p) * kBlock) : _mm512_setzero_ps();
    transpose16(r);
    for (int l = 0; l < valid; ++l) _mm512_mask_storeu_ps(dst + l * S + s, m, r[l]);
  }
}

bool to_accepts(const KernelContext& ctx) {
  const Value* x = ctx.input_value(0);
  if (!have_avx512() || !x || !x->is_tensor() || ctx.attr_int("block", 0) != kBlock) return false;
  const Tensor& t = x->tensor();
  return t.dtype() == DataType::Float && t.rank() == 4;
}

void ToNchwc(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& d = x.shape();
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, nchwc_shape(d, kBlock));  // padding lanes written as zeros
  if (y.element_count() == 0) return;
  const int64_t N = d[0], C = d[1], S = d[2] * d[3], CB = (C + kBlock - 1) / kBlock, tiles = (S + kTile - 1) / kTile;
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(N * CB * tiles, std::max<int64_t>(1, kGrain / (kTile * kBlock)), [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t t = w % tiles, nb = w / tiles, n = nb / CB, cb = nb % CB;
      const int valid = static_cast<int>(std::min(kBlock, C - cb * kBlock));
      to_block(in + (n * C + cb * kBlock) * S, S, valid, t * kTile, std::min(S, (t + 1) * kTile), out + nb * S * kBlock);
    }
  });
}

bool from_accepts(const KernelContext& ctx) {
  const Value* x = ctx.input_value(0);
  if (!have_avx512() || !x || !x->is_tensor()) return false;
  const Tensor& t = x->tensor();
  if (t.dtype() != DataType::Float || t.rank() != 5 || t.shape()[4] != kBlock) return false;
  return blocks_hold(ctx.attr_int("channels", 0), t.shape()[1], kBlock);
}

void FromNchwc(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& b = x.shape();
  const int64_t N = b[0], C = ctx.attr_int("channels", 0), CB = b[1], S = b[2] * b[3];
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, Shape{N, C, b[2], b[3]});
  if (y.element_count() == 0) return;
  const int64_t tiles = (S + kTile - 1) / kTile;
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(N * CB * tiles, std::max<int64_t>(1, kGrain / (kTile * kBlock)), [&](int64_t w0, int64_t w1) {
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t t = w % tiles, nb = w / tiles, n = nb / CB, cb = nb % CB;
      const int64_t s0 = t * kTile, s1 = std::min(S, s0 + kTile);
      const int valid = static_cast<int>(std::min(kBlock, C - cb * kBlock));
      from_block(in + nb * S * kBlock, S, valid, s0, s1, out + (n * C + cb * kBlock) * S);
    }
  });
}

}  // namespace

void register_nchwc_reorder_kernels(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kToNchwc, 1, INT_MAX, "cpu-avx512", ToNchwc, to_accepts});
  r.add(KernelDef{"onnxscope.cpu", kFromNchwc, 1, INT_MAX, "cpu-avx512", FromNchwc, from_accepts});
}

}  // namespace onnxscope::cpu
