// InstanceNormalization and GroupNormalization (opset 21 on: scale and bias
// per channel) of float32 [N, C, ...] tensors: each (batch, group) block is
// contiguous, its mean and variance taken in float (two passes, as
// stash_type 1 says, over the values less the block's first) with Eigen,
// then each channel shifted and scaled;
// blocks split across the thread pool. InstanceNormalization is the group
// count C. Other types and the per-group scale of GroupNormalization-18 go to
// the reference.
#include <Eigen/Core>
#include <cmath>
#include <optional>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using CMap = Eigen::Map<const Arr>;
using Map = Eigen::Map<Arr>;

struct Problem {
  int64_t n = 0, c = 0, spatial = 1, groups = 0;
  float eps = 1e-5f;
};

bool is_float_vector(const Value* v, int64_t n) {
  return v && v->is_tensor() && v->tensor().dtype() == DataType::Float && v->tensor().rank() == 1 &&
         static_cast<int64_t>(v->tensor().element_count()) == n;
}

std::optional<Problem> problem_of(const KernelContext& ctx, bool group) {
  if (ctx.input_count() != 3 || !ctx.input_value(0) || !ctx.input_value(0)->is_tensor()) return std::nullopt;
  const Tensor& x = ctx.input_value(0)->tensor();
  if (x.dtype() != DataType::Float || x.rank() < 3 || x.element_count() == 0) return std::nullopt;
  Problem p;
  p.n = x.shape()[0];
  p.c = x.shape()[1];
  for (size_t d = 2; d < x.shape().size(); ++d) p.spatial *= x.shape()[d];
  if (!is_float_vector(ctx.input_value(1), p.c) || !is_float_vector(ctx.input_value(2), p.c)) return std::nullopt;
  p.eps = ctx.attr_float("epsilon", 1e-5f);
  if (group) {
    if (ctx.opset_version() < 21 || ctx.attr_int("stash_type", 1) != 1) return std::nullopt;
    p.groups = ctx.attr_int("num_groups", 0);
    if (p.groups <= 0 || p.c % p.groups != 0) return std::nullopt;
  } else {
    p.groups = p.c;
  }
  return p;
}

void run(KernelContext& ctx, const Problem& p) {
  const Tensor& x = ctx.input(0);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const float* in = x.data<float>();
  const float* scale = ctx.input(1).data<float>();
  const float* bias = ctx.input(2).data<float>();
  float* out = y.mutable_data<float>();
  const int64_t cg = p.c / p.groups, block = cg * p.spatial;
  parallel_for(p.n * p.groups, std::max<int64_t>(1, 16384 / block), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      // The statistics of x - x0, the block's first value (two passes in
      // float), and each value taken as ((x - x0) - d) * s + bias, the mean
      // being x0 + d: x - x0 is exact where the values are near one another,
      // so a mean large against the spread does not cancel. Scaling x and
      // the mean apart, x * s + (bias - mean * s), gave a one-element group
      // (s = 1 / sqrt(eps)) its bias 4.8e-5 off, and values of 1000 +- 0.01
      // results 3e-3 off (the float mean of x alone: 8e-3).
      CMap v(in + b * block, block);
      const float x0 = v[0];
      const float d = (v - x0).mean();
      const float var = ((v - x0) - d).square().mean();
      const float inv = 1.0f / std::sqrt(var + p.eps);
      const int64_t c0 = (b % p.groups) * cg;
      for (int64_t k = 0; k < cg; ++k) {
        const float s = scale[c0 + k] * inv, t = bias[c0 + k];
        Map(out + b * block + k * p.spatial, p.spatial) = ((CMap(in + b * block + k * p.spatial, p.spatial) - x0) - d) * s + t;
      }
    }
  });
}

bool instance_accepts(const KernelContext& ctx) { return problem_of(ctx, false).has_value(); }
bool group_accepts(const KernelContext& ctx) { return problem_of(ctx, true).has_value(); }
void InstanceNormalization(KernelContext& ctx) { run(ctx, *problem_of(ctx, false)); }
void GroupNormalization(KernelContext& ctx) { run(ctx, *problem_of(ctx, true)); }

}  // namespace

void register_instance_group_norm_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "InstanceNormalization", 6, INT_MAX, "cpu-eigen", InstanceNormalization, instance_accepts});
  r.add(KernelDef{"", "GroupNormalization", 21, INT_MAX, "cpu-eigen", GroupNormalization, group_accepts});
}

}  // namespace onnxscope::cpu
