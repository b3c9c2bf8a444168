// Reference kernel: com.microsoft GroupQueryAttention (ONNX Runtime's
// contrib operator for decoders with a key/value cache, as onnxruntime-genai's
// model builder writes it for Llama-, Mistral-, Phi- and Qwen-style models).
//
//   query (B, S, N*H) with key/value (B, S, Nkv*H), or packed (B, S, (N + 2 Nkv) H)
//   past_key/past_value (B, Nkv, P, H): the cache; seqlens_k[b] = (tokens of
//   batch b so far, the new ones included) - 1; total_sequence_length the
//   batch's largest such count.
//
// Which cache rows each batch entry fills, its rotary positions and the
// keys each query attends are core/gqa_plan.h's (shared with the cpu
// engine's kernel). Scores are scale * q.k (softcap: softcap * tanh(x /
// softcap)), plus attention_bias; the softmax adds a logit per head
// (head_sink) or 0 (smooth_softmax) to its sum. Query heads h share key head
// h / (N / Nkv). Computed in double, rounded once.
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gqa_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/contrib_attention_common.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

namespace ca = contrib_attention;

void GroupQueryAttention(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const Tensor* key = ctx.optional_input(1);
  const Tensor* value = ctx.optional_input(2);
  const Tensor* past_key = ctx.optional_input(3);
  const Tensor* past_value = ctx.optional_input(4);
  const Tensor* cos_cache = ctx.optional_input(7);
  const Tensor* sin_cache = ctx.optional_input(8);
  const Tensor* position_ids = ctx.optional_input(9);
  const Tensor* attn_bias = ctx.optional_input(10);
  const Tensor* head_sink = ctx.optional_input(11);
  if (ctx.optional_input(12) || ctx.optional_input(13))
    ctx.fail("k_scale/v_scale: a quantized key/value cache is not supported");
  if (ctx.optional_input(14) || ctx.optional_input(15))
    ctx.fail("q_norm_weight/k_norm_weight: the per-head RMS norm of Q and K is not supported");
  if (ctx.attr_int("sliding_window_cache", 0) != 0) ctx.fail("sliding_window_cache: a window-sized cache is not supported");
  real::require_float(ctx, query, "query");
  const DataType t = query.dtype();
  for (const Tensor* in : {key, value, past_key, past_value, cos_cache, sin_cache, attn_bias, head_sink})
    if (in && in->dtype() != t)
      ctx.fail("key, value, the past, the caches, attention_bias and head_sink must have the query's element type");
  gqa::Request req = gqa::request_of(ctx.node());
  req.query = query.shape();
  if (key) req.key = key->shape();
  if (value) req.value = value->shape();
  if (past_key) req.past_key = past_key->shape();
  if (past_value) req.past_value = past_value->shape();
  if (cos_cache) req.cos_cache = cos_cache->shape();
  if (sin_cache) req.sin_cache = sin_cache->shape();
  if (position_ids) req.position_ids = position_ids->shape(), req.positions = ca::ints(*position_ids);
  req.seqlens_k = ca::ints(ctx.input(5));
  req.total_length = ca::ints(ctx.input(6));
  gqa::Plan g;
  try {
    g = gqa::plan(req);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  const int64_t B = g.B, S = g.S, N = g.N, Nkv = g.Nkv, H = g.H, P = g.P, total = g.total, present_len = g.present_len;
  const bool packed = g.packed;
  const std::vector<int64_t>& past_b = g.past_b;

  // The new heads.
  ca::Heads q = ca::make_heads(ctx, B, N, S, H, "Q"), k = ca::make_heads(ctx, B, Nkv, S, H, "K"),
            v = ca::make_heads(ctx, B, Nkv, S, H, "V");
  const std::vector<double> qv = real_values(query);
  if (packed) {
    const int64_t width = (N + 2 * Nkv) * H;
    ca::split_heads(q, qv, width, 0);
    ca::split_heads(k, qv, width, N * H);
    ca::split_heads(v, qv, width, (N + Nkv) * H);
  } else {
    ca::split_heads(q, qv, N * H, 0);
    ca::split_heads(k, real_values(*key), Nkv * H, 0);
    ca::split_heads(v, real_values(*value), Nkv * H, 0);
  }
  if (g.rotary_half > 0) {
    const int64_t half = g.rotary_half;
    const std::vector<double> cv = real_values(*cos_cache), sv = real_values(*sin_cache);
    const bool interleaved = ctx.attr_int("rotary_interleaved", 0) != 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t p = g.positions[size_t(b * S + s)];
        for (ca::Heads* x : {&q, &k})
          for (int64_t n = 0; n < x->N; ++n)
            ca::rotate(&x->at(b, n, s, 0), &cv[size_t(p * half)], &sv[size_t(p * half)], 2 * half, interleaved);
      }
  }

  // The cache: past rows, then the new ones, then zeros.
  ca::Heads pk = ca::make_heads(ctx, B, Nkv, present_len, H, "present_key");
  ca::Heads pv = ca::make_heads(ctx, B, Nkv, present_len, H, "present_value");
  {
    const std::vector<double> old_k = past_key ? real_values(*past_key) : std::vector<double>{};
    const std::vector<double> old_v = past_value ? real_values(*past_value) : std::vector<double>{};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < Nkv; ++n) {
        for (int64_t s = 0; s < past_b[size_t(b)]; ++s)
          for (int64_t h = 0; h < H; ++h) {
            const size_t from = size_t(((b * Nkv + n) * P + s) * H + h);
            pk.at(b, n, s, h) = old_k[from];
            pv.at(b, n, s, h) = old_v[from];
          }
        for (int64_t s = 0; s < S; ++s)
          for (int64_t h = 0; h < H; ++h) {
            pk.at(b, n, past_b[size_t(b)] + s, h) = k.at(b, n, s, h);
            pv.at(b, n, past_b[size_t(b)] + s, h) = v.at(b, n, s, h);
          }
      }
  }

  ca::AttentionBias ab;
  if (attn_bias) ab = ca::attention_bias(ctx, *attn_bias, B, N, S, present_len);
  std::vector<double> sink;
  if (head_sink) {
    if (head_sink->shape() != Shape{N}) ctx.fail("head_sink must have shape [" + std::to_string(N) + "] (one logit per head)");
    sink = real_values(*head_sink);
  }
  ca::Options o;
  o.scale = ctx.attr_float("scale", 0.0f);
  o.softcap = ctx.attr_float("softcap", 0.0f);
  o.smooth_softmax = ctx.attr_int("smooth_softmax", 0) != 0;
  if (head_sink) o.sink = [&](int64_t h) { return sink[size_t(h)]; };
  o.bias = [&](int64_t b, int64_t h, int64_t i, double* row) {
    const auto [begin, end] = g.keys(b, i);
    for (int64_t j = 0; j < present_len; ++j)
      row[j] = j < begin || j >= end ? -std::numeric_limits<double>::infinity() : attn_bias ? ab.at(b, h, i, j) : 0.0;
  };
  const int64_t qk_mode = ctx.attr_int("qk_output", 0);
  if (qk_mode < 0 || qk_mode > 2) ctx.fail("qk_output must be 0, 1 (before the softmax) or 2 (after)");
  const bool want_qk = qk_mode != 0 && ctx.output_count() > 3 && ctx.output_wanted(3);
  std::vector<double> qk;
  const std::vector<double> y = ca::attend(ctx, q, pk, pv, o, want_qk ? &qk : nullptr, qk_mode == 1);
  // Scores of keys a query does not attend are 0 (as ONNX Runtime writes them), not -inf.
  if (want_qk && qk_mode == 1)
    for (double& x : qk)
      if (std::isinf(x) && x < 0) x = 0;
  real::store_doubles(ctx, ctx.allocate_output(0, t, {B, S, N * H}), y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) real::store_doubles(ctx, ctx.allocate_output(1, t, {B, Nkv, present_len, H}), pk.v);
  if (ctx.output_count() > 2 && ctx.output_wanted(2)) real::store_doubles(ctx, ctx.allocate_output(2, t, {B, Nkv, present_len, H}), pv.v);
  if (want_qk) {  // (B, N, S, total_sequence_length): the cache's first `total` keys
    std::vector<double> cut(size_t(B * N * S * total));
    for (int64_t r = 0; r < B * N * S; ++r)
      std::copy_n(&qk[size_t(r * present_len)], total, &cut[size_t(r * total)]);
    real::store_doubles(ctx, ctx.allocate_output(3, t, {B, N, S, total}), cut);
  }
}

}  // namespace onnxscope::ref
