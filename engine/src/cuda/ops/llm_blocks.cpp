// SwiGLU, CausalConvWithState and LinearAttention (kernels/llm_blocks.h):
// float32, float16 and bfloat16 (through float32, run_on_float32), with the
// reference's shape checks and its roundings to the input's type.
#include <cmath>

#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

// --- SwiGLU ---

std::optional<std::string> refuse_swiglu(const Graph& g, const Node& n) {
  if (n.inputs.size() != 2) return std::string("SwiGLU takes A and B");
  return require_one_real_type(g, n);
}

void swiglu(OpContext& c, DataType type) {
  const DeviceTensor &a = c.input(0), &b = c.input(1);
  if (a.shape != b.shape)
    c.fail("A and B must have identical shapes (no broadcasting), got " + shape_to_string(a.shape) + " and " + shape_to_string(b.shape));
  c.output(0) = c.allocate(DataType::Float, a.shape);
  SwiGluKernel k;
  k.alpha = c.attr_float("alpha", 1.f);
  k.narrow = narrow_code(type);
  k.a = static_cast<const float*>(a.data);
  k.b = static_cast<const float*>(b.data);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(a.shape)));
}

void run_swiglu(OpContext& c) {
  const DataType t = c.input(0).dtype;
  run_on_float32(c, [t](OpContext& f) { swiglu(f, t); });
}

// --- CausalConvWithState ---

std::optional<std::string> refuse_causal_conv(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::string("CausalConvWithState takes input and weight");
  return require_one_real_type(g, n);
}

void causal_conv(OpContext& c, DataType type) {
  const DeviceTensor &x = c.input(0), &w = c.input(1);
  if (x.shape.size() != 3) c.fail("input must be 3-D (batch, channels, length), got " + shape_to_string(x.shape));
  const int64_t B = x.shape[0], C = x.shape[1], L = x.shape[2];
  if (w.shape.size() != 3 || w.shape[0] != C || w.shape[1] != 1 || w.shape[2] < 1)
    c.fail("weight must have shape (channels, 1, k), got " + shape_to_string(w.shape));
  const int64_t k = w.shape[2];
  const DeviceTensor* bias = c.has_input(2) ? &c.input(2) : nullptr;
  const DeviceTensor* past = c.has_input(3) ? &c.input(3) : nullptr;
  if (bias && bias->shape != Shape{C}) c.fail("bias must have shape [" + std::to_string(C) + "]");
  if (past && past->shape != Shape{B, C, k - 1})
    c.fail("past_state must have shape " + shape_to_string(Shape{B, C, k - 1}) + ", got " + shape_to_string(past->shape));
  const std::string act = c.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") c.fail("unknown activation '" + act + "'");
  CausalConvKernel conv;
  conv.C = C;
  conv.L = L;
  conv.k = k;
  conv.silu = act != "none";
  conv.narrow = narrow_code(type);
  conv.x = static_cast<const float*>(x.data);
  conv.w = static_cast<const float*>(w.data);
  conv.bias = bias ? static_cast<const float*>(bias->data) : nullptr;
  conv.past = past ? static_cast<const float*>(past->data) : nullptr;
  c.output(0) = c.allocate(DataType::Float, x.shape);
  conv.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), conv, static_cast<int64_t>(elements_of(x.shape)));
  if (!c.wants_output(1)) return;
  c.output(1) = c.allocate(DataType::Float, {B, C, k - 1});
  const CausalConvStateKernel s{conv, static_cast<float*>(c.output(1).data)};
  launch(c.rt(), s, static_cast<int64_t>(elements_of(c.output(1).shape)));
}

void run_causal_conv(OpContext& c) {
  const DataType t = c.input(0).dtype;
  run_on_float32(c, [t](OpContext& f) { causal_conv(f, t); });
}

// --- LinearAttention ---

enum LinearInput { kQuery, kKey, kValue, kPast, kDecay, kBeta };

std::optional<std::string> refuse_linear_attention(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3) return std::string("LinearAttention takes query, key and value");
  // past_state (S) may differ from T in the spec; on the device it must not,
  // so that every output is of query's type.
  return require_one_real_type(g, n);
}

