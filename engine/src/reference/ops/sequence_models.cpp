// Reference kernels: recurrent, attention, quantization, signal: RNN, GRU, LSTM, Attention, RotaryEmbedding, LinearAttention, CausalConvWithState, SwiGLU, ai.onnx.preview FlexAttention, QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
//
// This file holds the attention-style operators; sequence_models_rnn.cpp the
// recurrent layers and sequence_models_signal.cpp quantization and signal
// processing. Inputs are widened to double and sums accumulate in double; where
// the spec's computation graph has an intermediate tensor of the input type
// (Attention's QK^T, its softmax output) the value is rounded to that type
// there, so narrow-float results follow the spec's precision.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/attention_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/ops.h"
#include "reference/ops/sequence_models_parts.h"

namespace onnxscope::ref {
namespace {

using seqm::round_to;
using seqm::sigmoid;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Softmax over a row, each step rounded to the precision `t` it is computed in.
// A row whose maximum is -inf (nothing attendable) becomes zeros.
void softmax_row(double* x, int64_t n, DataType t) {
  double mx = kNegInf;
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, x[j]);
  const double shift = std::isinf(mx) && mx < 0 ? 0.0 : mx;
  // The running sum is kept in double for float and double; for the narrow
  // types it follows the onnx reference's reductions (numpy sums float16 in
  // float, ml_dtypes sums bfloat16 in bfloat16), which the upstream tests need.
  const DataType acc_t =
      t == DataType::BFloat16 ? t : (t == DataType::Float16 ? DataType::Float : DataType::Double);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    x[j] = round_to(t, std::exp(round_to(t, x[j] - shift)));
    sum = round_to(acc_t, sum + x[j]);
  }
  sum = round_to(t, sum);
  if (sum == 0) sum = 1;
  for (int64_t j = 0; j < n; ++j) x[j] = round_to(t, x[j] / sum);
}

// Precision named by a softmax_precision attribute value.
DataType softmax_type(const KernelContext& ctx, int64_t v) {
  switch (v) {
    case 1: return DataType::Float;
    case 10: return DataType::Float16;
    case 11: return DataType::Double;
    case 16: return DataType::BFloat16;
    default: ctx.fail("unsupported softmax_precision " + std::to_string(v));
  }
}

// --- Attention ---------------------------------------------------------------------

// Maps (b, h, s, d) of a logical (B, H, S, D) tensor to the flat index of its
// 4-D (B, H, S, D) or 3-D (B, S, H*D) storage.
struct HeadLayout {
  bool packed = false;  // 3-D input
  int64_t H = 1, S = 0, D = 0;
  uint64_t operator()(int64_t b, int64_t h, int64_t s, int64_t d) const {
    return packed ? uint64_t(((b * S + s) * H + h) * D + d) : uint64_t(((b * H + h) * S + s) * D + d);
  }
};

