// NchwcPool's global poolings (GlobalAveragePool, GlobalMaxPool) on the
// blocked layout (cpu/nchwc.h): [N, C/b, H, W, b] -> [N, C/b, 1, 1, b]. Each
// block's H*W pixels are b contiguous channels, so a block is a few vector
// accumulators run over its plane. Squeeze-excitation blocks (MobileNetV3,
// EfficientNet) pool planes of 7x7 to 56x56 once per block; oneDNN's pooling
// primitive spends several microseconds per call on them at batch 1, more
// than the pooling itself. The mean is summed in double, as the reference's
// is; the maximum is NaN where any value is. Padding channels are zeros in,
// so zeros out.
#include <cmath>
#include <limits>

#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/reduction/blocked_mean.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kGrain = 32768;  // floats per chunk below which threads cost more than they save

// The compiler widens these lane loops to vectors; one function per block
// width so the lanes are a constant (clang cannot clone templates).
#define ONNXSCOPE_BLOCKED_MEAN(NAME, B)                                                                  \
  ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") void NAME(const float* x, int64_t plane, \
                                                                         float* y) {                     \
    double acc[4][B] = {};                                                                               \
    int64_t s = 0;                                                                                       \
    for (; s + 4 <= plane; s += 4)                                                                       \
      for (int k = 0; k < 4; ++k)                                                                        \
        for (int l = 0; l < B; ++l) acc[k][l] += static_cast<double>(x[(s + k) * B + l]);                \
    for (; s < plane; ++s)                                                                               \
      for (int l = 0; l < B; ++l) acc[0][l] += static_cast<double>(x[s * B + l]);                        \
    for (int l = 0; l < B; ++l)                                                                          \
      y[l] = static_cast<float>(((acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l])) / static_cast<double>(plane)); \
  }
#define ONNXSCOPE_BLOCKED_MAX(NAME, B)                                                                   \
  ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") void NAME(const float* x, int64_t plane, \
                                                                         float* y) {                     \
    float m[4][B];                                                                                       \
    int nan[B] = {};                                                                                     \
    for (int k = 0; k < 4; ++k)                                                                          \
      for (int l = 0; l < B; ++l) m[k][l] = -std::numeric_limits<float>::infinity();                     \
    int64_t s = 0;                                                                                       \
    for (; s + 4 <= plane; s += 4)                                                                       \
      for (int k = 0; k < 4; ++k)                                                                        \
        for (int l = 0; l < B; ++l) {                                                                    \
          const float v = x[(s + k) * B + l];                                                            \
          m[k][l] = v > m[k][l] ? v : m[k][l];                                                           \
          nan[l] |= v != v;                                                                              \
        }                                                                                                \
    for (; s < plane; ++s)                                                                               \
      for (int l = 0; l < B; ++l) {                                                                      \
        const float v = x[s * B + l];                                                                    \
        m[0][l] = v > m[0][l] ? v : m[0][l];                                                             \
        nan[l] |= v != v;                                                                                \
      }                                                                                                  \
    for (int l = 0; l < B; ++l) {                                                                        \
      const float a = m[0][l] > m[1][l] ? m[0][l] : m[1][l], b = m[2][l] > m[3][l] ? m[2][l] : m[3][l];  \
      y[l] = nan[l] ? std::numeric_limits<float>::quiet_NaN() : (a > b ? a : b);                         \
    }                                                                                                    \
  }
ONNXSCOPE_BLOCKED_MEAN(mean16, 16)
ONNXSCOPE_BLOCKED_MEAN(mean8, 8)
ONNXSCOPE_BLOCKED_MAX(max16, 16)
ONNXSCOPE_BLOCKED_MAX(max8, 8)
#undef ONNXSCOPE_BLOCKED_MEAN
#undef ONNXSCOPE_BLOCKED_MAX

}  // namespace

void blocked_plane_mean(const float* x, int64_t plane, int64_t block, float* y) {
  (block == 16 ? mean16 : mean8)(x, plane, y);
}

namespace {

bool accepts(const KernelContext& ctx) {
  if (ctx.input_count() != 1 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return false;
  const std::string op = ctx.attr_string("op", "");
  if (op != "GlobalAveragePool" && op != "GlobalMaxPool") return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const int64_t block = ctx.attr_int("block", 0), channels = ctx.attr_int("channels", 0);
  if (x.dtype() != DataType::Float || (block != 8 && block != 16) || x.rank() != 5 || x.shape()[4] != block ||
      x.element_count() == 0)
    return false;
  return blocks_hold(channels, x.shape()[1], block);
}

void GlobalPoolBlocked(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Shape& s = x.shape();
  const int64_t block = s[4], planes = s[0] * s[1], plane = s[2] * s[3];
  const bool max = ctx.attr_string("op", "") == "GlobalMaxPool";
  Tensor& yt = uninitialized_output(ctx, 0, DataType::Float, Shape{s[0], s[1], 1, 1, block});
  const float* in = x.data<float>();
  float* y = yt.mutable_data<float>();
  auto* fn = block == 16 ? (max ? max16 : mean16) : (max ? max8 : mean8);
  parallel_for(planes, std::max<int64_t>(1, kGrain / (plane * block)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) fn(in + p * plane * block, plane, y + p * block);
  });
}

}  // namespace

void register_global_pool_nchwc_kernels(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcPool, 1, INT_MAX, "cpu-simd", GlobalPoolBlocked, accepts});
}

}  // namespace onnxscope::cpu
