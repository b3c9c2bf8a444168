// onnxscope.cpu::NchwcSqueezeExcite (fuse-squeeze-excitation, contract in
// cpu/nchwc.h) on float32: per image, the channel means (as NchwcPool
// computes them), two small matrix-vector products with their activations,
// then every pixel scaled by its channel's gate. The products are summed in
// float, as the unfused convolutions sum them (in another order); the scaling
// is the Mul's own product, so only the gates' last bits can differ from the
// unfused graph. Planes and images are split across the thread pool.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/kernels/reduction/blocked_mean.h"
#include "cpu/nchwc.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

enum class Act { None, Relu, LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Swish, Tanh, Clip };

struct Activation {
  Act kind = Act::None;
  float a = 0, b = 0;
};

// The activation `name` / `name`_params of the node, or false when this kernel does not compute it.
bool parse(const KernelContext& ctx, const char* name, Activation& out) {
  const std::string op = ctx.attr_string(name, "");
  const std::vector<float> p = ctx.attr_floats(std::string(name) + "_params");
  struct Known {
    const char* op;
    Act kind;
    size_t params;
  };
  static constexpr Known known[] = {{"", Act::None, 0},          {"Relu", Act::Relu, 0},
                                    {"LeakyRelu", Act::LeakyRelu, 1}, {"Sigmoid", Act::Sigmoid, 0},
                                    {"HardSigmoid", Act::HardSigmoid, 2}, {"HardSwish", Act::HardSwish, 0},
                                    {"Swish", Act::Swish, 1},        {"Tanh", Act::Tanh, 0},
                                    {"Clip", Act::Clip, 2}};
  for (const Known& k : known)
    if (op == k.op) {
      if (k.kind != Act::None && p.size() != k.params) return false;
      out.kind = k.kind;
      out.a = p.size() > 0 ? p[0] : 0.f;
      out.b = p.size() > 1 ? p[1] : 0.f;
      return true;
    }
  return false;
}

double sigmoid(double v) { return v >= 0 ? 1 / (1 + std::exp(-v)) : std::exp(v) / (1 + std::exp(v)); }

// Comparisons written so that NaN passes through, as the activations' kernels let it.
float apply(const Activation& f, float x) {
  const double v = x;
  switch (f.kind) {
    case Act::None: return x;
    case Act::Relu: return v < 0 ? 0.f : x;
    case Act::LeakyRelu: return v < 0 ? static_cast<float>(f.a * v) : x;
    case Act::Sigmoid: return static_cast<float>(sigmoid(v));
    case Act::HardSigmoid: {
      const double t = f.a * v + f.b;
      return static_cast<float>(t < 0 ? 0 : t > 1 ? 1 : t);
    }
    case Act::HardSwish: {
      const double t = v / 6 + 0.5;
      return static_cast<float>(v * (t < 0 ? 0 : t > 1 ? 1 : t));
    }
    case Act::Swish: return static_cast<float>(v * sigmoid(f.a * v));
    case Act::Tanh: return static_cast<float>(std::tanh(v));
    case Act::Clip: {  // min(max(x, lo), hi), as Clip orders them
      const float t = x < f.a ? f.a : x;
      return t > f.b ? f.b : t;
    }
  }
  return x;
}

// The products read their weights as panels: 64 outputs' weights, term by
// term, contiguous ([n / 64][count][64], zero past n). Read in place, a
// 64-output slice of the transposed matrix was 256 bytes every row (up to
// 3840 bytes apart): the products ran at about 12 GB/s, 8% of
// mobilenet_v3_large's time at 1 thread.
constexpr int64_t kPanel = 64;

void to_panels(const float* w, int64_t n, int64_t count, std::vector<float>& t) {  // w: [n][count]
  const int64_t panels = (n + kPanel - 1) / kPanel;
  t.assign(static_cast<size_t>(panels * count * kPanel), 0.f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < count; ++k) t[static_cast<size_t>(((j / kPanel) * count + k) * kPanel + j % kPanel)] = w[j * count + k];
}

