// Shared by the reference's com.microsoft attention kernels (Attention,
// MultiHeadAttention, GroupQueryAttention, QAttention) and its
// RotaryEmbedding: ONNX Runtime's contrib attention computed in double.
//
// Every operator of the family reduces to one computation over heads in the
// (B, N, S, H) layout:
//
//   scores[b,h,i,j] = scale * q[b,h,i,:] . k[b,h/g,j,:]       g = N / N_kv
//   (softcap: scores = softcap * tanh(scores / softcap))
//   scores += bias[b,h,i,j]        mask, causal frontier, attention_bias
//   probs = softmax over j          (smooth: an extra logit 0 in the sum)
//   out[b,i,h,:] = probs . v[b,h/g,:,:]
//
// The operators differ in where q, k and v come from (a projection, packed
// inputs, a past cache) and in how masks become the additive bias; each
// builds the inputs of `attend` and a bias callback. Values are double; the
// kernel rounds once when it stores an output.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/contrib_mask.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref::contrib_attention {

// Heads of one of q, k, v: (B, N, S, H) values, contiguous.
struct Heads {
  int64_t B = 0, N = 0, S = 0, H = 0;
  std::vector<double> v;
  double& at(int64_t b, int64_t n, int64_t s, int64_t h) { return v[size_t(((b * N + n) * S + s) * H + h)]; }
  double at(int64_t b, int64_t n, int64_t s, int64_t h) const { return v[size_t(((b * N + n) * S + s) * H + h)]; }
};

inline Heads make_heads(const KernelContext& ctx, int64_t B, int64_t N, int64_t S, int64_t H, const char* what) {
  real::check_work(ctx, {B, N, S, H}, what);
  return Heads{B, N, S, H, std::vector<double>(size_t(B * N * S * H))};
}

// Heads from a (B, S, N*H) tensor's values starting at column `col0` of rows
// of `row_width` values: the layout of a projection's output, a packed QKV
// input, or a plain (B, S, D) query/key/value (col0 0, row_width N*H).
inline void split_heads(Heads& out, const std::vector<double>& x, int64_t row_width, int64_t col0) {
  for (int64_t b = 0; b < out.B; ++b)
    for (int64_t s = 0; s < out.S; ++s)
      for (int64_t n = 0; n < out.N; ++n)
        for (int64_t h = 0; h < out.H; ++h)
          out.at(b, n, s, h) = x[size_t((b * out.S + s) * row_width + col0 + n * out.H + h)];
}

// keys = concat(past, new) on the sequence axis, per (b, n).
inline Heads concat_past(const KernelContext& ctx, const Heads& past, const Heads& now, const char* what) {
  Heads all = make_heads(ctx, now.B, now.N, past.S + now.S, now.H, what);
  for (int64_t b = 0; b < now.B; ++b)
    for (int64_t n = 0; n < now.N; ++n)
      for (int64_t s = 0; s < all.S; ++s)
        for (int64_t h = 0; h < now.H; ++h)
          all.at(b, n, s, h) = s < past.S ? past.at(b, n, s, h) : now.at(b, n, s - past.S, h);
  return all;
}

// Rotary position embedding of one head's vector `x` (rotary_dim first
// values) at cache row `cos`/`sin` (rotary_dim/2 values each): pairs (i, i +
// half) or, interleaved, (2i, 2i + 1) are rotated; the rest passes through.
inline void rotate(double* x, const double* cos, const double* sin, int64_t rotary_dim, bool interleaved) {
  const int64_t half = rotary_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
    const double x1 = x[a], x2 = x[b];
    x[a] = cos[i] * x1 - sin[i] * x2;
    x[b] = sin[i] * x1 + cos[i] * x2;
  }
}

struct Options {
  double scale = 0;          // 0: 1/sqrt(head size)
  double softcap = 0;        // > 0: softcap * tanh(scores / softcap) before the bias
  bool smooth_softmax = false;  // an extra logit 0 in the softmax's sum
  std::function<double(int64_t h)> sink;  // or a logit per head (head_sink)
  // Per-row additive bias: fills bias[0..T) for (b, h, i); -inf leaves a key
  // out. Rows whose every key is -inf give zeros.
  std::function<void(int64_t b, int64_t h, int64_t i, double* bias)> bias;
};

