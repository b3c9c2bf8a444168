// Reference kernel: com.microsoft MultiHeadAttention (ONNX Runtime's contrib
// operator: attention on projected Q, K and V, as its transformers optimizer
// writes it for encoders, decoders and cross-attention).
//
// Query, key and value come in one of these forms (D = N * H):
//   query (B, S, D), key (B, L, D), value (B, L, Dv)      bias (D + D + Dv) added to each
//   query (B, S, D), key (B, N, L, H), value (B, N, L, Hv)  keys/values already in heads (bias on Q only)
//   query (B, S, D), key (B, L, N, 2, H), no value          packed keys and values
//   query (B, S, N, 3, H), no key or value                   packed Q, K and V
// past_key/past_value (B, N, P, H) are prepended to the keys/values
// (present_key/present_value (B, N, P + L, H)); key_padding_mask masks keys
// with mask_filter_value (contrib_attention::mask_bias), attention_bias is
// added, unidirectional removes keys j > P + i. Output (B, S, N * Hv); qk
// (B, N, S, T) is scale * Q K^T with the bias added, before the softmax.
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/contrib_attention_common.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

namespace ca = contrib_attention;

void MultiHeadAttention(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const Tensor* key = ctx.optional_input(1);
  const Tensor* value = ctx.optional_input(2);
  const Tensor* bias = ctx.optional_input(3);
  const Tensor* mask = ctx.optional_input(4);
  const Tensor* attn_bias = ctx.optional_input(5);
  const Tensor* past_key = ctx.optional_input(6);
  const Tensor* past_value = ctx.optional_input(7);
  if (ctx.optional_input(8) || ctx.optional_input(9))
    ctx.fail("past_sequence_length and cache_indirection (beam search on a shared buffer) are not supported");
  real::require_float(ctx, query, "query");
  const DataType t = query.dtype();
  for (const Tensor* in : {key, value, bias, attn_bias, past_key, past_value})
    if (in && in->dtype() != t) ctx.fail("key, value, bias, attention_bias and the past must have the query's element type");
  const int64_t N = ctx.attr_int("num_heads", 0);
  if (N <= 0) ctx.fail("num_heads must be positive");
  if ((past_key == nullptr) != (past_value == nullptr)) ctx.fail("past_key and past_value go together");

  const Shape& qs = query.shape();
  int64_t B = 0, S = 0, L = 0, H = 0, Hv = 0;
  ca::Heads q, k, v;
  const std::vector<double> qv = real_values(query);
  if (qs.size() == 5) {  // packed QKV
    if (key || value) ctx.fail("a packed (batch, sequence, num_heads, 3, head_size) query takes no key or value");
    if (qs[2] != N || qs[3] != 3) ctx.fail("packed query of shape " + shape_to_string(qs) + " must be (batch, sequence, " + std::to_string(N) + ", 3, head_size)");
    B = qs[0], S = L = qs[1], H = Hv = qs[4];
    q = ca::make_heads(ctx, B, N, S, H, "Q"), k = ca::make_heads(ctx, B, N, S, H, "K"), v = ca::make_heads(ctx, B, N, S, H, "V");
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t h = 0; h < H; ++h) {
            const size_t base = size_t((((b * S + s) * N + n) * 3) * H + h);
            q.at(b, n, s, h) = qv[base];
            k.at(b, n, s, h) = qv[base + size_t(H)];
            v.at(b, n, s, h) = qv[base + size_t(2 * H)];
          }
  } else {
    if (qs.size() != 3) ctx.fail("query must be (batch, sequence, hidden) or packed (batch, sequence, num_heads, 3, head_size), got " + shape_to_string(qs));
    B = qs[0], S = qs[1];
    H = ca::head_size(ctx, qs[2], N, "query");
    q = ca::make_heads(ctx, B, N, S, H, "Q");
    ca::split_heads(q, qv, qs[2], 0);
    if (!key) ctx.fail("a (batch, sequence, hidden) query needs a key");
    const Shape& ks = key->shape();
    const std::vector<double> kv = real_values(*key);
    if (ks.size() == 5) {  // packed KV
      if (value) ctx.fail("a packed (batch, kv_sequence, num_heads, 2, head_size) key takes no value");
      if (ks[0] != B || ks[2] != N || ks[3] != 2 || ks[4] != H)
        ctx.fail("packed key of shape " + shape_to_string(ks) + " must be (batch, kv_sequence, " + std::to_string(N) + ", 2, " + std::to_string(H) + ")");
      L = ks[1], Hv = H;
      k = ca::make_heads(ctx, B, N, L, H, "K"), v = ca::make_heads(ctx, B, N, L, H, "V");
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < L; ++s)
          for (int64_t n = 0; n < N; ++n)
            for (int64_t h = 0; h < H; ++h) {
              const size_t base = size_t((((b * L + s) * N + n) * 2) * H + h);
              k.at(b, n, s, h) = kv[base];
              v.at(b, n, s, h) = kv[base + size_t(H)];
            }
    } else {
      if (!value) ctx.fail("key needs a value (or a packed key)");
      const Shape& vs = value->shape();
      const std::vector<double> vv = real_values(*value);
      if (ks.size() == 3 && vs.size() == 3) {
        if (ks[0] != B || ks[2] != qs[2] || vs[0] != B || vs[1] != ks[1])
          ctx.fail("key " + shape_to_string(ks) + " and value " + shape_to_string(vs) + " must be (batch, kv_sequence, hidden " + std::to_string(qs[2]) + ") and (batch, kv_sequence, v_hidden)");
        L = ks[1];
        Hv = ca::head_size(ctx, vs[2], N, "value");
        k = ca::make_heads(ctx, B, N, L, H, "K"), v = ca::make_heads(ctx, B, N, L, Hv, "V");
        ca::split_heads(k, kv, ks[2], 0);
        ca::split_heads(v, vv, vs[2], 0);
      } else if (ks.size() == 4 && vs.size() == 4) {
        if (ks[0] != B || ks[1] != N || ks[3] != H || vs[0] != B || vs[1] != N || vs[2] != ks[2])
          ctx.fail("key " + shape_to_string(ks) + " and value " + shape_to_string(vs) + " must be (batch, " + std::to_string(N) + ", kv_sequence, " + std::to_string(H) + ") and (batch, num_heads, kv_sequence, v_head_size)");
        L = ks[2], Hv = vs[3];
        k = ca::Heads{B, N, L, H, kv};
        v = ca::Heads{B, N, L, Hv, vv};
      } else {
        ctx.fail("key " + shape_to_string(ks) + " and value " + shape_to_string(vs) + " must both be 3-D or both 4-D");
      }
    }
  }
  if (bias) {
    const bool kv_in_heads = key && key->rank() == 4;
    const int64_t D = N * H, Dv = N * Hv;
    if (bias->rank() != 1 || bias->shape()[0] != 2 * D + Dv)
      ctx.fail("bias must have shape [" + std::to_string(2 * D + Dv) + "] (Q, K and V hidden sizes), got " + shape_to_string(bias->shape()));
    const std::vector<double> bv = real_values(*bias);
    auto add = [&](ca::Heads& x, int64_t off) {
      for (int64_t b = 0; b < x.B; ++b)
        for (int64_t n = 0; n < x.N; ++n)
          for (int64_t s = 0; s < x.S; ++s)
            for (int64_t h = 0; h < x.H; ++h) x.at(b, n, s, h) += bv[size_t(off + n * x.H + h)];
    };
    add(q, 0);
    if (!kv_in_heads) {
      add(k, D);
      add(v, 2 * D);
    }
  }
  int64_t P = 0;
  if (past_key) {
    const Shape& pk = past_key->shape();
    const Shape& pv = past_value->shape();
    if (pk.size() != 4 || pk[0] != B || pk[1] != N || pk[3] != H || pv.size() != 4 || pv[0] != B || pv[1] != N ||
        pv[2] != pk[2] || pv[3] != Hv)
      ctx.fail("past_key " + shape_to_string(pk) + " and past_value " + shape_to_string(pv) + " must be (batch, " +
               std::to_string(N) + ", past_length, " + std::to_string(H) + ") and (batch, num_heads, past_length, " +
               std::to_string(Hv) + ")");
    P = pk[2];
    k = ca::concat_past(ctx, ca::Heads{B, N, P, H, real_values(*past_key)}, k, "the keys (past and new)");
    v = ca::concat_past(ctx, ca::Heads{B, N, P, Hv, real_values(*past_value)}, v, "the values (past and new)");
  }
  const int64_t T = P + L;
  const ca::KeyBias key_bias(ctx, mask, "key_padding_mask", attn_bias, B, N, S, T, P);
  const ca::Options o = key_bias.options();
  const bool want_qk = ctx.output_count() > 3 && ctx.output_wanted(3);
  std::vector<double> qk;
  const std::vector<double> y = ca::attend(ctx, q, k, v, o, want_qk ? &qk : nullptr, true);
  real::store_doubles(ctx, ctx.allocate_output(0, t, {B, S, N * Hv}), y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) real::store_doubles(ctx, ctx.allocate_output(1, t, {B, N, T, H}), k.v);
  if (ctx.output_count() > 2 && ctx.output_wanted(2)) real::store_doubles(ctx, ctx.allocate_output(2, t, {B, N, T, Hv}), v.v);
  if (want_qk) real::store_doubles(ctx, ctx.allocate_output(3, t, {B, N, S, T}), qk);
}

}  // namespace onnxscope::ref