// out[l] += sum_k v[k] * panel[k * 64 + l] for l < cols (at most 64), the k
// terms in order in a vector lane: no horizontal sums, so the result does not
// depend on the thread count or on which panels a call takes.
__attribute__((target("avx512f"))) void panel_avx512(const float* panel, const float* v, int64_t count, int64_t cols,
                                                      float* out) {
  __mmask16 m[4];
  __m512 a[4];
  for (int q = 0; q < 4; ++q) {
    const int64_t left = std::clamp<int64_t>(cols - 16 * q, 0, 16);
    m[q] = static_cast<__mmask16>((uint32_t{1} << left) - 1);
    a[q] = _mm512_maskz_loadu_ps(m[q], out + 16 * q);
  }
  for (int64_t k = 0; k < count; ++k) {
    const __m512 vk = _mm512_set1_ps(v[k]);
    const float* w = panel + k * kPanel;
    for (int q = 0; q < 4; ++q) a[q] = _mm512_fmadd_ps(vk, _mm512_loadu_ps(w + 16 * q), a[q]);
  }
  for (int q = 0; q < 4; ++q) _mm512_mask_storeu_ps(out + 16 * q, m[q], a[q]);
}

// The same for four images at once (v[i], out[i]): each row of the panel
// loaded once for the four, every sum still its own k terms in order.
__attribute__((target("avx512f"))) void panel4_avx512(const float* panel, const float* const* v, int64_t count,
                                                       int64_t cols, float* const* out) {
  __mmask16 m[4];
  __m512 a[4][4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    const int64_t left = std::clamp<int64_t>(cols - 16 * q, 0, 16);
    m[q] = static_cast<__mmask16>((uint32_t{1} << left) - 1);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) a[i][q] = _mm512_maskz_loadu_ps(m[q], out[i] + 16 * q);
  }
  for (int64_t k = 0; k < count; ++k) {
    const float* w = panel + k * kPanel;
    __m512 wq[4];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) wq[q] = _mm512_loadu_ps(w + 16 * q);
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m512 vk = _mm512_set1_ps(v[i][k]);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) a[i][q] = _mm512_fmadd_ps(vk, wq[q], a[i][q]);
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) _mm512_mask_storeu_ps(out[i] + 16 * q, m[q], a[i][q]);
}

ONNXSCOPE_TARGET_CLONES(ONNXSCOPE_CLONE_AVX2, "default") void panel_plain(const float* panel, const float* v, int64_t count,
                                                                   int64_t cols, float* out) {
  float acc[kPanel] = {};
  for (int64_t l = 0; l < cols; ++l) acc[l] = out[l];
  for (int64_t k = 0; k < count; ++k)
    for (int64_t l = 0; l < kPanel; ++l) acc[l] += v[k] * panel[k * kPanel + l];
  for (int64_t l = 0; l < cols; ++l) out[l] = acc[l];
}

void gemv_panel(const float* panel, const float* v, int64_t count, int64_t cols, float* out) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  if (avx512) panel_avx512(panel, v, count, cols, out);
  else panel_plain(panel, v, count, cols, out);
}

// out[i] += v[i] x panel for `n` images: four at a time where the CPU has AVX-512.
void gemv_panel_images(const float* panel, const float* const* v, int64_t n, int64_t count, int64_t cols,
                       float* const* out) {
  static const bool avx512 = ONNXSCOPE_CPU_AVX512("avx512f");
  int64_t i = 0;
  if (avx512)
    for (; i + 4 <= n; i += 4) panel4_avx512(panel, v + i, count, cols, out + i);
  for (; i < n; ++i) gemv_panel(panel, v[i], count, cols, out[i]);
}

// W1 [R, C] and W2 [C, R] as panels (to_panels), made on the first call and
// kept with the node (KernelContext::kernel_state) while the weights stay where they are.
struct WeightPanels {
  const float* w1 = nullptr;
  const float* w2 = nullptr;
  int64_t channels = 0, reduced = 0;
  std::vector<float> w1p, w2p;
};