void Attention(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& Q = ctx.input(0);
  const Tensor& K = ctx.input(1);
  const Tensor& V = ctx.input(2);
  const Tensor* mask = ctx.optional_input(3);
  const Tensor* past_key = ctx.optional_input(4);
  const Tensor* past_value = ctx.optional_input(5);
  const Tensor* nonpad = opset >= 24 ? ctx.optional_input(6) : nullptr;
  seqm::require_float(ctx, Q, "Q");
  seqm::require_float(ctx, V, "V");
  if (K.dtype() != Q.dtype()) ctx.fail("K must have the type of Q");
  const DataType t1 = Q.dtype(), t2 = V.dtype();
  if (past_key && past_value && (past_key->dtype() != t1 || past_value->dtype() != t2))
    ctx.fail("past_key/past_value must have the types of K/V");
  if (mask && mask->dtype() != DataType::Bool && !dtype_info(mask->dtype()).is_integer && !dtype_info(mask->dtype()).is_float)
    ctx.fail("attn_mask: does not support element type " + std::string(dtype_name(mask->dtype())));
  attention::Request req = attention::request_of(ctx.node(), opset);
  req.q = Q.shape();
  req.k = K.shape();
  req.v = V.shape();
  if (mask) req.mask = mask->shape();
  if (past_key) req.past_key = past_key->shape();
  if (past_value) req.past_value = past_value->shape();
  if (nonpad) req.nonpad = nonpad->shape();
  attention::Geometry G;
  try {
    G = attention::plan(req);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
  const int64_t B = G.B, Hq = G.Hq, Hkv = G.Hkv, Sq = G.Sq, Skv = G.Skv, P = G.P, T = G.T, D = G.D, Dv = G.Dv;
  const bool packed = G.packed;
  const HeadLayout ql{packed, Hq, Sq, D}, kl{packed, Hkv, Skv, D}, vl{packed, Hkv, Skv, Dv};

  // Key/value cache: present = concat(past, new) on the sequence axis.
  check_work_buffer(ctx, {B, Hkv, T, D}, "the keys (past and new)");
  check_work_buffer(ctx, {B, Hkv, T, Dv}, "the values (past and new)");
  check_work_buffer(ctx, {B, Hq, Sq, Dv}, "the output");
  std::vector<double> keys(size_t(B * Hkv * T * D)), values(size_t(B * Hkv * T * Dv));
  {
    const std::vector<double> k = real_values(K), v = real_values(V);
    const std::vector<double> pk = past_key ? real_values(*past_key) : std::vector<double>{};
    const std::vector<double> pv = past_value ? real_values(*past_value) : std::vector<double>{};
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t s = 0; s < T; ++s) {
          for (int64_t d = 0; d < D; ++d)
            keys[size_t(((b * Hkv + h) * T + s) * D + d)] =
                s < P ? pk[size_t(((b * Hkv + h) * P + s) * D + d)] : k[kl(b, h, s - P, d)];
          for (int64_t d = 0; d < Dv; ++d)
            values[size_t(((b * Hkv + h) * T + s) * Dv + d)] =
                s < P ? pv[size_t(((b * Hkv + h) * P + s) * Dv + d)] : v[vl(b, h, s - P, d)];
        }
  }
  const std::vector<double> q = real_values(Q);

  // Q and K are each scaled by sqrt(scale), a value of Q's type, before the product.
  const double sqrt_scale = round_to(t1, std::sqrt(G.scale));
  std::vector<double> qs(q.size()), ks(keys.size());
  for (size_t i = 0; i < q.size(); ++i) qs[i] = round_to(t1, q[i] * sqrt_scale);
  for (size_t i = 0; i < keys.size(); ++i) ks[i] = round_to(t1, keys[i] * sqrt_scale);
  const double softcap = G.softcap;
  const int64_t mode = G.mode, left = G.left, right = G.right;
  const DataType smax_t = ctx.has_attr("softmax_precision") ? softmax_type(ctx, ctx.attr_int("softmax_precision", 1)) : t1;

  // Per-batch offset of the query block: the causal frontier and window are bottom-right aligned.
  std::vector<int64_t> nonpad_len(size_t(B), T), offset(size_t(B), P);
  if (nonpad) {
    nonpad_len = int_values(ctx, *nonpad);
    // Lengths from data only meet comparisons; held to +-2^40 (as the CUDA kernel does), so the arithmetic cannot overflow.
    for (auto& v : nonpad_len) v = std::clamp<int64_t>(v, -(int64_t{1} << 40), int64_t{1} << 40);
    for (int64_t b = 0; b < B; ++b) offset[size_t(b)] = nonpad_len[size_t(b)] - Sq;
  }
  const std::vector<double> mask_vals = mask ? real_values(*mask) : std::vector<double>{};
  const bool mask_bool = mask && mask->dtype() == DataType::Bool;
  const auto& ms = G.mask_stride;

  // Outputs.
  Tensor& Y = ctx.allocate_output(0, t1, G.y_shape());
  std::vector<double> y(Y.element_count());
  const bool want_qk = ctx.output_count() > 3 && ctx.output_wanted(3);
  if (want_qk) seqm::check_work(ctx, G.qk_shape(), "qk_matmul_output");
  std::vector<double> qk_out(want_qk ? size_t(B * Hq * Sq * T) : 0);

  std::vector<double> scores(static_cast<size_t>(T)), bias(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / G.group;  // GQA: contiguous groups of query heads share a KV head
      for (int64_t i = 0; i < Sq; ++i) {
        // Additive bias: mask, causal frontier, sliding window, padding.
        bool all_masked = true;
        for (int64_t j = 0; j < T; ++j) {
          double bj = 0;
          if (mask) {
            if (j >= G.Tm) bj = kNegInf;
            else {
              const double m = mask_vals[size_t(b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3])];
              bj = mask_bool ? (m != 0 ? 0.0 : kNegInf) : round_to(t1, m);
            }
          }
          const int64_t pos = i + offset[size_t(b)];  // absolute position of query i
          if (G.causal && j > pos) bj = kNegInf;
          if (left >= 0 && pos - j > left) bj = kNegInf;
          if (right >= 0 && j - pos > right) bj = kNegInf;
          if (nonpad && j >= nonpad_len[size_t(b)]) bj = kNegInf;
          bias[size_t(j)] = bj;
          if (!(std::isinf(bj) && bj < 0)) all_masked = false;
        }
        // scores = (Q K^T) * scale, then softcap, then + bias.
        const uint64_t qk_row = uint64_t(((b * Hq + h) * Sq + i) * T);
        for (int64_t j = 0; j < T; ++j) {
          const double* kr = &ks[size_t(((b * Hkv + hk) * T + j) * D)];
          double acc = 0;
          for (int64_t d = 0; d < D; ++d) acc += qs[ql(b, h, i, d)] * kr[d];
          double s = round_to(t1, acc);
          if (want_qk && mode == 0) qk_out[qk_row + j] = s;
          if (softcap > 0) s = round_to(t1, softcap * std::tanh(s / softcap));
          if (want_qk && mode == 1) qk_out[qk_row + j] = s;
          s = round_to(t1, s + bias[size_t(j)]);
          if (want_qk && mode == 2) qk_out[qk_row + j] = s;
          scores[size_t(j)] = round_to(smax_t, s);
        }
        softmax_row(scores.data(), T, smax_t);
        for (int64_t j = 0; j < T; ++j) {
          // Rows with no attendable key are zero (decided on the bias, not the scores).
          scores[size_t(j)] = all_masked ? 0.0 : round_to(t1, scores[size_t(j)]);
          if (want_qk && mode == 3) qk_out[qk_row + j] = scores[size_t(j)];
        }
        for (int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < T; ++j) acc += scores[size_t(j)] * values[size_t(((b * Hkv + hk) * T + j) * Dv + d)];
          y[packed ? uint64_t(((b * Sq + i) * Hq + h) * Dv + d) : uint64_t(((b * Hq + h) * Sq + i) * Dv + d)] = acc;
        }
      }
    }
  }
  seqm::store_doubles(ctx, Y, y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) seqm::store_doubles(ctx, ctx.allocate_output(1, t1, G.present_key_shape()), keys);
  if (ctx.output_count() > 2 && ctx.output_wanted(2))
    seqm::store_doubles(ctx, ctx.allocate_output(2, t2, G.present_value_shape()), values);
  if (want_qk) seqm::store_doubles(ctx, ctx.allocate_output(3, t1, G.qk_shape()), qk_out);
}

