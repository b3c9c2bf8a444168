#include "core/gqa_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace onnxscope::gqa {
namespace {

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }

int64_t attr_int(const Node& n, const char* name, int64_t fallback) {
  const Attribute* a = n.attribute(name);
  return a ? a->i : fallback;
}

}  // namespace

Request request_of(const Node& n) {
  Request r;
  r.num_heads = attr_int(n, "num_heads", 0);
  r.kv_num_heads = attr_int(n, "kv_num_heads", 0);
  r.local_window = attr_int(n, "local_window_size", -1);
  r.causal = attr_int(n, "causal", 1) != 0;
  r.do_rotary = attr_int(n, "do_rotary", 0) != 0;
  return r;
}

Plan plan(const Request& r) {
  Plan p;
  const int64_t N = r.num_heads, Nkv = r.kv_num_heads;
  if (N <= 0 || Nkv <= 0 || N % Nkv != 0)
    fail("num_heads (" + std::to_string(N) + ") must be a positive multiple of kv_num_heads (" + std::to_string(Nkv) + ")");
  if (r.query.size() != 3) fail("query must be (batch, sequence, hidden), got " + shape_to_string(r.query));
  const int64_t B = r.query[0], S = r.query[1];
  p.B = B, p.S = S, p.N = N, p.Nkv = Nkv, p.causal = r.causal, p.window = r.local_window;
  p.packed = !r.key;
  if (p.packed != !r.value) fail("key and value go together (or neither, with a packed query)");
  if (p.packed) {
    if (r.query[2] % (N + 2 * Nkv) != 0)
      fail("packed query width " + std::to_string(r.query[2]) + " is not (num_heads + 2 kv_num_heads) * head_size");
    p.H = r.query[2] / (N + 2 * Nkv);
  } else {
    if (r.query[2] % N != 0)
      fail("query hidden size " + std::to_string(r.query[2]) + " is not divisible by " + std::to_string(N) + " heads");
    p.H = r.query[2] / N;
    for (const Shape* kv : {&*r.key, &*r.value})
      if (*kv != Shape{B, S, Nkv * p.H})
        fail("key and value must have shape " + shape_to_string(Shape{B, S, Nkv * p.H}) + ", got " + shape_to_string(*kv));
  }
  const int64_t H = p.H;
  if (r.past_key.has_value() != r.past_value.has_value()) fail("past_key and past_value go together");
  if (r.past_key) {
    const Shape& pk = *r.past_key;
    if (pk.size() != 4 || pk[0] != B || pk[1] != Nkv || pk[3] != H || *r.past_value != pk)
      fail("past_key and past_value must be (batch " + std::to_string(B) + ", kv_num_heads " + std::to_string(Nkv) +
           ", past_length, head_size " + std::to_string(H) + "), got " + shape_to_string(pk) + " and " +
           shape_to_string(*r.past_value));
    p.P = pk[2];
  }
  if (int64_t(r.seqlens_k.size()) != B)
    fail("seqlens_k must have one value per batch (" + std::to_string(B) + "), got " + std::to_string(r.seqlens_k.size()));
  if (r.total_length.size() != 1) fail("total_sequence_length must be a scalar");
  p.total = r.total_length[0];
  p.first_prompt = S == p.total;
  p.present_len = std::max(p.P, p.total);
  p.past_b.resize(size_t(B));
  p.total_b.resize(size_t(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t t = r.seqlens_k[size_t(b)] + 1, past = p.first_prompt ? 0 : t - S;
    if (t < 1 || t > p.total || past < 0 || past > p.P || past + S > p.present_len)
      fail("seqlens_k[" + std::to_string(b) + "] = " + std::to_string(r.seqlens_k[size_t(b)]) + " does not fit " +
           std::to_string(S) + " new tokens, total_sequence_length " + std::to_string(p.total) + " and a past of " +
           std::to_string(p.P));
    p.total_b[size_t(b)] = t;
    p.past_b[size_t(b)] = past;
  }
  if (!r.causal && r.local_window > 0) fail("local_window_size needs causal attention");
  if (r.do_rotary) {
    if (!r.cos_cache || !r.sin_cache) fail("do_rotary needs cos_cache and sin_cache");
    const Shape& cs = *r.cos_cache;
    if (cs.size() != 2 || *r.sin_cache != cs || cs[1] * 2 > H || cs[1] <= 0)
      fail("cos_cache and sin_cache must be (max_sequence_length, rotary_dim / 2) with rotary_dim at most head_size " +
           std::to_string(H) + ", got " + shape_to_string(cs) + " and " + shape_to_string(*r.sin_cache));
    p.rotary_half = cs[1], p.rotary_rows = cs[0];
    p.positions.resize(size_t(B * S));
    if (r.position_ids) {
      if (*r.position_ids != Shape{B, S}) fail("position_ids must have shape " + shape_to_string(Shape{B, S}));
      p.positions = r.positions;
    } else {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s)
          p.positions[size_t(b * S + s)] = p.first_prompt && s >= p.total_b[size_t(b)] ? 1 : p.past_b[size_t(b)] + s;
    }
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t pos = p.positions[size_t(b * S + s)];
        if (pos < 0 || pos >= p.rotary_rows)
          fail("position " + std::to_string(pos) + " (batch " + std::to_string(b) + ", token " + std::to_string(s) +
               ") is outside the rotary cache of " + std::to_string(p.rotary_rows) + " rows");
      }
  }
  return p;
}

}  // namespace onnxscope::gqa
