// What the CUDA engine's kernels are written in: plain C++ that nvcc
// compiles for the GPU (kernels/launch.cu) and the host compiler compiles
// for the host runtime (kernels/launch_host.cpp), so every kernel's logic
// runs in CI without a GPU. A kernel is a trivially copyable functor:
//  - elementwise kernels: `void operator()(int64_t i) const` for each of n
//    items (a grid-stride loop on the GPU, a plain loop on the host);
//  - row kernels (`static constexpr bool kRows = true`):
//    `template <class L> void operator()(int64_t row, const L& lanes) const`,
//    one warp per row on the GPU (lanes.count() == 32, with lanes.sum/max
//    reducing across the warp), one lane on the host.
#pragma once

#include <cstdint>

#include "core/narrow_float_codec.h"

#ifdef __CUDACC__
#define OS_HD __host__ __device__ __forceinline__
#else
#define OS_HD inline
#endif

namespace onnxscope::cuda {

constexpr int kKernelRank = 8;  // the most dims a kernel argument carries

// Dims and strides a kernel argument can carry by value.
struct Dims {
  int rank = 0;
  int64_t d[kKernelRank] = {};
};

// The host's lanes: one, so a reduction across lanes is the value itself.
struct OneLane {
  OS_HD int lane() const { return 0; }
  OS_HD int count() const { return 1; }
  OS_HD float sum(float v) const { return v; }
  OS_HD float max(float v) const { return v; }
  OS_HD float min(float v) const { return v; }
  OS_HD float prod(float v) const { return v; }
};

// The sum over lanes of per-lane counts, exact past 2^24 (lanes sum floats):
// the low 12 bits and the rest summed apart.
template <class L>
OS_HD int64_t exact_lane_sum(int64_t c, const L& lanes) {
  return static_cast<int64_t>(lanes.sum(static_cast<float>(c & 4095))) +
         4096 * static_cast<int64_t>(lanes.sum(static_cast<float>(c >> 12)));
}

// float16 and bfloat16 as bits, converted by integer arithmetic (the same on
// both sides; round to nearest even, NaN kept quiet).
OS_HD float bits_to_float(uint32_t u) { return narrow::float_of(u); }
OS_HD uint32_t float_to_bits(float f) { return narrow::bits_of(f); }
OS_HD float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    if (mant == 0) return bits_to_float(sign);
    int e = -1;  // subnormal: normalise
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400u) == 0);
    return bits_to_float(sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13);
  }
  return bits_to_float(sign | (exp + 127 - 15) << 23 | mant << 13);
}
OS_HD uint16_t float_to_half(float f) {
  const uint32_t u = float_to_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {                                                // subnormal or zero in half
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((abs >> 13) - (112u << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}
// A check a kernel makes as it runs (an index out of range), left for the
// host to read after the run (Runtime::take_fault): record[0] the site
// (Runtime::fault_site, from 1), then the position, the value and the bound.
// The first kernel thread to find a fault writes the record; others leave it.
OS_HD void report_fault(int64_t* record, int64_t site, int64_t position, int64_t value, int64_t bound) {
#ifdef __CUDA_ARCH__
  if (atomicCAS(reinterpret_cast<unsigned long long*>(record), 0ull, static_cast<unsigned long long>(site)) != 0ull) return;
#else
  if (record[0] != 0) return;
  record[0] = site;
#endif
  record[1] = position;
  record[2] = value;
  record[3] = bound;
}

OS_HD float bfloat16_to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }
OS_HD uint16_t float_to_bfloat16(float f) {
  const uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// v rounded to float16 (narrow 1) or bfloat16 (narrow 2), or v (0): where
// the reference rounds an intermediate value to a narrow input's type (the
// normalized values of LayerNormalization, RMSNormalization and
// GroupNormalization; each stage of Attention).
OS_HD float round_to_narrow(float v, int narrow) {
  if (narrow == 1) return half_to_float(float_to_half(v));
  if (narrow == 2) return bfloat16_to_float(float_to_bfloat16(v));
  return v;
}

}  // namespace onnxscope::cuda
