#include "core/attention_plan.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace onnxscope::attention {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument(what); }

std::string dims(const Shape& s) { return shape_to_string(s); }

}  // namespace

Request request_of(const Node& n, int64_t opset) {
  Request r;
  r.opset = opset;
  if (const Attribute* a = n.attribute("q_num_heads")) r.q_num_heads = a->i;
  if (const Attribute* a = n.attribute("kv_num_heads")) r.kv_num_heads = a->i;
  if (const Attribute* a = n.attribute("scale")) r.scale = a->f;
  if (const Attribute* a = n.attribute("softcap")) r.softcap = a->f;
  if (const Attribute* a = n.attribute("is_causal")) r.causal = a->i != 0;
  if (const Attribute* a = n.attribute("qk_matmul_output_mode")) r.mode = a->i;
  if (opset >= 25) {  // the window attributes came with opset 25
    if (const Attribute* a = n.attribute("left_window_size")) r.left = a->i;
    if (const Attribute* a = n.attribute("right_window_size")) r.right = a->i;
  }
  return r;
}

Geometry plan(const Request& r) {
  Geometry g;
  const size_t rank = r.q.size();
  if ((rank != 3 && rank != 4) || r.k.size() != rank || r.v.size() != rank)
    fail("Q, K and V must all be 3-D or all 4-D, got " + dims(r.q) + ", " + dims(r.k) + ", " + dims(r.v));
  g.B = r.q[0];
  if (r.k[0] != g.B || r.v[0] != g.B) fail("Q, K and V must have the same batch size");
  int64_t hk = 0, hv = 0, skv_v = 0, dk = 0;
  if (rank == 3) {
    if (!r.q_num_heads || !r.kv_num_heads) fail("3-D inputs need the q_num_heads and kv_num_heads attributes");
    if (*r.q_num_heads <= 0 || *r.kv_num_heads <= 0) fail("q_num_heads and kv_num_heads must be positive");
    auto head_size = [](const Shape& t, int64_t heads, const char* name) {
      if (t[2] % heads != 0)
        fail(std::string(name) + " hidden size " + std::to_string(t[2]) + " is not divisible by " + std::to_string(heads) + " heads");
      return t[2] / heads;
    };
    g.packed = true;
    g.Hq = *r.q_num_heads;
    hk = hv = *r.kv_num_heads;
    g.Sq = r.q[1];
    g.Skv = r.k[1];
    skv_v = r.v[1];
    g.D = head_size(r.q, g.Hq, "Q");
    dk = head_size(r.k, hk, "K");
    g.Dv = head_size(r.v, hv, "V");
  } else {
    if (r.opset >= 25 && (r.q_num_heads || r.kv_num_heads))
      fail("q_num_heads and kv_num_heads must not be given for 4-D inputs");
    g.Hq = r.q[1];
    g.Sq = r.q[2];
    g.D = r.q[3];
    hk = r.k[1];
    g.Skv = r.k[2];
    dk = r.k[3];
    hv = r.v[1];
    skv_v = r.v[2];
    g.Dv = r.v[3];
  }
  g.Hkv = hk;
  if (dk != g.D) fail("K head size " + std::to_string(dk) + " differs from Q's " + std::to_string(g.D));
  if (hv != hk || skv_v != g.Skv) fail("K and V must have the same number of heads and sequence length");
  if (g.Hkv <= 0 || g.Hq % g.Hkv != 0)
    fail("q_num_heads " + std::to_string(g.Hq) + " must be a multiple of kv_num_heads " + std::to_string(g.Hkv));
  g.group = g.Hq / g.Hkv;

  // Key/value cache: present = concat(past, new) on the sequence axis.
  if (r.past_key.has_value() != r.past_value.has_value()) fail("past_key and past_value must be given together");
  g.has_nonpad = r.nonpad.has_value();
  if (g.has_nonpad && r.past_key) fail("nonpad_kv_seqlen cannot be combined with past_key/past_value");
  if (r.past_key) {
    if (r.past_key->size() != 4 || r.past_value->size() != 4) fail("past_key and past_value must be 4-D");
    g.P = (*r.past_key)[2];
    const Shape pk{g.B, g.Hkv, g.P, g.D}, pv{g.B, g.Hkv, g.P, g.Dv};
    if (*r.past_key != pk) fail("past_key has shape " + dims(*r.past_key) + ", expected " + dims(pk));
    if (*r.past_value != pv) fail("past_value has shape " + dims(*r.past_value) + ", expected " + dims(pv));
  }
  g.T = g.P + g.Skv;

  g.scale = r.scale ? double(*r.scale) : 1.0 / std::sqrt(double(g.D));
  g.softcap = r.softcap;
  g.causal = r.causal;
  g.mode = r.mode;
  if (g.mode < 0 || g.mode > 3) fail("qk_matmul_output_mode must be 0..3, got " + std::to_string(g.mode));
  g.left = r.left;
  g.right = r.right;
  if (g.left < -1 || g.right < -1) fail("left_window_size and right_window_size must be -1 or non-negative");
  if (g.has_nonpad && (r.nonpad->size() != 1 || (*r.nonpad)[0] != g.B))
    fail("nonpad_kv_seqlen must have shape [" + std::to_string(g.B) + "], got " + dims(*r.nonpad));

  g.Tm = g.T;
  if (r.mask) {
    const Shape& m = *r.mask;
    if (m.empty() || m.size() > 4) fail("attn_mask must have rank 1 to 4, got " + dims(m));
    g.has_mask = true;
    g.Tm = m.back();
    if (g.Tm > g.T)
      fail("attn_mask's last dimension " + std::to_string(g.Tm) + " exceeds total_sequence_length " + std::to_string(g.T));
    const int64_t full[4] = {g.B, g.Hq, g.Sq, g.Tm};
    const size_t off = 4 - m.size();
    int64_t stride = 1;
    for (size_t a = m.size(); a-- > 0;) {
      if (m[a] != 1 && m[a] != full[a + off])
        fail("attn_mask shape " + dims(m) + " does not broadcast to (" + std::to_string(g.B) + ", " + std::to_string(g.Hq) +
             ", " + std::to_string(g.Sq) + ", " + std::to_string(g.T) + ")");
      g.mask_stride[a + off] = m[a] == 1 ? 0 : stride;
      stride *= m[a];
    }
  }
  return g;
}

}  // namespace onnxscope::attention
