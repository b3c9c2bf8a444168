// com.microsoft GroupQueryAttention (onnxruntime-genai's decoders: Llama,
// Mistral, Phi, Qwen) on float32. The bookkeeping (each batch entry's
// cache rows, rotary positions, the keys each query attends) is
// core/gqa_plan.h's, shared with the reference kernel; this kernel computes
// in float: the new heads rotated, the present cache assembled (past rows,
// new rows, zeros), then the attention over heads of attention_heads.h with
// the keys outside each query's range left out. A quantized cache, the per-head Q/K norms, a window-sized cache
// and the qk output go to the reference kernel.
#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/gqa_plan.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/attention_heads.h"
#include "cpu/kernels/output.h"
#include "cpu/thread_pool.h"

namespace onnxscope::cpu {
namespace {

const Tensor* input_at(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return v && v->is_tensor() ? &v->tensor() : nullptr;
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = t.element_as_int64(i);
  return v;
}

// The plan, or nullopt when this kernel does not take the node.
std::optional<gqa::Plan> plan_of(const KernelContext& ctx) {
  const Tensor* query = input_at(ctx, 0);
  if (!query || query->dtype() != DataType::Float || !input_at(ctx, 5) || !input_at(ctx, 6)) return std::nullopt;
  for (size_t i : {1, 2, 3, 4, 7, 8, 10, 11})
    if (const Tensor* t = input_at(ctx, i); t && t->dtype() != DataType::Float) return std::nullopt;
  for (size_t i = 12; i < ctx.input_count(); ++i)
    if (input_at(ctx, i)) return std::nullopt;
  if (ctx.attr_int("sliding_window_cache", 0) != 0) return std::nullopt;
  if (ctx.attr_int("qk_output", 0) != 0 && ctx.output_count() > 3 && ctx.output_wanted(3)) return std::nullopt;
  gqa::Request r = gqa::request_of(ctx.node());
  r.query = query->shape();
  auto shape_of = [&](size_t i, std::optional<Shape>& s) {
    if (const Tensor* t = input_at(ctx, i)) s = t->shape();
  };
  shape_of(1, r.key), shape_of(2, r.value), shape_of(3, r.past_key), shape_of(4, r.past_value);
  shape_of(7, r.cos_cache), shape_of(8, r.sin_cache), shape_of(9, r.position_ids);
  if (const Tensor* pos = input_at(ctx, 9)) r.positions = ints(*pos);
  r.seqlens_k = ints(*input_at(ctx, 5));
  r.total_length = ints(*input_at(ctx, 6));
  try {
    gqa::Plan p = gqa::plan(r);
    if (const Tensor* ab = input_at(ctx, 10)) {
      const Shape& s = ab->shape();
      if (s.size() != 4 || (s[0] != p.B && s[0] != 1) || (s[1] != p.N && s[1] != 1) || s[2] != p.S || s[3] != p.present_len)
        return std::nullopt;  // the reference names the shape
    }
    if (const Tensor* sink = input_at(ctx, 11); sink && sink->shape() != Shape{p.N}) return std::nullopt;
    return p;
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // the reference kernel reports it
  }
}

bool accepts(const KernelContext& ctx) { return plan_of(ctx).has_value(); }

void GroupQueryAttentionKernel(KernelContext& ctx) {
  const std::optional<gqa::Plan> plan = plan_of(ctx);
  if (!plan) ctx.fail("problem not supported by the CPU GroupQueryAttention");
  const gqa::Plan& g = *plan;
  const int64_t B = g.B, S = g.S, N = g.N, Nkv = g.Nkv, H = g.H, L = g.present_len;
  const float* query = ctx.input(0).data<float>();

  // The new heads, (B, heads, S, H).
  heads::Heads q(B, N, S, H), k(B, Nkv, S, H), v(B, Nkv, S, H);
  if (g.packed) {
    const int64_t width = (N + 2 * Nkv) * H;
    heads::split(q, query, width, 0), heads::split(k, query, width, N * H), heads::split(v, query, width, (N + Nkv) * H);
  } else {
    heads::split(q, query, N * H, 0);
    heads::split(k, ctx.input(1).data<float>(), Nkv * H, 0);
    heads::split(v, ctx.input(2).data<float>(), Nkv * H, 0);
  }
  if (g.rotary_half > 0) {
    const float* cs = ctx.input(7).data<float>();
    const float* sn = ctx.input(8).data<float>();
    const int64_t half = g.rotary_half;
    const bool interleaved = ctx.attr_int("rotary_interleaved", 0) != 0;
    auto rotate = [&](heads::Heads& x) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < x.N; ++n)
          for (int64_t s = 0; s < S; ++s) {
            float* row = x.at(b, n, s);
            const int64_t pos = g.positions[static_cast<size_t>(b * S + s)];
            const float* c = cs + pos * half;
            const float* si = sn + pos * half;
            for (int64_t i = 0; i < half; ++i) {
              const int64_t a = interleaved ? 2 * i : i, b2 = interleaved ? 2 * i + 1 : i + half;
              const float x1 = row[a], x2 = row[b2];
              row[a] = c[i] * x1 - si[i] * x2;
              row[b2] = si[i] * x1 + c[i] * x2;
            }
          }
    };
    rotate(q), rotate(k);
  }

