// RMSNormalization (opset 23, and onnxscope.cpu's for fuse-rmsnorm below it) on float32: each row of the normalized axes is
// reduced in float (stash_type 1), y = x / sqrt(mean(x^2) + epsilon) * scale,
// as the spec's function body computes it, rows split across the thread pool.
// Scale must have the normalized shape (maybe without leading 1s); other
// broadcasts and types go to the reference.
#include <Eigen/Core>
#include <cmath>

#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using CMap = Eigen::Map<const Arr>;
using Map = Eigen::Map<Arr>;

// Elements per normalized row, or -1 when the kernel does not take the problem.
int64_t row_size(const KernelContext& ctx) {
  if (ctx.input_count() != 2 || (ctx.output_count() > 1 && ctx.output_wanted(1))) return -1;  // (inv_std_var: the reference's)
  const Value* x = ctx.input_value(0);
  const Value* scale = ctx.input_value(1);
  if (!x || !x->is_tensor() || !scale || !scale->is_tensor()) return -1;
  const Tensor& t = x->tensor();
  if (t.dtype() != DataType::Float || scale->tensor().dtype() != DataType::Float) return -1;
  if (ctx.attr_int("stash_type", 1) != 1 || t.rank() == 0) return -1;
  const int64_t rank = t.rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -rank || axis >= rank) return -1;
  if (axis < 0) axis += rank;
  int64_t n = 1;
  for (int64_t d = axis; d < rank; ++d) n *= t.shape()[static_cast<size_t>(d)];
  const Tensor& s = scale->tensor();
  if (s.shape().size() > static_cast<size_t>(rank - axis) || static_cast<int64_t>(s.element_count()) != n) return -1;
  return n;
}

bool accepts(const KernelContext& ctx) { return row_size(ctx) > 0; }

void RMSNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = row_size(ctx);
  if (n <= 0) ctx.fail("problem not supported by the CPU RMSNormalization kernel");
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  const int64_t rows = static_cast<int64_t>(x.element_count()) / n;
  const float* in = x.data<float>();
  const float* scale = ctx.input(1).data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / n), [&](int64_t r0, int64_t r1) {
    CMap g(scale, n);
    for (int64_t r = r0; r < r1; ++r) {
      CMap v(in + r * n, n);
      // One division per row, not per element (vdivps costs several multiplies).
      const float inv = 1.0f / std::sqrt(v.square().mean() + eps);
      Map(out + r * n, n) = v * inv * g;
    }
  });
}

}  // namespace

void register_rms_norm_kernels(KernelRegistry& r) {
  r.add(KernelDef{"", "RMSNormalization", 23, INT_MAX, "cpu-eigen", RMSNormalization, accepts});
  r.add(KernelDef{kCpuDomain, kRMSNorm, 1, INT_MAX, "cpu-eigen", RMSNormalization, accepts});  // fuse-rmsnorm below opset 23
  // ONNX Runtime's SimplifiedLayerNormalization-1 in the onnx domain (its optimizer writes it for Llama-style models)
  r.add(KernelDef{"", "SimplifiedLayerNormalization", 1, INT_MAX, "cpu-eigen", RMSNormalization, accepts});
}

}  // namespace onnxscope::cpu
