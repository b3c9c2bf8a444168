// Sum, Mean, Max and Min of float32 inputs of one shape (any number of them),
// one loop over the elements, split across the threads for large tensors.
// The reference's arithmetic (reference/ops/math/variadic.cpp): left to
// right in float, Mean's sum divided by the count in float, Max / Min NaN
// when either operand is. oneDNN's sum primitive took 6 us for two [1, 1]
// tensors (a scikit-learn SVC's ONNX form has six such Sums), most of it
// the primitive call; this loop is the same speed on large tensors.
// Broadcasting inputs go to the elementwise kernels (two) or the reference.
#include <climits>  // INT_MAX
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/target_clones.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

enum class Combine { Sum, Mean, Max, Min };

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();  // Max / Min with a NaN operand (numpy's)

bool same_shape_floats(const KernelContext& ctx) {
  if (ctx.input_count() < 1 || ctx.output_count() != 1) return false;
  const Value* first = ctx.input_value(0);
  if (!first || !first->is_tensor() || first->tensor().dtype() != DataType::Float) return false;
  for (size_t i = 1; i < ctx.input_count(); ++i) {
    const Value* v = ctx.input_value(i);
    if (!v || !v->is_tensor() || v->tensor().dtype() != DataType::Float || v->tensor().shape() != first->tensor().shape())
      return false;
  }
  return true;
}

// y = combine(a, b) over n floats (y may be a: the running result).
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void combine(Combine c, const float* a, const float* b, float* y, int64_t n) {
  switch (c) {
    case Combine::Sum:
    case Combine::Mean:
      for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
      return;
    case Combine::Max:
      for (int64_t i = 0; i < n; ++i) {
        const float u = a[i], v = b[i];
        y[i] = u != u || v != v ? kNaN : u > v ? u : v;
      }
      return;
    case Combine::Min:
      for (int64_t i = 0; i < n; ++i) {
        const float u = a[i], v = b[i];
        y[i] = u != u || v != v ? kNaN : u < v ? u : v;
      }
      return;
  }
}

ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void divide_by(float count, float* y, int64_t n) {
  // A power of two's reciprocal is exact: the product is the quotient's
  // rounding of the same real number, and a multiply is a fraction of a
  // division's time (Mean of two [1,128,768]: 0.72x onnxruntime at 1 thread).
  int e = 0;
  if (std::frexp(count, &e) == 0.5f) {
    const float r = 1.0f / count;
    for (int64_t i = 0; i < n; ++i) y[i] = y[i] * r;
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] = y[i] / count;
}

template <Combine C>
void Variadic(KernelContext& ctx) {
  if (!same_shape_floats(ctx)) ctx.fail("problem not supported by the CPU variadic kernel");
  const Tensor& first = ctx.input(0);
  Tensor& out = uninitialized_output(ctx, 0, DataType::Float, first.shape());
  float* y = out.mutable_data<float>();
  const auto n = static_cast<int64_t>(first.element_count());
  std::vector<const float*> xs;
  for (size_t i = 0; i < ctx.input_count(); ++i) xs.push_back(ctx.input(i).data<float>());
  const auto count = static_cast<float>(ctx.input_count());
  // Chunks of 4096 floats (16 KiB) go through every input while in L1.
  parallel_for(n, 32768, [&](int64_t b, int64_t e) {
    for (int64_t c0 = b; c0 < e; c0 += 4096) {
      const int64_t len = std::min<int64_t>(4096, e - c0);
      if (xs.size() == 1) std::copy(xs[0] + c0, xs[0] + c0 + len, y + c0);
      for (size_t k = 1; k < xs.size(); ++k) combine(C, k == 1 ? xs[0] + c0 : y + c0, xs[k] + c0, y + c0, len);
      if (C == Combine::Mean) divide_by(count, y + c0, len);
    }
  });
}

}  // namespace

void register_variadic_kernels(KernelRegistry& r) {
  // Sum-6 / Mean-6 onward (Sum-1 and Mean-1 had consumed_inputs); Max / Min of
  // float from 6 (Max-8 broadcasts: same shapes are a case of it).
  r.add(KernelDef{"", "Sum", 6, INT_MAX, "cpu-loop", Variadic<Combine::Sum>, same_shape_floats});
  r.add(KernelDef{"", "Mean", 6, INT_MAX, "cpu-loop", Variadic<Combine::Mean>, same_shape_floats});
  r.add(KernelDef{"", "Max", 6, INT_MAX, "cpu-loop", Variadic<Combine::Max>, same_shape_floats});
  r.add(KernelDef{"", "Min", 6, INT_MAX, "cpu-loop", Variadic<Combine::Min>, same_shape_floats});
}

}  // namespace onnxscope::cpu