const WeightPanels& weight_panels(const KernelContext& ctx, const float* w1, const float* w2, int64_t C, int64_t R,
                                  WeightPanels& local) {
  std::shared_ptr<void>* slot = ctx.kernel_state();
  if (slot && !*slot) *slot = std::make_shared<WeightPanels>();
  WeightPanels& t = slot ? *static_cast<WeightPanels*>(slot->get()) : local;
  if (t.w1 == w1 && t.w2 == w2 && t.channels == C && t.reduced == R) return t;
  to_panels(w1, R, C, t.w1p);
  to_panels(w2, C, R, t.w2p);
  t.w1 = w1;
  t.w2 = w2;
  t.channels = C;
  t.reduced = R;
  return t;
}

#define ONNXSCOPE_SCALE_PLANE(NAME, B)                                                                        \
  ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default") void NAME(const float* x, const float* s,      \
                                                                         int64_t plane, float* y) {          \
    for (int64_t p = 0; p < plane; ++p)                                                                       \
      for (int l = 0; l < B; ++l) y[p * B + l] = x[p * B + l] * s[l];                                         \
  }
ONNXSCOPE_SCALE_PLANE(scale16, 16)
ONNXSCOPE_SCALE_PLANE(scale8, 8)
#undef ONNXSCOPE_SCALE_PLANE

struct Shapes {
  int64_t images = 0, blocks = 0, plane = 0, block = 0, channels = 0, reduced = 0;
};

bool shapes_of(const KernelContext& ctx, Shapes& s) {
  if (ctx.input_count() != 5) return false;
  for (size_t i : {0u, 1u, 3u})
    if (!ctx.input_value(i) || !ctx.input_value(i)->is_tensor() || ctx.input_value(i)->tensor().dtype() != DataType::Float)
      return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  const Tensor& w1 = ctx.input_value(1)->tensor();
  const Tensor& w2 = ctx.input_value(3)->tensor();
  s.block = ctx.attr_int("block", 0);
  s.channels = ctx.attr_int("channels", 0);
  if ((s.block != 8 && s.block != 16) || x.rank() != 5 || x.shape()[4] != s.block || x.element_count() == 0 ||
      !blocks_hold(s.channels, x.shape()[1], s.block))
    return false;
  s.images = x.shape()[0];
  s.blocks = x.shape()[1];
  s.plane = x.shape()[2] * x.shape()[3];
  s.reduced = w1.rank() == 4 ? w1.shape()[0] : 0;
  if (s.reduced < 1 || w1.shape() != Shape{s.reduced, s.channels, 1, 1} || w2.shape() != Shape{s.channels, s.reduced, 1, 1})
    return false;
  for (size_t i : {2u, 4u}) {
    const Value* b = ctx.input_value(i);
    if (!b) continue;
    if (!b->is_tensor() || b->tensor().dtype() != DataType::Float ||
        b->tensor().shape() != Shape{i == 2 ? s.reduced : s.channels})
      return false;
  }
  Activation a;
  return parse(ctx, "activation", a) && parse(ctx, "gate", a);
}

bool accepts(const KernelContext& ctx) {
  Shapes s;
  return shapes_of(ctx, s);
}

