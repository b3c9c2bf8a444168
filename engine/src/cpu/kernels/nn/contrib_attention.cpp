// com.microsoft Attention and MultiHeadAttention (ONNX Runtime's
// transformers optimizer writes them for BERT- and GPT-2-style models,
// encoder-decoders and diffusion models) on float32: Attention's input
// projection as one Eigen product, the heads taken from each operator's
// forms (separate, packed KV, packed QKV, head-major keys and values), the
// past prepended, then the attention over heads of attention_heads.h with
// the mask (core/contrib_mask.h's formats, shared with the reference),
// attention_bias and the causal frontier as the additive bias. The qk
// output, shared past/present buffers and rotary go to the reference.
#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/contrib_mask.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/nn/attention_heads.h"
#include "cpu/kernels/output.h"

namespace onnxscope::cpu {
namespace {

const Tensor* input_at(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_count() > i ? ctx.input_value(i) : nullptr;
  return v && v->is_tensor() ? &v->tensor() : nullptr;
}

bool float_or_absent(const KernelContext& ctx, std::initializer_list<size_t> at) {
  for (size_t i : at)
    if (const Tensor* t = input_at(ctx, i); t && t->dtype() != DataType::Float) return false;
  return true;
}

// The scores' bias: a mask (B, S, T), attention_bias (B|1, N|1, S, T), keys after P + i out when causal.
struct Bias {
  std::vector<double> mask;
  const float* ab = nullptr;
  int64_t ab_sb = 0, ab_sn = 0, S = 0, T = 0, P = 0;
  bool causal = false;