// --- FlexAttention (ai.onnx.preview) ----------------------------------------------

// Runs a modifier subgraph on a (B, Hq, L, S) tensor of type `t`; returns its output as doubles.
std::vector<double> run_modifier(KernelContext& ctx, const Graph& g, DataType t, const Shape& shape,
                                 const std::vector<double>& in, const char* name) {
  Tensor arg = Tensor::zeros(t, shape);
  seqm::store_doubles(ctx, arg, in);
  std::vector<Value> outs = ctx.run_graph(g, {Value(std::move(arg))});
  if (outs.size() != 1 || !outs[0].is_tensor()) ctx.fail(std::string(name) + " must produce exactly one tensor");
  const Tensor& r = outs[0].tensor();
  if (r.shape() != shape)
    ctx.fail(std::string(name) + " output has shape " + shape_to_string(r.shape()) + ", expected " + shape_to_string(shape));
  seqm::require_float(ctx, r, name);
  std::vector<double> v = real_values(r);
  for (double& x : v) x = round_to(t, x);
  return v;
}

// Y = prob_mod(softmax(score_mod((Q K^T) * scale))) V
void FlexAttention(KernelContext& ctx) {
  const Tensor& Q = ctx.input(0);
  const Tensor& K = ctx.input(1);
  const Tensor& V = ctx.input(2);
  seqm::require_float(ctx, Q, "Q");
  if (K.dtype() != Q.dtype() || V.dtype() != Q.dtype()) ctx.fail("Q, K and V must have the same type");
  if (Q.rank() != 4 || K.rank() != 4 || V.rank() != 4)
    ctx.fail("Q, K and V must be 4-D, got " + shape_to_string(Q.shape()) + ", " + shape_to_string(K.shape()) + ", " +
             shape_to_string(V.shape()));
  const int64_t B = Q.shape()[0], Hq = Q.shape()[1], L = Q.shape()[2], E = Q.shape()[3];
  const int64_t Hkv = K.shape()[1], S = K.shape()[2], Ev = V.shape()[3];
  if (K.shape()[0] != B || V.shape()[0] != B) ctx.fail("Q, K and V must have the same batch size");
  if (K.shape()[3] != E) ctx.fail("Q and K must have the same head size");
  if (V.shape()[1] != Hkv || V.shape()[2] != S) ctx.fail("K and V must have the same heads and sequence length");
  if (Hkv <= 0 || Hq % Hkv != 0) ctx.fail("q_num_heads must be a multiple of kv_num_heads");
  const int64_t group = Hq / Hkv;
  const DataType t = Q.dtype();
  const DataType ct = ctx.has_attr("softmax_precision") ? softmax_type(ctx, ctx.attr_int("softmax_precision", 1))
                                                         : (t == DataType::Double ? DataType::Double : DataType::Float);
  const double scale = ctx.has_attr("scale") ? double(ctx.attr_float("scale", 0)) : 1.0 / std::sqrt(double(E));
  const std::vector<double> q = real_values(Q), k = real_values(K), v = real_values(V);
  const Shape sshape{B, Hq, L, S};
  check_work_buffer(ctx, sshape, "the scores");
  check_work_buffer(ctx, {B, Hq, L, Ev}, "the output");
  std::vector<double> scores(size_t(B * Hq * L * S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < E; ++e)
            acc += q[size_t(((b * Hq + h) * L + i) * E + e)] * k[size_t(((b * Hkv + h / group) * S + j) * E + e)];
          // Q K^T is a tensor of the input type, then cast to the softmax precision.
          scores[size_t(((b * Hq + h) * L + i) * S + j)] = round_to(ct, round_to(t, acc * scale));
        }
  if (const Graph* g = ctx.attr_graph("score_mod")) scores = run_modifier(ctx, *g, ct, sshape, scores, "score_mod");
  for (int64_t r = 0; r < B * Hq * L; ++r) {
    double* row = &scores[size_t(r * S)];
    // Plain softmax: an all -inf row is NaN, as exp(-inf - -inf) is.
    double mx = kNegInf;
    for (int64_t j = 0; j < S; ++j) mx = std::max(mx, row[j]);
    double sum = 0;
    for (int64_t j = 0; j < S; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < S; ++j) row[j] = round_to(ct, row[j] / sum);
  }
  if (const Graph* g = ctx.attr_graph("prob_mod")) scores = run_modifier(ctx, *g, ct, sshape, scores, "prob_mod");
  std::vector<double> y(size_t(B * Hq * L * Ev));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t e = 0; e < Ev; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j)
            acc += scores[size_t(((b * Hq + h) * L + i) * S + j)] *
                   round_to(ct, v[size_t(((b * Hkv + h / group) * S + j) * Ev + e)]);
          y[size_t(((b * Hq + h) * L + i) * Ev + e)] = round_to(ct, acc);
        }
  seqm::store_doubles(ctx, ctx.allocate_output(0, t, {B, Hq, L, Ev}), y);
}