void linear_attention(OpContext& c) {
  const DeviceTensor &q = c.input(kQuery), &k = c.input(kKey), &v = c.input(kValue);
  const DeviceTensor* past = c.has_input(kPast) ? &c.input(kPast) : nullptr;
  const DeviceTensor* decay = c.has_input(kDecay) ? &c.input(kDecay) : nullptr;
  const DeviceTensor* beta = c.has_input(kBeta) ? &c.input(kBeta) : nullptr;
  const std::string rule = c.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") c.fail("unknown update_rule '" + rule + "'");
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (!c.node().attribute("q_num_heads") || !c.node().attribute("kv_num_heads")) c.fail("q_num_heads and kv_num_heads are required");
  const int64_t Hq = c.attr_int("q_num_heads", 0), Hkv = c.attr_int("kv_num_heads", 0);
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv != 0) c.fail("q_num_heads must be a positive multiple of kv_num_heads");
  if (gating != (decay != nullptr)) c.fail("update_rule '" + rule + (gating ? "' requires" : "' forbids") + " the decay input");
  if (delta != (beta != nullptr)) c.fail("update_rule '" + rule + (delta ? "' requires" : "' forbids") + " the beta input");
  if (q.shape.size() != 3 || k.shape.size() != 3 || v.shape.size() != 3) c.fail("query, key and value must be 3-D (B, T, H*D)");
  const int64_t B = q.shape[0], T = q.shape[1];
  if (q.shape[2] % Hq != 0 || v.shape[2] % Hkv != 0) c.fail("packed hidden sizes must divide by the head counts");
  const int64_t dk = q.shape[2] / Hq, dv = v.shape[2] / Hkv;
  if (k.shape != Shape{B, T, Hkv * dk}) c.fail("key has shape " + shape_to_string(k.shape) + ", expected " + shape_to_string(Shape{B, T, Hkv * dk}));
  if (v.shape[0] != B || v.shape[1] != T) c.fail("value must have query's batch and sequence sizes");
  LinearAttentionKernel a;
  if (decay) {
    const Shape& s = decay->shape;
    if (s.size() != 3 || s[0] != B || s[1] != T || (s[2] != Hkv && s[2] != Hkv * dk))
      c.fail("decay must have shape (B, T, kv_num_heads) or (B, T, kv_num_heads*d_k), got " + shape_to_string(s));
    a.decay_width = s[2] == Hkv ? 1 : dk;
    a.decay = static_cast<const float*>(decay->data);
  }
  if (beta) {
    const Shape& s = beta->shape;
    if (s.size() != 3 || s[0] != B || s[1] != T || (s[2] != Hkv && s[2] != 1))
      c.fail("beta must have shape (B, T, kv_num_heads) or (B, T, 1), got " + shape_to_string(s));
    a.beta_heads = s[2];
    a.beta = static_cast<const float*>(beta->data);
  }
  const Shape state{B, Hkv, dk, dv};
  if (past && past->shape != state) c.fail("past_state has shape " + shape_to_string(past->shape) + ", expected " + shape_to_string(state));
  const float scale = c.attr_float("scale", 0.f);
  a.scale = scale == 0.f ? 1.0 / std::sqrt(static_cast<double>(dk)) : static_cast<double>(scale);
  a.T = T;
  a.Hq = Hq;
  a.Hkv = Hkv;
  a.dk = dk;
  a.dv = dv;
  a.q = static_cast<const float*>(q.data);
  a.k = static_cast<const float*>(k.data);
  a.v = static_cast<const float*>(v.data);
  a.past = past ? static_cast<const float*>(past->data) : nullptr;
  c.output(0) = c.allocate(DataType::Float, {B, T, Hq * dv});
  a.out = static_cast<float*>(c.output(0).data);
  if (c.wants_output(1)) {
    c.output(1) = c.allocate(DataType::Float, state);
    a.present = static_cast<float*>(c.output(1).data);
  }
  const DeviceTensor work = c.allocate(DataType::Double, state);
  a.work = static_cast<double*>(work.data);
  launch(c.rt(), a, B * Hkv * dv);
}

void run_linear_attention(OpContext& c) { run_on_float32(c, linear_attention); }

}  // namespace

void add_llm_block_ops(std::vector<OpDef>& t) {
  t.push_back({"SwiGLU", refuse_swiglu, run_swiglu});
  t.push_back({"CausalConvWithState", refuse_causal_conv, run_causal_conv});
  t.push_back({"LinearAttention", refuse_linear_attention, run_linear_attention});
}

}  // namespace onnxscope::cuda
