// ToNhwc / FromNhwc (cpu/nhwc.h): [N, C, D...] <-> [N, D..., C] for
// elements of 1, 2, 4 or 8 bytes, in tiles of 128 (bytes) or 64 channels by
// as many pixels (the tile's rows of both sides stay in L1), 1- and 4-byte
// ones by register blocks within a tile (a byte at a time took 0.10 ms for
// [1,144,56,56] at 2 threads, as long as the depthwise convolution between
// two of them). The nhwc-int8-layout pass leaves a few of them per model
// (the image into the first convolution, the last activations out), where
// each QLinearConv made two through oneDNN's reorder primitive before, at
// ~30 us a call.
#include <algorithm>
#include <climits>  // INT_MAX
#include <cstdint>

#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/tensor/transpose_blocks.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

// Channels and pixels a tile: 16 KiB of bytes, 16-32 KiB otherwise (both
// sides of a tile in L1; 128 for bytes was 5% faster than 64 here).
template <typename T>
constexpr int64_t kTile = sizeof(T) == 1 ? 128 : 64;
constexpr int64_t kGrainBytes = 32768;  // per work item below which threads cost more than they save

// One image: dst[s * C + c] = src[c * S + s] (to channels last), or the way
// back, for the tiles [t0, t1) of the (pixel tile, channel tile) grid; 1-
// and 4-byte elements through register blocks (tensor/transpose_blocks.h).
template <typename T>
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void reorder_tiles(const T* src, T* dst, int64_t C, int64_t S, bool to_last, int64_t t0, int64_t t1) {
  // Pixel tiles outside, channel tiles inside: a thread's run of tiles has
  // channel tiles of every width (144 channels: 128 and 16), not only the
  // wide ones, and writes (or reads) whole channels-last rows in order.
  const int64_t channel_tiles = (C + kTile<T> - 1) / kTile<T>;
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t c0 = t % channel_tiles * kTile<T>, c1 = std::min(C, c0 + kTile<T>);
    const int64_t s0 = t / channel_tiles * kTile<T>, s1 = std::min(S, s0 + kTile<T>);
    if (to_last) blocks::transpose_tile(src + c0 * S + s0, c1 - c0, s1 - s0, S, dst + s0 * C + c0, C);
    else blocks::transpose_tile(src + s0 * C + c0, s1 - s0, c1 - c0, C, dst + c0 * S + s0, S);
  }
}

template <typename T>
void reorder(const Tensor& x, Tensor& y, const Shape& plain, bool to_last) {
  const int64_t N = plain[0], C = plain[1];
  int64_t S = 1;
  for (size_t i = 2; i < plain.size(); ++i) S *= plain[i];
  const int64_t tiles = (C + kTile<T> - 1) / kTile<T> * ((S + kTile<T> - 1) / kTile<T>);
  const int64_t per_tile = std::min(C, kTile<T>) * std::min(S, kTile<T>) * static_cast<int64_t>(sizeof(T));
  const T* in = static_cast<const T*>(static_cast<const void*>(x.raw()));
  T* out = static_cast<T*>(static_cast<void*>(y.mutable_raw()));
  parallel_for(N * tiles, std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(per_tile, 1)), [&](int64_t w0, int64_t w1) {
    while (w0 < w1) {  // the items of one image at a time
      const int64_t n = w0 / tiles, end = std::min(w1, (n + 1) * tiles);
      reorder_tiles<T>(in + n * C * S, out + n * C * S, C, S, to_last, w0 - n * tiles, end - n * tiles);
      w0 = end;
    }
  });
}

size_t element_bytes(const Tensor& t) {
  if (t.is_string() || t.element_count() == 0) return 0;
  const size_t e = t.byte_size() / t.element_count();
  return t.byte_size() % t.element_count() == 0 && (e == 1 || e == 2 || e == 4 || e == 8) ? e : 0;
}

bool accepts(const KernelContext& ctx) {
  const Value* x = ctx.input_value(0);
  if (!x || !x->is_tensor() || ctx.input_count() != 1) return false;
  const Tensor& t = x->tensor();
  return t.rank() >= 3 && t.rank() <= 5 && element_bytes(t) != 0;
}

void run(KernelContext& ctx, bool to_last) {
  const Tensor& x = ctx.input(0);
  const Shape plain = to_last ? x.shape() : channels_first_shape(x.shape());
  Tensor& y = uninitialized_output(ctx, 0, x.dtype(), to_last ? channels_last_shape(plain) : plain);
  switch (element_bytes(x)) {
    case 1: reorder<uint8_t>(x, y, plain, to_last); break;
    case 2: reorder<uint16_t>(x, y, plain, to_last); break;
    case 4: reorder<uint32_t>(x, y, plain, to_last); break;
    case 8: reorder<uint64_t>(x, y, plain, to_last); break;
    default: ctx.fail("no element size for this reorder");
  }
}

void ToNhwc(KernelContext& ctx) { run(ctx, true); }
void FromNhwc(KernelContext& ctx) { run(ctx, false); }

}  // namespace

void register_nhwc_reorder_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kToNhwc, 1, INT_MAX, "cpu-simd", ToNhwc, accepts});
  r.add(KernelDef{kCpuDomain, kFromNhwc, 1, INT_MAX, "cpu-simd", FromNhwc, accepts});
}

}  // namespace onnxscope::cpu