  // False when this kernel does not take the inputs (the reference names the problem).
  bool init(const KernelContext& ctx, const Tensor* m, const Tensor* attn_bias, int64_t B, int64_t N, int64_t S_,
            int64_t T_, int64_t P_, const char* what) {
    S = S_, T = T_, P = P_;
    causal = ctx.attr_int("unidirectional", 0) != 0;
    if (m) {
      if (!dtype_info(m->dtype()).is_integer) return false;
      std::vector<int64_t> v(m->element_count());
      for (uint64_t i = 0; i < v.size(); ++i) v[i] = m->element_as_int64(i);
      try {
        mask = contrib_mask::key_mask_bias(m->shape(), v, B, S, T, ctx.attr_float("mask_filter_value", -10000.0f), what);
      } catch (const std::invalid_argument&) {
        return false;
      }
    }
    if (attn_bias) {
      const Shape& s = attn_bias->shape();
      if (s.size() != 4 || (s[0] != B && s[0] != 1) || (s[1] != N && s[1] != 1) || s[2] != S || s[3] != T) return false;
      ab = attn_bias->data<float>();
      ab_sn = s[1] == 1 ? 0 : S * T;
      ab_sb = s[0] == 1 ? 0 : s[1] * S * T;
    }
    return true;
  }
  heads::RowBias row() const {
    return [this](int64_t b, int64_t h, int64_t i, int64_t n, float* r) {
      for (int64_t j = 0; j < n; ++j) {
        float s = mask.empty() ? 0.0f : static_cast<float>(mask[static_cast<size_t>((b * S + i) * T + j)]);
        if (ab) s += ab[b * ab_sb + h * ab_sn + i * T + j];
        if (causal && j > P + i) s = -std::numeric_limits<float>::infinity();
        r[j] = s;
      }
    };
  }
};

// keys/values = concat(past, new) per (b, n).
heads::Heads with_past(const float* past, const heads::Heads& now, int64_t P) {
  heads::Heads all(now.B, now.N, P + now.S, now.H);
  for (int64_t b = 0; b < now.B; ++b)
    for (int64_t n = 0; n < now.N; ++n) {
      if (P) std::copy_n(past + (b * now.N + n) * P * now.H, P * now.H, all.at(b, n, 0));
      std::copy_n(now.at(b, n, 0), now.S * now.H, all.at(b, n, P));
    }
  return all;
}

void run_heads(KernelContext& ctx, const heads::Heads& q, const heads::Heads& k, const heads::Heads& v, const Bias& bias) {
  heads::Softmax sm;
  const float scale = ctx.attr_float("scale", 0.0f);
  sm.scale = scale != 0 ? scale : 1.0f / std::sqrt(static_cast<float>(q.H));
  const heads::Cache kv{k.v.data(), v.v.data(), k.N, k.S, v.H, [&](int64_t) { return k.S; }};
  float* y = uninitialized_output(ctx, 0, DataType::Float, {q.B, q.S, q.N * v.H}).mutable_data<float>();
  heads::attend(q, kv, sm, bias.row(), y);
}

// --- MultiHeadAttention ----------------------------------------------------------

struct MhaProblem {
  heads::Heads q, k, v;
  Bias bias;
};

std::optional<MhaProblem> mha_of(const KernelContext& ctx, bool build) {
  const Tensor* query = input_at(ctx, 0);
  const Tensor* key = input_at(ctx, 1);
  const Tensor* value = input_at(ctx, 2);
  const Tensor* bias = input_at(ctx, 3);
  const Tensor* pk = input_at(ctx, 6);
  const Tensor* pv = input_at(ctx, 7);
  const int64_t N = ctx.attr_int("num_heads", 0);
  if (!query || query->dtype() != DataType::Float || !float_or_absent(ctx, {1, 2, 3, 5, 6, 7}) || input_at(ctx, 8) ||
      input_at(ctx, 9) || N <= 0 || (ctx.output_count() > 3 && ctx.output_wanted(3)) || (!pk) != (!pv))
    return std::nullopt;
  // The form and the sizes first (accepts stops after them), then the heads.
  enum Form { kPackedQkv, kPackedKv, kSeparate, kKvHeads } form;
  const Shape& qs = query->shape();
  int64_t B = 0, S = 0, L = 0, H = 0, Hv = 0;
  if (qs.size() == 5) {  // (B, S, N, 3, H)
    if (key || value || qs[2] != N || qs[3] != 3 || bias) return std::nullopt;
    form = kPackedQkv, B = qs[0], S = L = qs[1], H = Hv = qs[4];
  } else {
    if (qs.size() != 3 || qs[2] % N != 0 || !key) return std::nullopt;
    B = qs[0], S = qs[1], H = qs[2] / N;
    const Shape& ks = key->shape();
    if (ks.size() == 5) {  // (B, L, N, 2, H)
      if (value || bias || ks[0] != B || ks[2] != N || ks[3] != 2 || ks[4] != H) return std::nullopt;
      form = kPackedKv, L = ks[1], Hv = H;
    } else {
      if (!value || value->shape().size() != ks.size()) return std::nullopt;
      const Shape& vs = value->shape();
      if (ks.size() == 3) {
        if (ks[0] != B || ks[2] != qs[2] || vs[0] != B || vs[1] != ks[1] || vs[2] % N != 0) return std::nullopt;
        form = kSeparate, L = ks[1], Hv = vs[2] / N;
      } else if (ks.size() == 4) {
        if (ks[0] != B || ks[1] != N || ks[3] != H || vs[0] != B || vs[1] != N || vs[2] != ks[2]) return std::nullopt;
        form = kKvHeads, L = ks[2], Hv = vs[3];
      } else {
        return std::nullopt;
      }
    }
    if (bias && (bias->rank() != 1 || bias->shape()[0] != 2 * N * H + N * Hv)) return std::nullopt;
  }
  int64_t P = 0;
  if (pk) {
    const Shape& a = pk->shape();
    const Shape& c = pv->shape();
    if (a.size() != 4 || a[0] != B || a[1] != N || a[3] != H || c.size() != 4 || c[0] != B || c[1] != N || c[2] != a[2] ||
        c[3] != Hv)
      return std::nullopt;
    P = a[2];
  }
  MhaProblem p;
  if (!p.bias.init(ctx, input_at(ctx, 4), input_at(ctx, 5), B, N, S, P + L, P, "key_padding_mask")) return std::nullopt;
  if (!build) return p;

  const float* qd = query->data<float>();
  const float* bd = bias ? bias->data<float>() : nullptr;
  p.q = heads::Heads(B, N, S, H), p.k = heads::Heads(B, N, L, H), p.v = heads::Heads(B, N, L, Hv);
  if (form == kPackedQkv) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t n = 0; n < N; ++n) {
          const float* src = qd + (((b * S + s) * N + n) * 3) * H;
          std::copy_n(src, H, p.q.at(b, n, s)), std::copy_n(src + H, H, p.k.at(b, n, s));
          std::copy_n(src + 2 * H, H, p.v.at(b, n, s));
        }
  } else {
    heads::split(p.q, qd, N * H, 0, bd);
    const float* kd = key->data<float>();
    if (form == kPackedKv) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < L; ++s)
          for (int64_t n = 0; n < N; ++n) {
            const float* src = kd + (((b * L + s) * N + n) * 2) * H;
            std::copy_n(src, H, p.k.at(b, n, s)), std::copy_n(src + H, H, p.v.at(b, n, s));
          }
    } else if (form == kKvHeads) {  // already in heads; the bias applies to Q only
      std::copy_n(kd, p.k.v.size(), p.k.v.data());
      std::copy_n(value->data<float>(), p.v.v.size(), p.v.v.data());
    } else {  // the bias's K and V parts start at columns D and 2D
      heads::split(p.k, kd, N * H, 0, bd ? bd + N * H : nullptr);
      heads::split(p.v, value->data<float>(), N * Hv, 0, bd ? bd + 2 * N * H : nullptr);
    }
  }
  if (pk) p.k = with_past(pk->data<float>(), p.k, P), p.v = with_past(pv->data<float>(), p.v, P);
  return p;
}

bool accepts_mha(const KernelContext& ctx) { return mha_of(ctx, false).has_value(); }

