// Reference kernel: com.microsoft GroupQueryAttention (ONNX Runtime's
// contrib operator for decoders with a key/value cache, as onnxruntime-genai's
// model builder writes it for Llama-, Mistral-, Phi- and Qwen-style models).
//
//   query (B, S, N*H) with key/value (B, S, Nkv*H), or packed (B, S, (N + 2 Nkv) H)
//   past_key/past_value (B, Nkv, P, H): the cache; seqlens_k[b] = (tokens of
//   batch b so far, the new ones included) - 1; total_sequence_length the
//   batch's largest such count.
//
// For batch b: total_b = seqlens_k[b] + 1. A first prompt (S equals
// total_sequence_length) has no past (past_b = 0); otherwise past_b =
// total_b - S. present (B, Nkv, max(P, total_sequence_length), H) holds the
// past's first past_b rows, then the S new rows, then zeros. With do_rotary
// the new Q and K heads are rotated (cos_cache/sin_cache rows at
// position_ids, or at past_b + s; a first prompt's padding rows, s >= total_b,
// at position 1, as ONNX Runtime places them). Query s attends keys [0,
// min(past_b + s, total_b - 1)] (causal; all total_b keys when causal = 0:
// padding keys never), or only the last
// local_window_size of them (the query's own included); scores are scale * q.k (softcap: softcap *
// tanh(x / softcap)), plus attention_bias; the softmax adds a logit per head
// (head_sink) or 0 (smooth_softmax) to its sum. Query heads h share key head
// h / (N / Nkv). Computed in double, rounded once.
#include <string>
#include <vector>

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
  const Tensor& seqlens = ctx.input(5);
  const Tensor& total_len = ctx.input(6);
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
  const int64_t N = ctx.attr_int("num_heads", 0), Nkv = ctx.attr_int("kv_num_heads", 0);
  if (N <= 0 || Nkv <= 0 || N % Nkv != 0)
    ctx.fail("num_heads (" + std::to_string(N) + ") must be a positive multiple of kv_num_heads (" + std::to_string(Nkv) + ")");
  if (query.rank() != 3) ctx.fail("query must be (batch, sequence, hidden), got " + shape_to_string(query.shape()));
  const int64_t B = query.shape()[0], S = query.shape()[1];
  const bool packed = key == nullptr;
  if (packed != (value == nullptr)) ctx.fail("key and value go together (or neither, with a packed query)");
  int64_t H = 0;
  if (packed) {
    if (query.shape()[2] % (N + 2 * Nkv) != 0)
      ctx.fail("packed query width " + std::to_string(query.shape()[2]) + " is not (num_heads + 2 kv_num_heads) * head_size");
    H = query.shape()[2] / (N + 2 * Nkv);
  } else {
    H = ca::head_size(ctx, query.shape()[2], N, "query");
    for (const Tensor* kv : {key, value})
      if (kv->shape() != Shape{B, S, Nkv * H})
        ctx.fail("key and value must have shape " + shape_to_string(Shape{B, S, Nkv * H}) + ", got " + shape_to_string(kv->shape()));
  }
  if ((past_key == nullptr) != (past_value == nullptr)) ctx.fail("past_key and past_value go together");
  int64_t P = 0;
  if (past_key) {
    const Shape& pk = past_key->shape();
    if (pk.size() != 4 || pk[0] != B || pk[1] != Nkv || pk[3] != H || past_value->shape() != pk)
      ctx.fail("past_key and past_value must be (batch " + std::to_string(B) + ", kv_num_heads " + std::to_string(Nkv) +
               ", past_length, head_size " + std::to_string(H) + "), got " + shape_to_string(pk) + " and " +
               shape_to_string(past_value->shape()));
    P = pk[2];
  }
  const std::vector<int64_t> sk = ca::ints(seqlens);
  if (int64_t(sk.size()) != B) ctx.fail("seqlens_k must have one value per batch (" + std::to_string(B) + "), got " + shape_to_string(seqlens.shape()));
  if (total_len.element_count() != 1) ctx.fail("total_sequence_length must be a scalar");
  const int64_t total = ca::ints(total_len)[0];
  const bool first_prompt = S == total;
  const int64_t present_len = std::max(P, total);
  std::vector<int64_t> past_b(static_cast<size_t>(B)), total_b(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    total_b[size_t(b)] = sk[size_t(b)] + 1;
    past_b[size_t(b)] = first_prompt ? 0 : total_b[size_t(b)] - S;
    if (total_b[size_t(b)] < 1 || total_b[size_t(b)] > total || past_b[size_t(b)] < 0 || past_b[size_t(b)] > P ||
        past_b[size_t(b)] + S > present_len)
      ctx.fail("seqlens_k[" + std::to_string(b) + "] = " + std::to_string(sk[size_t(b)]) + " does not fit " +
               std::to_string(S) + " new tokens, total_sequence_length " + std::to_string(total) + " and a past of " +
               std::to_string(P));
  }

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
  if (ctx.attr_int("do_rotary", 0) != 0) {
    if (!cos_cache || !sin_cache) ctx.fail("do_rotary needs cos_cache and sin_cache");
    const Shape& cs = cos_cache->shape();
    if (cs.size() != 2 || sin_cache->shape() != cs || cs[1] * 2 > H || cs[1] <= 0)
      ctx.fail("cos_cache and sin_cache must be (max_sequence_length, rotary_dim / 2) with rotary_dim at most head_size " +
               std::to_string(H) + ", got " + shape_to_string(cs) + " and " + shape_to_string(sin_cache->shape()));
    const int64_t half = cs[1], rows = cs[0];
    const std::vector<double> cv = real_values(*cos_cache), sv = real_values(*sin_cache);
    std::vector<int64_t> pos(size_t(B * S));
    if (position_ids) {
      if (position_ids->shape() != Shape{B, S}) ctx.fail("position_ids must have shape " + shape_to_string(Shape{B, S}));
      pos = ca::ints(*position_ids);
    } else {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s)
          pos[size_t(b * S + s)] = first_prompt && s >= total_b[size_t(b)] ? 1 : past_b[size_t(b)] + s;
    }
    const bool interleaved = ctx.attr_int("rotary_interleaved", 0) != 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t p = pos[size_t(b * S + s)];
        if (p < 0 || p >= rows)
          ctx.fail("position " + std::to_string(p) + " (batch " + std::to_string(b) + ", token " + std::to_string(s) +
                   ") is outside the rotary cache of " + std::to_string(rows) + " rows");
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
  const bool causal = ctx.attr_int("causal", 1) != 0;
  const int64_t window = ctx.attr_int("local_window_size", -1);
  if (!causal && window > 0) ctx.fail("local_window_size needs causal attention");
  ca::Options o;
  o.scale = ctx.attr_float("scale", 0.0f);
  o.softcap = ctx.attr_float("softcap", 0.0f);
  o.smooth_softmax = ctx.attr_int("smooth_softmax", 0) != 0;
  if (head_sink) o.sink = [&](int64_t h) { return sink[size_t(h)]; };
  o.bias = [&](int64_t b, int64_t h, int64_t i, double* row) {
    // keys [begin, end): never past the batch's own tokens (a ragged prompt's padding keys are left out)
    const int64_t end = causal ? std::min(past_b[size_t(b)] + i + 1, total_b[size_t(b)]) : total_b[size_t(b)];
    const int64_t begin = window > 0 ? std::max<int64_t>(0, end - window) : 0;
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