// --- RotaryEmbedding ------------------------------------------------------------------

void RotaryEmbedding(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& cos_cache = ctx.input(1);
  const Tensor& sin_cache = ctx.input(2);
  const Tensor* pos = ctx.optional_input(3);
  seqm::require_float(ctx, X, "X");
  if (cos_cache.dtype() != X.dtype() || sin_cache.dtype() != X.dtype()) ctx.fail("cos_cache and sin_cache must have the type of X");
  if (cos_cache.shape() != sin_cache.shape()) ctx.fail("cos_cache and sin_cache must have the same shape");
  HeadLayout xl;  // logical (B, H, S, D)
  int64_t B = 0;
  if (X.rank() == 4) {
    B = X.shape()[0];
    xl = HeadLayout{false, X.shape()[1], X.shape()[2], X.shape()[3]};
  } else if (X.rank() == 3) {
    const int64_t heads = ctx.attr_int("num_heads", 0);
    if (heads <= 0) ctx.fail("3-D input needs a positive num_heads attribute");
    if (X.shape()[2] % heads != 0) ctx.fail("hidden size " + std::to_string(X.shape()[2]) + " is not divisible by num_heads");
    B = X.shape()[0];
    xl = HeadLayout{true, heads, X.shape()[1], X.shape()[2] / heads};
  } else {
    ctx.fail("X must be 3-D or 4-D, got " + shape_to_string(X.shape()));
  }
  const int64_t H = xl.H, S = xl.S, D = xl.D;
  int64_t rd = ctx.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2 != 0) ctx.fail("rotary_embedding_dim " + std::to_string(rd) + " must be even and at most head_size " + std::to_string(D));
  const int64_t half = rd / 2;
  const bool interleaved = ctx.attr_int("interleaved", 0) != 0;
  if (cos_cache.shape().empty() || cos_cache.shape().back() != half)
    ctx.fail("cos/sin cache last dimension must be rotary_embedding_dim/2 = " + std::to_string(half) + ", got " +
             shape_to_string(cos_cache.shape()));
  std::vector<int64_t> pids;
  int64_t max_pos = 0;
  if (pos) {
    if (pos->shape() != Shape{B, S}) ctx.fail("position_ids must have shape [" + std::to_string(B) + "," + std::to_string(S) + "]");
    if (cos_cache.rank() != 2) ctx.fail("with position_ids the caches must be 2-D, got " + shape_to_string(cos_cache.shape()));
    max_pos = cos_cache.shape()[0];
    pids.resize(size_t(B * S));
    for (uint64_t i = 0; i < pids.size(); ++i) {
      pids[i] = pos->element_as_int64(i);
      if (pids[i] < 0 || pids[i] >= max_pos) ctx.fail("position id " + std::to_string(pids[i]) + " outside the cache of " + std::to_string(max_pos));
    }
  } else if (cos_cache.shape() != Shape{B, S, half}) {
    ctx.fail("without position_ids the caches must have shape [" + std::to_string(B) + "," + std::to_string(S) + "," +
             std::to_string(half) + "], got " + shape_to_string(cos_cache.shape()));
  }
  const std::vector<double> x = real_values(X), cs = real_values(cos_cache), sn = real_values(sin_cache);
  std::vector<double> y = x;  // dimensions past rotary_embedding_dim pass through
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t row = pos ? pids[size_t(b * S + s)] : b * S + s;  // cache row
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const int64_t d1 = interleaved ? 2 * i : i, d2 = interleaved ? 2 * i + 1 : i + half;
          const double c = cs[size_t(row * half + i)], sv = sn[size_t(row * half + i)];
          const double x1 = x[xl(b, h, s, d1)], x2 = x[xl(b, h, s, d2)];
          y[xl(b, h, s, d1)] = c * x1 - sv * x2;
          y[xl(b, h, s, d2)] = sv * x1 + c * x2;
        }
    }
  seqm::store_doubles(ctx, ctx.allocate_output(0, X.dtype(), X.shape()), y);
}

