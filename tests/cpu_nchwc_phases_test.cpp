// The phases of a blocked tensor (cpu/kernels/tensor/nchwc_phases.h), which
// NchwcConv runs dilated convolutions on: to_phases against its definition
// written out pixel by pixel, from_phases(to_phases(x)) == x, at 1 and 2
// threads (the copies split rows across the pool).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "cpu/kernels/tensor/nchwc_phases.h"
#include "cpu/thread_pool.h"

using namespace onnxscope::cpu;

namespace {

using Rng = std::mt19937;
int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

PhaseGrid random_grid(Rng& rng) {
  PhaseGrid g;
  g.n = pick(rng, 1, 3);
  g.blocks = pick(rng, 1, 3);
  g.block = pick(rng, 0, 1) ? 16 : 8;
  g.h = pick(rng, 1, 20);
  g.w = pick(rng, 1, 20);
  g.dh = pick(rng, 1, 4);
  g.dw = pick(rng, 1, 4);
  g.top = pick(rng, 0, 5);
  g.left = pick(rng, 0, 5);
  const int64_t bottom = pick(rng, 0, 5), right = pick(rng, 0, 5);
  g.ph = (g.h + g.top + bottom + g.dh - 1) / g.dh;
  g.pw = (g.w + g.left + right + g.dw - 1) / g.dw;
  g.pitch = g.ph + pick(rng, 0, 2);  // rows between phase images (a convolution's output has them)
  return g;
}

std::vector<float> random_values(Rng& rng, size_t n) {
  std::vector<float> v(n);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& f : v) f = u(rng);
  return v;
}

TEST(CpuNchwcPhases, ToPhasesIsItsDefinition) {
  for (int threads : {1, 2}) {
    set_thread_count(threads);
    Rng rng(7 + threads);
    for (int t = 0; t < 200; ++t) {
      const PhaseGrid g = random_grid(rng);
      SCOPED_TRACE(testing::Message() << "case " << t << " n " << g.n << " blocks " << g.blocks << " block " << g.block << " h "
                                      << g.h << " w " << g.w << " d " << g.dh << "x" << g.dw << " top " << g.top << " left "
                                      << g.left << " pitch " << g.pitch);
      const auto src = random_values(rng, static_cast<size_t>(g.n * g.blocks * g.h * g.w * g.block));
      const int64_t rows = g.rows();
      std::vector<float> got(static_cast<size_t>(g.n * g.blocks * rows * g.pw * g.block), 99.0f);
      to_phases(src.data(), g, got.data());
      int bad = 0;
      for (int64_t i = 0; i < g.n; ++i)
        for (int64_t c = 0; c < g.blocks; ++c)
          for (int64_t s = 0; s < rows; ++s)
            for (int64_t x = 0; x < g.pw; ++x)
              for (int64_t l = 0; l < g.block; ++l) {
                const int64_t phase = s / g.pitch, y = s % g.pitch, a = phase / g.dw, b = phase % g.dw;
                const int64_t sy = a + g.dh * y - g.top, sx = b + g.dw * x - g.left;
                float want = 0.0f;
                if (y < g.ph && sy >= 0 && sy < g.h && sx >= 0 && sx < g.w)
                  want = src[static_cast<size_t>((((i * g.blocks + c) * g.h + sy) * g.w + sx) * g.block + l)];
                const float v = got[static_cast<size_t>((((i * g.blocks + c) * rows + s) * g.pw + x) * g.block + l)];
                if (v != want && ++bad <= 3) ADD_FAILURE() << "image " << i << " block " << c << " row " << s << " column " << x;
              }
      ASSERT_EQ(bad, 0);
    }
  }
  set_thread_count(0);
}

TEST(CpuNchwcPhases, FromPhasesUndoesToPhases) {
  for (int threads : {1, 2}) {
    set_thread_count(threads);
    Rng rng(11 + threads);
    for (int t = 0; t < 200; ++t) {
      PhaseGrid g = random_grid(rng);
      g.top = g.left = 0;
      g.ph = (g.h + g.dh - 1) / g.dh;
      g.pw = (g.w + g.dw - 1) / g.dw;
      g.pitch = g.ph + pick(rng, 0, 2);
      SCOPED_TRACE(testing::Message() << "case " << t);
      const auto src = random_values(rng, static_cast<size_t>(g.n * g.blocks * g.h * g.w * g.block));
      std::vector<float> phases(static_cast<size_t>(g.n * g.blocks * g.rows() * g.pw * g.block), 99.0f);
      std::vector<float> back(src.size(), 99.0f);
      to_phases(src.data(), g, phases.data());
      from_phases(phases.data(), g, back.data());
      ASSERT_EQ(back, src);
    }
  }
  set_thread_count(0);
}

}  // namespace