  // The present cache: past rows, the new ones, zeros.
  const Shape present = g.present_shape();
  std::vector<float> own_k, own_v;
  auto cache = [&](size_t out, std::vector<float>& own) -> float* {
    if (ctx.output_count() > out && ctx.output_wanted(out))
      return uninitialized_output(ctx, out, DataType::Float, present).mutable_data<float>();
    own.resize(static_cast<size_t>(B * Nkv * L * H));
    return own.data();
  };
  float* pk = cache(1, own_k);
  float* pv = cache(2, own_v);
  const float* past_k = input_at(ctx, 3) ? ctx.input(3).data<float>() : nullptr;
  const float* past_v = input_at(ctx, 4) ? ctx.input(4).data<float>() : nullptr;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < Nkv; ++n) {
      const int64_t pb = g.past_b[static_cast<size_t>(b)], base = (b * Nkv + n) * L * H;
      if (pb > 0) {
        std::copy_n(past_k + (b * Nkv + n) * g.P * H, pb * H, pk + base);
        std::copy_n(past_v + (b * Nkv + n) * g.P * H, pb * H, pv + base);
      }
      std::copy_n(k.at(b, n, 0), S * H, pk + base + pb * H);
      std::copy_n(v.at(b, n, 0), S * H, pv + base + pb * H);
      std::fill(pk + base + (pb + S) * H, pk + base + L * H, 0.0f);
      std::fill(pv + base + (pb + S) * H, pv + base + L * H, 0.0f);
    }

  const float scale_attr = ctx.attr_float("scale", 0.0f);
  heads::Softmax sm;
  sm.scale = scale_attr != 0 ? scale_attr : 1.0f / std::sqrt(static_cast<float>(H));
  sm.softcap = ctx.attr_float("softcap", 0.0f);
  sm.sink = input_at(ctx, 11) ? ctx.input(11).data<float>() : nullptr;
  sm.extra = sm.sink || ctx.attr_int("smooth_softmax", 0) != 0;
  const Tensor* ab = input_at(ctx, 10);
  const float* bias = ab ? ab->data<float>() : nullptr;
  const int64_t bias_sb = ab && ab->shape()[0] != 1 ? ab->shape()[1] * S * L : 0, bias_sn = ab && ab->shape()[1] != 1 ? S * L : 0;
  // No query attends past its batch's own tokens: total_b keys of the cache.
  const heads::Cache kv{pk, pv, Nkv, L, H, [&](int64_t b) { return g.total_b[static_cast<size_t>(b)]; }};
  float* y = uninitialized_output(ctx, 0, DataType::Float, {B, S, N * H}).mutable_data<float>();
  heads::attend(q, kv, sm, [&](int64_t b, int64_t h, int64_t i, int64_t T, float* row) {
    const auto [begin, end] = g.keys(b, i);
    for (int64_t j = 0; j < T; ++j)
      row[j] = j < begin || j >= end ? -std::numeric_limits<float>::infinity()
                                     : bias ? bias[b * bias_sb + h * bias_sn + i * L + j] : 0.0f;
  }, y);
}

}  // namespace

void register_group_query_attention_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "GroupQueryAttention", 1, INT_MAX, "cpu-eigen", GroupQueryAttentionKernel, accepts});
}

}  // namespace onnxscope::cpu