// --- LinearAttention --------------------------------------------------------------------

// Recurrent linear attention over a (B, H_kv, d_k, d_v) state, one token at a time:
//   gated:  S *= exp(g_t);  delta: v_t <- beta_t (v_t - S^T k_t);  S += k_t v_t^T;  o_t = scale q_t^T S.
void LinearAttention(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const Tensor& key = ctx.input(1);
  const Tensor& value = ctx.input(2);
  const Tensor* past = ctx.optional_input(3);
  const Tensor* decay = ctx.optional_input(4);
  const Tensor* beta = ctx.optional_input(5);
  seqm::require_float(ctx, query, "query");
  if (key.dtype() != query.dtype() || value.dtype() != query.dtype()) ctx.fail("query, key and value must have the same type");
  const std::string rule = ctx.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    ctx.fail("unknown update_rule '" + rule + "'");
  const bool gating = rule == "gated" || rule == "gated_delta";
  const bool delta = rule == "delta" || rule == "gated_delta";
  if (!ctx.has_attr("q_num_heads") || !ctx.has_attr("kv_num_heads")) ctx.fail("q_num_heads and kv_num_heads are required");
  const int64_t Hq = ctx.attr_int("q_num_heads", 0), Hkv = ctx.attr_int("kv_num_heads", 0);
  if (Hq <= 0 || Hkv <= 0 || Hq % Hkv != 0) ctx.fail("q_num_heads must be a positive multiple of kv_num_heads");
  if (gating != (decay != nullptr)) ctx.fail("update_rule '" + rule + (gating ? "' requires" : "' forbids") + " the decay input");
  if (delta != (beta != nullptr)) ctx.fail("update_rule '" + rule + (delta ? "' requires" : "' forbids") + " the beta input");
  if (query.rank() != 3 || key.rank() != 3 || value.rank() != 3) ctx.fail("query, key and value must be 3-D (B, T, H*D)");
  const int64_t B = query.shape()[0], T = query.shape()[1];
  if (query.shape()[2] % Hq != 0 || value.shape()[2] % Hkv != 0) ctx.fail("packed hidden sizes must divide by the head counts");
  const int64_t dk = query.shape()[2] / Hq, dv = value.shape()[2] / Hkv;
  if (key.shape() != Shape{B, T, Hkv * dk}) ctx.fail("key has shape " + shape_to_string(key.shape()) + ", expected " + shape_to_string(Shape{B, T, Hkv * dk}));
  if (value.shape()[0] != B || value.shape()[1] != T) ctx.fail("value must have query's batch and sequence sizes");
  int64_t decay_width = 0;
  if (decay) {
    if (decay->dtype() != query.dtype()) ctx.fail("decay must have the type of query");
    if (decay->rank() != 3 || decay->shape()[0] != B || decay->shape()[1] != T ||
        (decay->shape()[2] != Hkv && decay->shape()[2] != Hkv * dk))
      ctx.fail("decay must have shape (B, T, kv_num_heads) or (B, T, kv_num_heads*d_k), got " + shape_to_string(decay->shape()));
    decay_width = decay->shape()[2] == Hkv ? 1 : dk;  // per head or per key dimension
  }
  int64_t beta_heads = 0;
  if (beta) {
    if (beta->dtype() != query.dtype()) ctx.fail("beta must have the type of query");
    if (beta->rank() != 3 || beta->shape()[0] != B || beta->shape()[1] != T ||
        (beta->shape()[2] != Hkv && beta->shape()[2] != 1))
      ctx.fail("beta must have shape (B, T, kv_num_heads) or (B, T, 1), got " + shape_to_string(beta->shape()));
    beta_heads = beta->shape()[2];
  }
  const Shape state_shape{B, Hkv, dk, dv};
  seqm::check_work(ctx, state_shape, "state");
  seqm::check_work(ctx, Shape{B, T, Hq * dv}, "output");
  DataType state_t = query.dtype();
  std::vector<double> state(size_t(B * Hkv * dk * dv), 0.0);
  if (past) {
    seqm::require_float(ctx, *past, "past_state");
    if (past->shape() != state_shape) ctx.fail("past_state has shape " + shape_to_string(past->shape()) + ", expected " + shape_to_string(state_shape));
    state_t = past->dtype();
    state = real_values(*past);
  }
  const float scale_attr = ctx.attr_float("scale", 0.0f);
  const double scale = scale_attr == 0.0f ? 1.0 / std::sqrt(double(dk)) : double(scale_attr);
  const std::vector<double> q = real_values(query), k = real_values(key), v = real_values(value);
  const std::vector<double> g = decay ? real_values(*decay) : std::vector<double>{};
  const std::vector<double> bt = beta ? real_values(*beta) : std::vector<double>{};
  std::vector<double> out(size_t(B * T * Hq * dv));
  std::vector<double> vt(static_cast<size_t>(dv));
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t h = 0; h < Hkv; ++h) {
        double* S = &state[size_t((b * Hkv + h) * dk * dv)];
        const double* kt = &k[size_t(((b * T + t) * Hkv + h) * dk)];
        if (gating)
          for (int64_t i = 0; i < dk; ++i) {
            const double f = std::exp(g[size_t(((b * T + t) * Hkv + h) * decay_width + (decay_width == 1 ? 0 : i))]);
            for (int64_t m = 0; m < dv; ++m) S[i * dv + m] *= f;
          }
        for (int64_t m = 0; m < dv; ++m) vt[size_t(m)] = v[size_t(((b * T + t) * Hkv + h) * dv + m)];
        if (delta) {
          const double bv = bt[size_t((b * T + t) * beta_heads + (beta_heads == 1 ? 0 : h))];
          for (int64_t m = 0; m < dv; ++m) {
            double retrieved = 0;
            for (int64_t i = 0; i < dk; ++i) retrieved += S[i * dv + m] * kt[i];
            vt[size_t(m)] = bv * (vt[size_t(m)] - retrieved);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t m = 0; m < dv; ++m) S[i * dv + m] += kt[i] * vt[size_t(m)];
      }
      for (int64_t h = 0; h < Hq; ++h) {
        const double* S = &state[size_t((b * Hkv + h / group) * dk * dv)];
        const double* qt = &q[size_t(((b * T + t) * Hq + h) * dk)];
        for (int64_t m = 0; m < dv; ++m) {
          double acc = 0;
          for (int64_t i = 0; i < dk; ++i) acc += qt[i] * S[i * dv + m];
          out[size_t(((b * T + t) * Hq + h) * dv + m)] = scale * acc;
        }
      }
    }
  seqm::store_doubles(ctx, ctx.allocate_output(0, query.dtype(), {B, T, Hq * dv}), out);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) seqm::store_doubles(ctx, ctx.allocate_output(1, state_t, state_shape), state);
}