// The attention over heads; returns (B, S, N*Hv) values. `probs_out` (when
// not null) receives the (B, N, S, T) scores before (`probs_before_softmax`)
// or after the softmax.
inline std::vector<double> attend(const KernelContext& ctx, const Heads& q, const Heads& k, const Heads& v,
                                  const Options& o, std::vector<double>* probs_out = nullptr,
                                  bool probs_before_softmax = false) {
  const int64_t B = q.B, N = q.N, S = q.S, H = q.H, T = k.S, Hv = v.H, Nkv = k.N;
  if (Nkv <= 0 || N % Nkv != 0) ctx.fail("num_heads must be a multiple of the key/value heads");
  const int64_t group = N / Nkv;
  const double scale = o.scale != 0 ? o.scale : 1.0 / std::sqrt(static_cast<double>(H));
  real::check_work(ctx, {B, S, N, Hv}, "the attention output");
  std::vector<double> out(size_t(B * S * N * Hv), 0.0);
  if (probs_out) {
    real::check_work(ctx, {B, N, S, T}, "the attention scores");
    probs_out->assign(size_t(B * N * S * T), 0.0);
  }
  std::vector<double> row(static_cast<size_t>(T)), bias(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < N; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < S; ++i) {
        std::fill(bias.begin(), bias.end(), 0.0);
        if (o.bias) o.bias(b, h, i, bias.data());
        const bool extra = o.smooth_softmax || o.sink;
        const double extra_logit = o.sink ? o.sink(h) : 0.0;
        double mx = extra ? extra_logit : -std::numeric_limits<double>::infinity();
        bool any = false;
        for (int64_t j = 0; j < T; ++j) {
          double acc = 0;
          for (int64_t d = 0; d < H; ++d) acc += q.at(b, h, i, d) * k.at(b, hk, j, d);
          double s = acc * scale;
          if (o.softcap > 0) s = o.softcap * std::tanh(s / o.softcap);
          s += bias[size_t(j)];
          row[size_t(j)] = s;
          if (probs_out && probs_before_softmax) (*probs_out)[size_t(((b * N + h) * S + i) * T + j)] = s;
          if (!(std::isinf(s) && s < 0)) any = true;
          mx = std::max(mx, s);
        }
        if (!any) continue;  // nothing to attend: zeros
        double sum = extra ? std::exp(extra_logit - mx) : 0.0;
        for (int64_t j = 0; j < T; ++j) sum += row[size_t(j)] = std::exp(row[size_t(j)] - mx);
        for (int64_t j = 0; j < T; ++j) {
          const double p = row[size_t(j)] / sum;
          if (probs_out && !probs_before_softmax) (*probs_out)[size_t(((b * N + h) * S + i) * T + j)] = p;
          if (p == 0) continue;
          double* y = &out[size_t(((b * S + i) * N + h) * Hv)];
          for (int64_t d = 0; d < Hv; ++d) y[d] += p * v.at(b, hk, j, d);
        }
      }
    }
  return out;
}

// Every value of an integer tensor of any rank.
inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v(t.element_count());
  for (uint64_t i = 0; i < v.size(); ++i) v[i] = t.element_as_int64(i);
  return v;
}

// A mask input of Attention (mask_index) or MultiHeadAttention
// (key_padding_mask) as an additive (B, S, T) bias: core/contrib_mask.h's
// formats, shared with the cpu engine.
inline std::vector<double> mask_bias(const KernelContext& ctx, const Tensor& mask, int64_t B, int64_t S, int64_t T,
                                     double filter, const char* what) {
  if (!dtype_info(mask.dtype()).is_integer)
    ctx.fail(std::string(what) + " must be an integer tensor (int32), got " + std::string(dtype_name(mask.dtype())));
  real::check_work(ctx, {B, S, T}, "the attention mask");
  try {
    return contrib_mask::key_mask_bias(mask.shape(), ints(mask), B, S, T, filter, what);
  } catch (const std::invalid_argument& e) {
    ctx.fail(e.what());
  }
}