void MultiHeadAttentionKernel(KernelContext& ctx) {
  std::optional<MhaProblem> p = mha_of(ctx, true);
  if (!p) ctx.fail("problem not supported by the CPU MultiHeadAttention");
  run_heads(ctx, p->q, p->k, p->v, p->bias);
  for (size_t o = 1; o <= 2; ++o)
    if (ctx.output_count() > o && ctx.output_wanted(o)) {
      const heads::Heads& h = o == 1 ? p->k : p->v;
      Tensor& t = uninitialized_output(ctx, o, DataType::Float, {h.B, h.N, h.S, h.H});
      std::copy(h.v.begin(), h.v.end(), t.mutable_data<float>());
    }
}

// --- Attention -----------------------------------------------------------------

bool attention_shapes(const KernelContext& ctx, int64_t& N, std::vector<int64_t>& sizes) {
  const Tensor* x = input_at(ctx, 0);
  const Tensor* w = input_at(ctx, 1);
  const Tensor* bias = input_at(ctx, 2);
  N = ctx.attr_int("num_heads", 0);
  if (!x || !w || x->dtype() != DataType::Float || !float_or_absent(ctx, {1, 2, 4, 5}) || input_at(ctx, 6) || N <= 0 ||
      ctx.attr_int("do_rotary", 0) != 0 || ctx.attr_int("past_present_share_buffer", 0) != 0 || x->rank() != 3 ||
      w->rank() != 2 || w->shape()[0] != x->shape()[2])
    return false;
  const int64_t width = w->shape()[1];
  sizes = ctx.attr_ints("qkv_hidden_sizes", {});
  if (sizes.empty()) {
    if (width % 3) return false;
    sizes.assign(3, width / 3);
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] <= 0 || sizes[2] <= 0 || sizes[0] + sizes[1] + sizes[2] != width ||
      sizes[0] % N || sizes[2] % N)
    return false;
  if (bias && (bias->rank() != 1 || bias->shape()[0] != width)) return false;
  if (const Tensor* past = input_at(ctx, 4)) {
    const Shape& s = past->shape();
    const int64_t B = x->shape()[0], H = sizes[0] / N;
    if (sizes[0] != sizes[2] || s.size() != 5 || s[0] != 2 || s[1] != B || s[2] != N || s[4] != H) return false;
  }
  return true;
}

bool accepts_attention(const KernelContext& ctx) {
  int64_t N = 0;
  std::vector<int64_t> sizes;
  if (!attention_shapes(ctx, N, sizes)) return false;
  const Shape& xs = ctx.input(0).shape();
  const Tensor* past = input_at(ctx, 4);
  const int64_t P = past ? past->shape()[3] : 0;
  Bias probe;
  return probe.init(ctx, input_at(ctx, 3), input_at(ctx, 5), xs[0], N, xs[1], P + xs[1], P, "mask_index");
}

void AttentionKernel(KernelContext& ctx) {
  int64_t N = 0;
  std::vector<int64_t> sizes;
  if (!attention_shapes(ctx, N, sizes)) ctx.fail("problem not supported by the CPU Attention");
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const int64_t B = x.shape()[0], S = x.shape()[1], Din = x.shape()[2], width = w.shape()[1];
  const int64_t H = sizes[0] / N, Hv = sizes[2] / N;
  // The projection: (B*S, Din) x (Din, width) + bias.
  heads::RowMat qkv = Eigen::Map<const heads::RowMat>(x.data<float>(), B * S, Din) *
                      Eigen::Map<const heads::RowMat>(w.data<float>(), Din, width);
  if (const Tensor* bias = input_at(ctx, 2))
    qkv.rowwise() += Eigen::Map<const Eigen::RowVectorXf>(bias->data<float>(), width);
  heads::Heads q(B, N, S, H), k(B, N, S, H), v(B, N, S, Hv);
  heads::split(q, qkv.data(), width, 0), heads::split(k, qkv.data(), width, sizes[0]);
  heads::split(v, qkv.data(), width, 2 * sizes[0]);
  int64_t P = 0;
  if (const Tensor* past = input_at(ctx, 4)) {
    P = past->shape()[3];
    const float* pd = past->data<float>();
    k = with_past(pd, k, P), v = with_past(pd + B * N * P * H, v, P);
  }
  Bias bias;
  if (!bias.init(ctx, input_at(ctx, 3), input_at(ctx, 5), B, N, S, P + S, P, "mask_index"))
    ctx.fail("problem not supported by the CPU Attention");
  run_heads(ctx, q, k, v, bias);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) {
    float* present = uninitialized_output(ctx, 1, DataType::Float, {2, B, N, P + S, H}).mutable_data<float>();
    std::copy(k.v.begin(), k.v.end(), present);
    std::copy(v.v.begin(), v.v.end(), present + k.v.size());
  }
}

}  // namespace

void register_contrib_attention_kernels(KernelRegistry& r) {
  r.add(KernelDef{"com.microsoft", "MultiHeadAttention", 1, INT_MAX, "cpu-eigen", MultiHeadAttentionKernel, accepts_mha});
  r.add(KernelDef{"com.microsoft", "Attention", 1, INT_MAX, "cpu-eigen", AttentionKernel, accepts_attention});
}

}  // namespace onnxscope::cpu
