// Inference BatchNormalization (opset 9 on, training_mode 0) of float32
// [N, C, ...] tensors as a per-channel affine map, y = x * s[c] + t[c] with
// s = scale / sqrt(var + epsilon) and t = B - mean * s, in loops built for
// AVX-512, AVX2 and the baseline (target_clones); (batch, channel) planes
// split across the thread pool. oneDNN's primitive on a plain NCHW tensor was
// 4x slower than onnxruntime here. The graph passes fold most batch norms
// into the convolution before them; this runs the rest.
#include <cmath>
#include <optional>
#include <vector>

#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void affine(const float* x, float s, float t, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s + t;
}

bool accepts(const KernelContext& ctx) {
  if (ctx.opset_version() < 9 || ctx.input_count() != 5 || ctx.attr_int("training_mode", 0) != 0) return false;
  for (size_t i = 1; i < ctx.output_count(); ++i)
    if (ctx.output_wanted(i)) return false;
  const Value* x = ctx.input_value(0);
  if (!x || !x->is_tensor() || x->tensor().dtype() != DataType::Float || x->tensor().rank() < 2) return false;
  const int64_t c = x->tensor().shape()[1];
  for (size_t i = 1; i < 5; ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || !v->is_tensor() || v->tensor().dtype() != DataType::Float || v->tensor().rank() != 1 ||
        static_cast<int64_t>(v->tensor().element_count()) != c)
      return false;
  }
  return true;
}

void BatchNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.shape()[0], c = x.shape()[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < x.shape().size(); ++d) spatial *= x.shape()[d];
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  const float* scale = ctx.input(1).data<float>();
  const float* bias = ctx.input(2).data<float>();
  const float* mean = ctx.input(3).data<float>();
  const float* var = ctx.input(4).data<float>();
  std::vector<float> s(static_cast<size_t>(c)), t(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) {
    // In double, rounded once: as close to the reference's (x - mean) / sqrt(var + eps) * scale + B as one affine map gets.
    const double sk = static_cast<double>(scale[k]) / std::sqrt(static_cast<double>(var[k]) + static_cast<double>(eps));
    s[static_cast<size_t>(k)] = static_cast<float>(sk);
    t[static_cast<size_t>(k)] = static_cast<float>(static_cast<double>(bias[k]) - static_cast<double>(mean[k]) * sk);
  }
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  if (y.element_count() == 0) return;
  const float* in = x.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(n * c, std::max<int64_t>(1, 16384 / std::max<int64_t>(spatial, 1)), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const size_t k = static_cast<size_t>(p % c);
      affine(in + p * spatial, s[k], t[k], out + p * spatial, spatial);
    }
  });
}

}  // namespace

void register_batch_norm_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "BatchNormalization", 9, INT_MAX, "cpu-simd", BatchNormalization, accepts});
}

}  // namespace onnxscope::cpu
