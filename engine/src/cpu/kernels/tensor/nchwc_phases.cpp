// to_phases / from_phases (nchwc_phases.h): copies of whole channel blocks
// (one 64-byte cache line at block 16), rows split across the thread pool.
#include "cpu/kernels/tensor/nchwc_phases.h"

#include <algorithm>
#include <cstring>

#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

constexpr int64_t kGrain = 32768;  // floats a chunk below which a second thread costs more than it saves

int64_t rows_per_chunk(int64_t row_floats) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(1, row_floats)); }

}  // namespace

void to_phases(const float* src, const PhaseGrid& g, float* dst) {
  const int64_t B = g.block, rows = g.rows();
  const size_t bytes = static_cast<size_t>(B) * sizeof(float);
  // One work item: a stacked row of one image's channel block.
  parallel_for(g.n * g.blocks * rows, rows_per_chunk(g.pw * B), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t s = r % rows, ic = r / rows;  // ic: image * blocks + block
      const int64_t phase = s / g.pitch, y = s % g.pitch;
      float* out = dst + r * g.pw * B;
      const int64_t sy = phase / g.dw + g.dh * y - g.top;
      if (y >= g.ph || sy < 0 || sy >= g.h) {
        std::memset(out, 0, static_cast<size_t>(g.pw) * bytes);
        continue;
      }
      const float* row = src + (ic * g.h + sy) * g.w * B;
      const int64_t b = phase % g.dw;
      for (int64_t x = 0; x < g.pw; ++x) {
        const int64_t sx = b + g.dw * x - g.left;
        if (sx < 0 || sx >= g.w)
          std::memset(out + x * B, 0, bytes);
        else
          std::memcpy(out + x * B, row + sx * B, bytes);
      }
    }
  });
}

void from_phases(const float* src, const PhaseGrid& g, float* dst) {
  const int64_t B = g.block, rows = g.rows();
  const size_t bytes = static_cast<size_t>(B) * sizeof(float);
  // One work item: a row of one output image's channel block.
  parallel_for(g.n * g.blocks * g.h, rows_per_chunk(g.w * B), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t y = r % g.h, ic = r / g.h;
      float* out = dst + r * g.w * B;
      const float* phase_rows = src + (ic * rows + (y % g.dh) * g.dw * g.pitch + y / g.dh) * g.pw * B;
      for (int64_t x = 0; x < g.w; ++x)
        std::memcpy(out + x * B, phase_rows + ((x % g.dw) * g.pitch * g.pw + x / g.dw) * B, bytes);
    }
  });
}

}  // namespace onnxscope::cpu