// An attention_bias input: (B or 1, N or 1, S, T) values, added to the
// scores; returns the index function into its values.
struct AttentionBias {
  std::vector<double> v;
  int64_t sb = 0, sn = 0, S = 0, T = 0;  // strides of batch and head (0 when broadcast)
  double at(int64_t b, int64_t n, int64_t i, int64_t j) const { return v[size_t(b * sb + n * sn + i * T + j)]; }
};

inline AttentionBias attention_bias(const KernelContext& ctx, const Tensor& t, int64_t B, int64_t N, int64_t S,
                                    int64_t T) {
  const Shape& s = t.shape();
  if (s.size() != 4 || (s[0] != B && s[0] != 1) || (s[1] != N && s[1] != 1) || s[2] != S || s[3] != T)
    ctx.fail("attention_bias of shape " + shape_to_string(s) + " must be (batch " + std::to_string(B) + " or 1, heads " +
             std::to_string(N) + " or 1, sequence_length " + std::to_string(S) + ", total_sequence_length " +
             std::to_string(T) + ")");
  AttentionBias a;
  a.v = real::to_doubles(ctx, t, "attention_bias");
  a.S = S;
  a.T = T;
  a.sn = s[1] == 1 ? 0 : S * T;
  a.sb = s[0] == 1 ? 0 : s[1] * S * T;
  return a;
}

// Attention's and MultiHeadAttention's scores bias: a mask in one of
// mask_bias' formats (mask_filter_value where masked), attention_bias added,
// and with unidirectional the keys after P + i left out. Options() captures
// this object: keep it alive while attend runs.
struct KeyBias {
  std::vector<double> mask;
  AttentionBias ab;
  bool has_mask = false, has_ab = false, causal = false;
  int64_t S = 0, T = 0, P = 0;
  double scale = 0;

  KeyBias(const KernelContext& ctx, const Tensor* mask_input, const char* mask_name, const Tensor* attn_bias, int64_t B,
          int64_t N, int64_t S_, int64_t T_, int64_t P_)
      : has_mask(mask_input), has_ab(attn_bias), S(S_), T(T_), P(P_) {
    if (mask_input) mask = mask_bias(ctx, *mask_input, B, S, T, ctx.attr_float("mask_filter_value", -10000.0f), mask_name);
    if (attn_bias) ab = attention_bias(ctx, *attn_bias, B, N, S, T);
    causal = ctx.attr_int("unidirectional", 0) != 0;
    scale = ctx.attr_float("scale", 0.0f);
  }
  Options options() const {
    Options o;
    o.scale = scale;
    o.bias = [this](int64_t b, int64_t h, int64_t i, double* row) {
      for (int64_t j = 0; j < T; ++j) {
        double s = has_mask ? mask[size_t((b * S + i) * T + j)] : 0.0;
        if (has_ab) s += ab.at(b, h, i, j);
        if (causal && j > P + i) s = -std::numeric_limits<double>::infinity();
        row[j] = s;
      }
    };
    return o;
  }
};

// Checks a positive head count attribute and that `hidden` splits into it.
inline int64_t head_size(const KernelContext& ctx, int64_t hidden, int64_t heads, const char* what) {
  if (heads <= 0) ctx.fail("num_heads must be positive");
  if (hidden % heads != 0)
    ctx.fail(std::string(what) + " hidden size " + std::to_string(hidden) + " is not divisible by " +
             std::to_string(heads) + " heads");
  return hidden / heads;
}

// Attention (and QAttention) after their inputs are widened: x (B, S, Din)
// and weights (Din, width) in double, bias (width); the node's inputs at the
// given indices are the mask_index, past and attention_bias (-1: none).
// Defined in contrib_attention.cpp.
struct Projection {
  int64_t B = 0, S = 0, Din = 0, width = 0;
  std::vector<double> x, w, bias;
  DataType out_type = DataType::Float;
  int mask_input = -1, past_input = -1, attention_bias_input = -1;
};
void attention_after_projection(KernelContext& ctx, const Projection& in);

}  // namespace onnxscope::ref::contrib_attention
