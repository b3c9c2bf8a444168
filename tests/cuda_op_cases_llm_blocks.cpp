// Random problems for the LLM block operators (opsets 27 and 28): SwiGLU
// with any alpha; CausalConvWithState with and without bias, past state
// and SiLU, kernels longer than the sequence; LinearAttention under every
// update rule, grouped query heads, decay per head or per key dimension,
// beta per head or shared, with and without a past state. The device
// computes these in double in the reference's order, so on the host runtime
// even float16 results must be the reference's bits. TensorScatter (opset
// 24), the key/value cache write: 3-D and 4-D caches, the sequence axis
// given or not, linear and circular modes, write indices or none, circular
// starts far past the cache and negative.
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

Case tensor_scatter(Rng& rng, const std::string&) {
  Case c(24);
  const bool four = coin(rng);
  const int64_t batch = pick(rng, 1, 3), max_len = pick(rng, 1, 6), seq = pick(rng, 0, max_len);
  Shape past = four ? Shape{batch, pick(rng, 1, 2), max_len, pick(rng, 1, 3)} : Shape{batch, max_len, pick(rng, 1, 4)};
  const size_t axis = four ? 2 : 1;
  Shape upd = past;
  upd[axis] = seq;
  const DataType t = choose(rng, std::vector<DataType>{DataType::Float, DataType::Float16, DataType::Int64, DataType::Uint8});
  c.add_tensor("past", t, past, rng, 0, 9);
  c.add_tensor("update", t, upd, rng, 10, 20);
  c.note_type(t);
  const bool circular = coin(rng);
  std::vector<std::string> in = {"past", "update"};
  if (pick(rng, 0, 3) != 0) {
    std::vector<int64_t> w;
    for (int64_t b = 0; b < batch; ++b) {
      if (!circular) w.push_back(pick(rng, 0, max_len - seq));
      else w.push_back(choose(rng, std::vector<int64_t>{pick(rng, -9, -1), pick(rng, 0, 9), INT64_MAX - pick(rng, 0, 3), INT64_MIN + pick(rng, 0, 3)}));
    }
    c.index_input("write", DataType::Int64, {batch}, w);
    in.push_back("write");
  }
  auto& n = c.node("TensorScatter", in);
  if (circular) attr_string(n, "mode", "circular");
  if (coin(rng)) attr_int(n, "axis", coin(rng) ? static_cast<int64_t>(axis) : static_cast<int64_t>(axis) - static_cast<int64_t>(past.size()));
  c.what += circular ? " circular" : " linear";
  return c;
}

void add_llm_block_generators(std::map<std::string, Generator>& m) {
  m["TensorScatter"] = tensor_scatter;
  m["SwiGLU"] = swiglu;
  m["CausalConvWithState"] = causal_conv;
  m["LinearAttention"] = linear_attention;
}

}  // namespace onnxscope::test::cuda_cases
