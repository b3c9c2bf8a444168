// LayerNormalization (opset 17+, and ONNX Runtime's onnx-domain one below) on float32: each row of the normalized
// axes is reduced in float (stash_type 1) with Eigen, rows split across the
// thread pool. Scale and bias must have the normalized shape (the common
// case); other broadcasts, other types and the optional Mean/InvStdDev
// outputs go to the reference kernel.
#include <Eigen/Core>
#include <cmath>

#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/optimizer.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using CMap = Eigen::Map<const Arr>;
using Map = Eigen::Map<Arr>;

// Elements per normalized row, or -1 when the kernel does not take the problem.
int64_t row_size(const KernelContext& ctx) {
  const Value* x = ctx.input_value(0);
  const Value* scale = ctx.input_value(1);
  const Value* bias = ctx.input_value(2);
  if (!x || !x->is_tensor() || !scale || !scale->is_tensor()) return -1;
  const Tensor& t = x->tensor();
  if (t.dtype() != DataType::Float || scale->tensor().dtype() != DataType::Float) return -1;
  if (ctx.attr_int("stash_type", 1) != 1) return -1;
  for (size_t i = 1; i < ctx.output_count(); ++i)
    if (ctx.output_wanted(i)) return -1;
  const int64_t rank = static_cast<int64_t>(t.shape().size());
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -rank || axis >= rank || rank == 0) return -1;
  if (axis < 0) axis += rank;
  int64_t n = 1;
  for (int64_t d = axis; d < rank; ++d) n *= t.shape()[static_cast<size_t>(d)];
  auto matches = [&](const Tensor& p) {
    if (p.dtype() != DataType::Float || p.shape().size() > static_cast<size_t>(rank - axis)) return false;
    return static_cast<int64_t>(p.element_count()) == n;  // the normalized shape, maybe without leading 1s
  };
  if (!matches(scale->tensor())) return -1;
  if (bias && (!bias->is_tensor() || !matches(bias->tensor()))) return -1;
  return n;
}

bool accepts(const KernelContext& ctx) { return row_size(ctx) > 0; }

void LayerNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = row_size(ctx);
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  const Tensor* bias = ctx.optional_input(2);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const int64_t rows = static_cast<int64_t>(x.element_count()) / n;
  const float* in = x.data<float>();
  const float* scale = ctx.input(1).data<float>();
  const float* b = bias ? bias->data<float>() : nullptr;
  float* out = y.mutable_data<float>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
    CMap g(scale, n);
    for (int64_t r = r0; r < r1; ++r) {
      CMap v(in + r * n, n);
      Map o(out + r * n, n);
      const float mean = v.mean();
      const float var = (v - mean).square().mean();
      const float inv = 1.0f / std::sqrt(var + eps);
      if (b) o = (v - mean) * inv * g + CMap(b, n);
      else o = (v - mean) * inv * g;
    }
  });
}

}  // namespace

void register_layer_norm_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "LayerNormalization", 17, INT_MAX, "cpu-eigen", LayerNormalization, accepts});
  // ONNX Runtime's own LayerNormalization-1 in the onnx domain (its optimizer writes it below opset 17)
  r.add(KernelDef{"", "LayerNormalization", 1, 16, "cpu-eigen", LayerNormalization, accepts});
  r.add(KernelDef{kCpuDomain, kLayerNorm, 1, INT_MAX, "cpu-eigen", LayerNormalization, accepts});
}

}  // namespace onnxscope::cpu