void SqueezeExcite(KernelContext& ctx) {
  Shapes s;
  if (!shapes_of(ctx, s)) ctx.fail("NchwcSqueezeExcite: inputs do not match (see cpu/nchwc.h)");
  Activation act, gate;
  parse(ctx, "activation", act);
  parse(ctx, "gate", gate);
  const Tensor& x = ctx.input(0);
  WeightPanels local;
  const WeightPanels& wt = weight_panels(ctx, ctx.input(1).data<float>(), ctx.input(3).data<float>(), s.channels, s.reduced, local);
  const Tensor* b1 = ctx.optional_input(2);
  const Tensor* b2 = ctx.optional_input(4);
  const int64_t padded = s.blocks * s.block, planes = s.images * s.blocks, plane_floats = s.plane * s.block;
  // Means, then gates, per image: [images, padded] (padding channels' gates stay 0).
  std::vector<float> mean(static_cast<size_t>(s.images * padded)), scale(mean.size(), 0.f);
  const int64_t grain = std::max<int64_t>(1, 32768 / plane_floats);
  const float* in = x.data<float>();
  parallel_for(planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) blocked_plane_mean(in + p * plane_floats, s.plane, s.block, mean.data() + p * s.block);
  });
  // Both products split by panels as well as groups of images (at batch 1
  // one thread alone read MobileNetV3's 960 x 240 weights twice per block);
  // the images of a group take turns on one panel while it is in cache (one
  // image per panel read MobileNetV3-Large's 960 x 240 panels from memory
  // eight times per block at batch 8). Each sum is the same either way.
  std::vector<float> hidden(static_cast<size_t>(s.images * s.reduced));
  constexpr int64_t kGroup = 8;  // images a work item takes per panel
  const int64_t groups = (s.images + kGroup - 1) / kGroup;
  const int64_t hidden_chunks = (s.reduced + kPanel - 1) / kPanel, gate_chunks = (s.channels + kPanel - 1) / kPanel;
  parallel_for(groups * hidden_chunks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = (t / hidden_chunks) * kGroup, j0 = (t % hidden_chunks) * kPanel, cols = std::min(kPanel, s.reduced - j0);
      const int64_t n1 = std::min(s.images, n0 + kGroup);
      const float* v[kGroup];
      float* h[kGroup];
      for (int64_t n = n0; n < n1; ++n) {
        v[n - n0] = mean.data() + n * padded;
        h[n - n0] = hidden.data() + n * s.reduced + j0;
        for (int64_t r = 0; r < cols; ++r) h[n - n0][r] = b1 ? b1->data<float>()[j0 + r] : 0.f;
      }
      gemv_panel_images(wt.w1p.data() + (j0 / kPanel) * s.channels * kPanel, v, n1 - n0, s.channels, cols, h);
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t r = 0; r < cols; ++r) h[n - n0][r] = apply(act, h[n - n0][r]);
    }
  });
  parallel_for(groups * gate_chunks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = (t / gate_chunks) * kGroup, j0 = (t % gate_chunks) * kPanel, cols = std::min(kPanel, s.channels - j0);
      const int64_t n1 = std::min(s.images, n0 + kGroup);
      const float* v[kGroup];
      float* g[kGroup];
      for (int64_t n = n0; n < n1; ++n) {
        v[n - n0] = hidden.data() + n * s.reduced;
        g[n - n0] = scale.data() + n * padded + j0;
        for (int64_t c = 0; c < cols; ++c) g[n - n0][c] = b2 ? b2->data<float>()[j0 + c] : 0.f;
      }
      gemv_panel_images(wt.w2p.data() + (j0 / kPanel) * s.reduced * kPanel, v, n1 - n0, s.reduced, cols, g);
      for (int64_t n = n0; n < n1; ++n)
        for (int64_t c = 0; c < cols; ++c) g[n - n0][c] = apply(gate, g[n - n0][c]);
    }
  });
  // An image that dies here is scaled where it lies (its means are taken).
  std::shared_ptr<Buffer> in_place = ctx.reusable_input_buffer(0);
  if (in_place && in_place->size() < x.byte_size()) in_place.reset();
  if (in_place) ctx.output(0) = Value(Tensor::from_buffer(DataType::Float, x.shape(), in_place));
  Tensor& yt = in_place ? ctx.output(0).tensor() : uninitialized_output(ctx, 0, DataType::Float, x.shape());
  float* y = yt.mutable_data<float>();
  auto* fn = s.block == 16 ? scale16 : scale8;
  parallel_for(planes, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      fn(in + p * plane_floats, scale.data() + p * s.block, s.plane, y + p * plane_floats);
  });
}

}  // namespace

void register_squeeze_excite_nchwc_kernels(KernelRegistry& r) {
  r.add(KernelDef{"onnxscope.cpu", kNchwcSqueezeExcite, 1, INT_MAX, "cpu-simd", SqueezeExcite, accepts});
}

}  // namespace onnxscope::cpu
