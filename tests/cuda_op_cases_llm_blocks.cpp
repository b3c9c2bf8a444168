// Random problems for the LLM block operators (opsets 27 and 28): SwiGLU
// with any alpha; CausalConvWithState with and without bias, past state
// and SiLU, kernels longer than the sequence; LinearAttention under every
// update rule, grouped query heads, decay per head or per key dimension,
// beta per head or shared, with and without a past state. The device
// computes these in double in the reference's order, so on the host runtime
// even float16 results must be the reference's bits.
#include "cuda_op_cases.h"

namespace onnxscope::test::cuda_cases {

namespace {

Case swiglu(Rng& rng, const std::string&) {
  Case c(28);
  const Shape s = random_shape(rng, 0, 4);
  const DataType t = real_type(rng);
  c.add_tensor("a", t, s, rng, -6, 6);
  c.add_tensor("b", t, s, rng, -2, 2);
  c.note_type(t);
  auto& n = c.node("SwiGLU", {"a", "b"});
  if (coin(rng)) attr_float(n, "alpha", choose(rng, std::vector<float>{0.5f, 1.702f, -1.f}));
  return c;
}

Case causal_conv(Rng& rng, const std::string&) {
  Case c(27);
  const int64_t B = pick(rng, 1, 2), C = pick(rng, 1, 4), L = pick(rng, 1, 7), k = pick(rng, 1, 5);
  const DataType t = real_type(rng);
  std::vector<std::string> in = {c.add_tensor("x", t, {B, C, L}, rng, -2, 2), c.add_tensor("w", t, {C, 1, k}, rng, -1, 1), "", ""};
  if (coin(rng)) in[2] = c.add_tensor("bias", t, {C}, rng, -1, 1);
  if (coin(rng)) in[3] = c.add_tensor("past", t, {B, C, k - 1}, rng, -2, 2);
  while (in.back().empty()) in.pop_back();
  c.note_type(t);
  auto& n = c.node("CausalConvWithState", in, 2);
  if (coin(rng)) attr_string(n, "activation", choose(rng, std::vector<std::string>{"none", "silu", "swish"}));
  return c;
}

Case linear_attention(Rng& rng, const std::string&) {
  Case c(27);
  const std::string rule = choose(rng, std::vector<std::string>{"linear", "gated", "delta", "gated_delta"});
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  const int64_t B = pick(rng, 1, 2), T = pick(rng, 0, 6), Hkv = pick(rng, 1, 2), Hq = Hkv * pick(rng, 1, 3);
  const int64_t dk = pick(rng, 1, 5), dv = pick(rng, 1, 5);
  const DataType t = real_type(rng);
  std::vector<std::string> in = {c.add_tensor("q", t, {B, T, Hq * dk}, rng, -1, 1), c.add_tensor("k", t, {B, T, Hkv * dk}, rng, -1, 1),
                                 c.add_tensor("v", t, {B, T, Hkv * dv}, rng, -1, 1), "", "", ""};
  if (coin(rng)) in[3] = c.add_tensor("past", t, {B, Hkv, dk, dv}, rng, -1, 1);
  if (gating) in[4] = c.add_tensor("decay", t, {B, T, coin(rng) ? Hkv : Hkv * dk}, rng, -1, 0);  // log-space, at most 0
  if (delta) in[5] = c.add_tensor("beta", t, {B, T, coin(rng) ? Hkv : 1}, rng, 0, 1);
  while (in.back().empty()) in.pop_back();
  c.note_type(t);
  auto& n = c.node("LinearAttention", in, 2);
  attr_int(n, "q_num_heads", Hq);
  attr_int(n, "kv_num_heads", Hkv);
  attr_string(n, "update_rule", rule);
  if (coin(rng)) attr_float(n, "scale", 0.5f);
  c.what += " " + rule;
  return c;
}

}  // namespace

void add_llm_block_generators(std::map<std::string, Generator>& m) {
  m["SwiGLU"] = swiglu;
  m["CausalConvWithState"] = causal_conv;
  m["LinearAttention"] = linear_attention;
}

}  // namespace onnxscope::test::cuda_cases
