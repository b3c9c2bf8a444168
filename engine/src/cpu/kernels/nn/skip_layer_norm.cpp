// com.microsoft SkipLayerNormalization and SkipSimplifiedLayerNormalization
// (ONNX Runtime's transformers optimizer fuses BERT's residual Add, bias Add
// and LayerNorm into the first, Llama's residual and RMSNorm into the second)
// on float32: per row of the hidden axis, s = input + skip (+ bias) in
// float, then the row's statistics with Eigen, rows split across the thread
// pool. skip of the input's shape or its trailing dims; gamma, beta, bias
// [H]. The sum output (input_skip_bias_sum) is written when wanted; the
// training statistics (mean, inv_std_var) go to the reference kernel.
#include <Eigen/Core>
#include <cmath>
#include <vector>

#include "cpu/kernels/kernels.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

using Arr = Eigen::Array<float, Eigen::Dynamic, 1>;
using CMap = Eigen::Map<const Arr>;
using Map = Eigen::Map<Arr>;

const Tensor* float_at(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return v && v->is_tensor() && v->tensor().dtype() == DataType::Float ? &v->tensor() : nullptr;
}

// The hidden size H, or -1 when the kernel does not take the problem.
int64_t hidden_of(const KernelContext& ctx, bool simplified) {
  const Tensor* x = float_at(ctx, 0);
  const Tensor* skip = float_at(ctx, 1);
  const Tensor* gamma = float_at(ctx, 2);
  if (!x || !skip || !gamma || x->rank() < 2 || x->element_count() == 0) return -1;
  if (ctx.output_wanted(1) || ctx.output_wanted(2)) return -1;
  const int64_t h = x->shape().back();
  auto vec = [&](size_t i) {  // an absent optional input, or a float [H]
    if (ctx.input_count() <= i || !ctx.input_value(i)) return true;
    const Tensor* p = float_at(ctx, i);
    return p && p->rank() == 1 && p->shape()[0] == h;
  };
  if (!vec(2) || !vec(3) || (!simplified && !vec(4)) || ctx.input_count() > (simplified ? 4u : 5u)) return -1;
  // skip: the input's shape, or its trailing dims (leading ones dropped).
  const Shape& s = x->shape();
  const Shape& k = skip->shape();
  size_t lead = 0;
  while (lead + 1 < k.size() && k[lead] == 1) ++lead;
  const size_t kept = k.size() - lead;
  if (k.size() > s.size() || kept < 1) return -1;
  for (size_t d = 0; d < kept; ++d)
    if (k[lead + d] != s[s.size() - kept + d]) return -1;
  return h;
}

template <bool Simplified>
bool accepts(const KernelContext& ctx) {
  return hidden_of(ctx, Simplified) > 0;
}

template <bool Simplified>
void SkipNorm(KernelContext& ctx) {
  const int64_t h = hidden_of(ctx, Simplified);
  if (h <= 0) ctx.fail("problem not supported by the CPU skip normalization");
  const Tensor& x = ctx.input(0);
  const Tensor& skip = ctx.input(1);
  auto opt = [&](size_t i) -> const float* {
    return ctx.input_count() > i && ctx.input_value(i) ? ctx.input(i).data<float>() : nullptr;
  };
  const float* gamma = ctx.input(2).data<float>();
  const float* beta = Simplified ? nullptr : opt(3);
  const float* bias = opt(Simplified ? 3 : 4);
  const float eps = ctx.attr_float("epsilon", 1e-12f);
  Tensor& y = uninitialized_output(ctx, 0, DataType::Float, x.shape());
  float* sum_out = ctx.output_wanted(3) ? uninitialized_output(ctx, 3, DataType::Float, x.shape()).mutable_data<float>()
                                        : nullptr;
  const int64_t rows = static_cast<int64_t>(x.element_count()) / h;
  const int64_t skip_rows = static_cast<int64_t>(skip.element_count()) / h;
  const float* in = x.data<float>();
  const float* sk = skip.data<float>();
  float* out = y.mutable_data<float>();
  parallel_for(rows, std::max<int64_t>(1, 16384 / h), [&](int64_t r0, int64_t r1) {
    std::vector<float> tmp(sum_out ? 0 : static_cast<size_t>(h));
    CMap g(gamma, h);
    for (int64_t r = r0; r < r1; ++r) {
      float* srow = sum_out ? sum_out + r * h : tmp.data();
      Map sv(srow, h);
      sv = CMap(in + r * h, h) + CMap(sk + (r % skip_rows) * h, h);
      if (bias) sv += CMap(bias, h);
      Map o(out + r * h, h);
      if constexpr (Simplified) {
        o = sv * (1.0f / std::sqrt(sv.square().mean() + eps)) * g;
      } else {
        const float mean = sv.mean();
        const float inv = 1.0f / std::sqrt((sv - mean).square().mean() + eps);
        if (beta) o = (sv - mean) * inv * g + CMap(beta, h);
        else o = (sv - mean) * inv * g;
      }
    }
  });
}

}  // namespace

void register_skip_layer_norm_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "SkipLayerNormalization", 1, INT_MAX, "cpu-eigen", SkipNorm<false>, accepts<false>});
  r.add(KernelDef{"com.microsoft", "SkipSimplifiedLayerNormalization", 1, INT_MAX, "cpu-eigen", SkipNorm<true>,
                  accepts<true>});
}

}  // namespace onnxscope::cpu