// --- CausalConvWithState ------------------------------------------------------------------

// Depthwise causal conv over concat(past_state or zeros, input); optional fused SiLU.
void CausalConvWithState(KernelContext& ctx) {
  const Tensor& input = ctx.input(0);
  const Tensor& weight = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  const Tensor* past = ctx.optional_input(3);
  seqm::require_float(ctx, input, "input");
  if (input.rank() != 3) ctx.fail("input must be 3-D (batch, channels, length), got " + shape_to_string(input.shape()));
  const int64_t B = input.shape()[0], C = input.shape()[1], L = input.shape()[2];
  if (weight.dtype() != input.dtype() || weight.rank() != 3 || weight.shape()[0] != C || weight.shape()[1] != 1 || weight.shape()[2] < 1)
    ctx.fail("weight must have shape (channels, 1, k) and the type of input, got " + shape_to_string(weight.shape()));
  const int64_t k = weight.shape()[2];
  if (bias && (bias->dtype() != input.dtype() || bias->shape() != Shape{C}))
    ctx.fail("bias must have shape [" + std::to_string(C) + "] and the type of input");
  if (past && (past->dtype() != input.dtype() || past->shape() != Shape{B, C, k - 1}))
    ctx.fail("past_state must have shape " + shape_to_string(Shape{B, C, k - 1}) + " and the type of input, got " + shape_to_string(past->shape()));
  const std::string act = ctx.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") ctx.fail("unknown activation '" + act + "'");
  const bool silu = act != "none";
  seqm::check_work(ctx, Shape{B, C, k - 1}, "present_state");
  const std::vector<double> x = real_values(input), w = real_values(weight);
  const std::vector<double> bv = bias ? real_values(*bias) : std::vector<double>(size_t(C), 0.0);
  const std::vector<double> ps = past ? real_values(*past) : std::vector<double>(size_t(B * C * (k - 1)), 0.0);
  const DataType t = input.dtype();
  check_work_buffer(ctx, {B, C, L}, "the output");
  check_work_buffer(ctx, {B, C, k - 1}, "the state");
  check_work_buffer(ctx, {L + k - 1}, "a padded row");
  std::vector<double> y(size_t(B * C * L)), state(size_t(B * C * (k - 1)));
  std::vector<double> padded(size_t(L + k - 1));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t j = 0; j < k - 1; ++j) padded[size_t(j)] = ps[size_t((b * C + c) * (k - 1) + j)];
      for (int64_t j = 0; j < L; ++j) padded[size_t(k - 1 + j)] = x[size_t((b * C + c) * L + j)];
      for (int64_t tpos = 0; tpos < L; ++tpos) {
        double acc = bv[size_t(c)];
        for (int64_t j = 0; j < k; ++j) acc += w[size_t(c * k + j)] * padded[size_t(tpos + j)];
        // The convolution's result is a tensor of the input type before the activation.
        const double conv = round_to(t, acc);
        y[size_t((b * C + c) * L + tpos)] = silu ? conv * sigmoid(conv) : conv;
      }
      for (int64_t j = 0; j < k - 1; ++j) state[size_t((b * C + c) * (k - 1) + j)] = padded[size_t(L + j)];
    }
  seqm::store_doubles(ctx, ctx.allocate_output(0, t, input.shape()), y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) seqm::store_doubles(ctx, ctx.allocate_output(1, t, {B, C, k - 1}), state);
}

// --- SwiGLU ---------------------------------------------------------------------------------

// Y = A * sigmoid(alpha * A) * B, same shapes, no broadcasting.
void SwiGLU(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& Bt = ctx.input(1);
  seqm::require_float(ctx, A, "A");
  if (Bt.dtype() != A.dtype()) ctx.fail("A and B must have the same type");
  if (Bt.shape() != A.shape())
    ctx.fail("A and B must have identical shapes (no broadcasting), got " + shape_to_string(A.shape()) + " and " + shape_to_string(Bt.shape()));
  const double alpha = ctx.attr_float("alpha", 1.0f);
  const std::vector<double> a = real_values(A), b = real_values(Bt);
  std::vector<double> y(a.size());
  const DataType t = A.dtype();
  // Swish_alpha(A) is a tensor of A's type (the Swish operator's output) before the product.
  for (size_t i = 0; i < a.size(); ++i) y[i] = round_to(t, a[i] * sigmoid(alpha * a[i])) * b[i];
  seqm::store_doubles(ctx, ctx.allocate_output(0, A.dtype(), A.shape()), y);
}

}  // namespace

void register_sequence_models_ops(KernelRegistry& r) {
  auto add = [&](const char* domain, const char* op, KernelFn fn, int since) {
    r.add(KernelDef{domain, op, since, INT_MAX, "reference", fn, nullptr});
  };
  // Attention 23/24/25 share one kernel: nonpad_kv_seqlen (24) and the window
  // attributes (25) are read according to ctx.opset_version().
  add("", "Attention", Attention, 23);
  add("", "RotaryEmbedding", RotaryEmbedding, 23);
  add("", "LinearAttention", LinearAttention, 27);
  add("", "CausalConvWithState", CausalConvWithState, 27);
  add("", "SwiGLU", SwiGLU, 28);
  add("ai.onnx.preview", "FlexAttention", FlexAttention, 1);
  register_sequence_models_rnn_ops(r);
  register_sequence_models_signal_ops(r);
}

}  // namespace onnxscope::ref
