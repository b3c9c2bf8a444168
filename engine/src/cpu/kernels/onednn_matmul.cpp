// oneDNN matrix products: MatMul (numpy semantics: 1-D promotion, broadcast
// batch dims), Gemm (transA/transB, alpha/beta, C broadcast) and the fused
// FusedMatMul / FusedGemm (bias + activation post-ops). Float32 only.
//
// A MatMul whose B is 2-D runs as one [batch*M, K] x [K, N] product. When B
// is an initializer (weights), the matmul primitive runs on a copy of B packed
// once into oneDNN's blocked layout: 4-16% faster than sgemm on the model's
// plain copy (which repacks B on every call) on ViT, BERT, GPT-2 and ConvNeXt
// at batch 1. The plain copy is given back where the engine may
// (CpuOptions::release_repacked_weights), so the weights stay resident once.
// For a tiny B or a matrix-vector product on a transposed B (pack_weights),
// or when the weights cache has no room, sgemm runs on the plain copy, the
// bias as the output's starting value and the activation an in-place pass
// after it. Bias and activation are otherwise the primitive's post-ops.
#include <algorithm>
#include <stdexcept>

#include "cpu/kernels/onednn_parts.h"

namespace onnxscope::cpu::onednn {
namespace {

using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// Constant weights are packed unless B is tiny ([16,8]: not worth a primitive
// call) or the product is a matrix-vector one (under 4 rows of A) on a B held
// transposed ([N, K], as torch's Linear exports Gemm): each output is then a
// dot product over a contiguous row of B, which sgemm reads as it is
// ([1,1280]x[1000,1280]^T: 0.061 against 0.072 ms packed). A row-major [K, N]
// B gains from packing even at one row ([1,768]x[768,768]: 0.014 against 0.017).
bool pack_weights(int64_t rows, int64_t K, int64_t N, bool b_transposed) {
  return K * N >= 4096 && (rows >= 4 || !b_transposed);
}

// --- MatMul / FusedMatMul ----------------------------------------------------

struct MatMulProblem {
  Shape a, b, y;        // as oneDNN sees them (same rank, 2-D when B is a plain matrix)
  Shape out;            // the ONNX output shape
  bool bias = false;    // FusedMatMul's Bias [N]
  bool constant_b = false;
  std::string key;
};

bool matmul_problem(const KernelContext& ctx, MatMulProblem& p, bool fused) {
  if (!float_inputs(ctx) || ctx.input_count() < 2) return false;
  const Value* av = ctx.input_value(0);
  const Value* bv = ctx.input_value(1);
  if (!av || !bv) return false;
  Shape as = av->tensor().shape(), bs = bv->tensor().shape();
  if (as.empty() || bs.empty() || !nonempty(av->tensor()) || !nonempty(bv->tensor())) return false;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  if (bs[bs.size() - 2] != K) return false;
  const size_t rank = std::max(as.size(), bs.size());
  if (rank > 6) return false;
  as.insert(as.begin(), rank - as.size(), 1);
  bs.insert(bs.begin(), rank - bs.size(), 1);
  Shape batch(rank - 2);
  bool b_matrix = true;  // B's batch dims are all 1
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (as[i] != bs[i] && as[i] != 1 && bs[i] != 1) return false;
    batch[i] = std::max(as[i], bs[i]);
    if (bs[i] != 1) b_matrix = false;
  }
  p.out.clear();
  for (size_t i = 0; i + 2 < rank; ++i) p.out.push_back(batch[i]);
  if (!a_vec) p.out.push_back(M);
  if (!b_vec) p.out.push_back(N);
  if (b_matrix) {
    int64_t rows = M;
    for (int64_t d : batch) rows *= d;
    p.a = {rows, K};
    p.b = {K, N};
    p.y = {rows, N};
  } else {
    p.a = as;
    p.b = bs;
    p.y = batch;
    p.y.push_back(M);
    p.y.push_back(N);
  }
  if (fused && ctx.input_count() > 2 && ctx.input_value(2)) {
    const Tensor& bias = ctx.input_value(2)->tensor();
    if (bias.rank() != 1 || bias.shape()[0] != N) return false;
    p.bias = true;
  }
  p.constant_b = b_matrix && is_initializer(ctx, 1);
  p.key = std::string(fused ? "fmatmul" : "matmul") + dims_key(p.a) + dims_key(p.b) + (p.bias ? "b" : "") +
          (p.constant_b ? "c" : "") + (fused ? activation_key(ctx) : "") + "|t" + std::to_string(sync_threads());
  return true;
}

md bias_md(const Shape& y, const Shape& c) {  // c right-aligned to y, rank of y
  Shape d(y.size() - c.size(), 1);
  d.insert(d.end(), c.begin(), c.end());
  return plain_md(d);
}

// The node's activation as in-place oneDNN eltwise passes over `count`
// floats (the post-ops append_activation makes, one primitive each).
std::vector<std::shared_ptr<const Prim>> activation_prims(const KernelContext& ctx, int64_t count) {
  std::vector<std::shared_ptr<const Prim>> out;
  dnnl::post_ops po;
  if (!append_activation(ctx, po)) return {nullptr};
  for (int i = 0; i < po.len(); ++i) {
    float scale = 1, alpha = 0, beta = 0;
    dnnl::algorithm alg{};
    po.get_params_eltwise(i, scale, alg, alpha, beta);
    const std::string key = "act" + std::to_string(static_cast<int>(alg)) + float_key(alpha) + "," + float_key(beta) + "|" +
                            std::to_string(count) + "|t" + std::to_string(sync_threads());
    out.push_back(get_prim(key, [&] {
      const md m = plain_md({count});
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, alg, m, alpha, beta);
      return make_prim<dnnl::eltwise_forward>(dnnl::eltwise_forward::primitive_desc(d, base_attr(), engine()));
    }));
  }
  return out;
}

bool activation_ok(const KernelContext& ctx) {
  dnnl::post_ops po;
  return append_activation(ctx, po);
}

void apply_activation(const KernelContext& ctx, float* y, int64_t count) {
  if (count == 0) return;
  for (const auto& prim : activation_prims(ctx, count)) {
    if (!prim || !prim->ok) ctx.fail("oneDNN could not create the fused activation");
    dnnl::memory m = user_mem(plain_md({count}), y);
    execute(*prim, {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}});
  }
}

// Row-major C[M,N] = alpha * op(A) op(B) + beta * C on the plain buffers.
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B, float beta,
           float* C) {
  sync_threads();
  const dnnl::status st = dnnl::sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, ta ? M : K, B, tb ? K : N, beta, C, N);
  if (st != dnnl::status::success) throw std::runtime_error("oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) + ")");
}

std::shared_ptr<const Prim> matmul_prim(const KernelContext& ctx, const MatMulProblem& p, bool fused) {
  return get_prim(p.key, [&] {
    dnnl::post_ops po;
    if (fused && !append_activation(ctx, po)) return Prim{};
    dnnl::primitive_attr attr = base_attr();
    attr.set_post_ops(po);
    const md wei = p.constant_b ? md(p.b, dt::f32, tag::any) : plain_md(p.b);
    const md dst = plain_md(p.y);
    using F = dnnl::matmul;
    F::desc d = p.bias ? F::desc(plain_md(p.a), wei, bias_md(p.y, {p.y.back()}), dst) : F::desc(plain_md(p.a), wei, dst);
    F::primitive_desc pd(d, attr, engine());
    Prim r = make_prim<F>(pd, true);
    r.weights = pd.weights_desc();
    return r;
  });
}

template <bool Fused>
bool accepts_matmul(const KernelContext& ctx) {
  return safely([&] {
    MatMulProblem p;
    if (!matmul_problem(ctx, p, Fused)) return false;
    if (p.constant_b) return !Fused || activation_ok(ctx);
    return matmul_prim(ctx, p, Fused)->ok;
  });
}

template <bool Fused>
void MatMul(KernelContext& ctx) {
  guarded(ctx, [&] {
    MatMulProblem p;
    if (!matmul_problem(ctx, p, Fused)) ctx.fail("problem not supported by the oneDNN matmul");
    std::shared_ptr<const Prim> prim;
    std::shared_ptr<dnnl::memory> wei;
    if (!p.constant_b || pack_weights(p.y[0], p.b[0], p.b[1], false)) {
      prim = matmul_prim(ctx, p, Fused);
      if (p.constant_b && prim->ok) wei = cached_weights(ctx, 1, plain_md(p.b), prim->weights);
    }
    if (p.constant_b && !wei) {  // sgemm on the plain weights: see pack_weights, or no room for a packed copy
      Tensor& y = new_output(ctx, p.out);
      float* out = y.mutable_data<float>();
      const int64_t rows = p.y[0], N = p.y[1];
      if (p.bias) {  // the bias row is where the product starts
        const float* b = ctx.input(2).data<float>();
        for (int64_t i = 0; i < rows; ++i) std::copy(b, b + N, out + i * N);
      }
      sgemm(false, false, rows, N, p.a[1], 1.f, ctx.input(0).data<float>(), ctx.input(1).data<float>(), p.bias ? 1.f : 0.f, out);
      if (Fused) apply_activation(ctx, out, rows * N);
      return;
    }
    if (!prim->ok) ctx.fail("oneDNN could not create this matmul");
    Tensor& y = new_output(ctx, p.out);
    if (!wei) wei = weights_in(ctx, 1, plain_md(p.b), prim->weights);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, user_mem(plain_md(p.a), ctx.input(0).raw())},
                                               {DNNL_ARG_WEIGHTS, *wei},
                                               {DNNL_ARG_DST, user_mem(plain_md(p.y), y.mutable_raw())}};
    if (p.bias) args.emplace(DNNL_ARG_BIAS, user_mem(bias_md(p.y, {p.y.back()}), ctx.input(2).raw()));
    execute(*prim, std::move(args));
  });
}

// --- Gemm / FusedGemm ----------------------------------------------------------

struct GemmProblem {
  int64_t M = 0, K = 0, N = 0;
  bool ta = false, tb = false;
  float alpha = 1, beta = 1;
  Shape c;  // C as a 2-D broadcastable [1|M, 1|N]; empty: no C term
  bool c_as_bias = false;  // alpha == 1 and C a row [1, N]: beta*C is the matmul bias
  bool constant_b = false;
  std::string key;
};

bool gemm_problem(const KernelContext& ctx, GemmProblem& p, bool fused) {
  if (!float_inputs(ctx) || ctx.input_count() < 2) return false;
  const Value* av = ctx.input_value(0);
  const Value* bv = ctx.input_value(1);
  if (!av || !bv) return false;
  const Tensor& a = av->tensor();
  const Tensor& b = bv->tensor();
  if (a.rank() != 2 || b.rank() != 2 || !nonempty(a) || !nonempty(b)) return false;
  p.ta = ctx.attr_int("transA", 0) != 0;
  p.tb = ctx.attr_int("transB", 0) != 0;
  p.alpha = ctx.attr_float("alpha", 1.0f);
  p.beta = ctx.attr_float("beta", 1.0f);
  p.M = p.ta ? a.shape()[1] : a.shape()[0];
  p.K = p.ta ? a.shape()[0] : a.shape()[1];
  p.N = p.tb ? b.shape()[0] : b.shape()[1];
  if ((p.tb ? b.shape()[1] : b.shape()[0]) != p.K) return false;
  const Value* cv = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr;
  if (!cv && !fused && ctx.opset_version() < 11) return false;  // C required: let the reference say so
  if (cv && p.beta != 0.0f) {
    const Shape& cs = cv->tensor().shape();
    if (cs.size() > 2) return false;
    Shape c(2 - cs.size(), 1);
    c.insert(c.end(), cs.begin(), cs.end());
    if ((c[0] != 1 && c[0] != p.M) || (c[1] != 1 && c[1] != p.N)) return false;
    p.c = c;
    p.c_as_bias = p.alpha == 1.0f && c[0] == 1 && c[1] == p.N && p.N > 1;
  }
  p.constant_b = is_initializer(ctx, 1);
  p.key = std::string(fused ? "fgemm" : "gemm") + dims_key(a.shape()) + dims_key(b.shape()) + (p.ta ? "T" : "N") +
          (p.tb ? "T" : "N") + float_key(p.alpha) + "," + float_key(p.beta) + dims_key(p.c) +
          (p.constant_b ? "c" : "") + (fused ? activation_key(ctx) : "") + "|t" + std::to_string(sync_threads());
  return true;
}

md gemm_a_md(const GemmProblem& p) {
  return md({p.M, p.K}, dt::f32, p.ta ? dnnl::memory::dims{1, p.M} : dnnl::memory::dims{p.K, 1});
}
md gemm_b_md(const GemmProblem& p) {
  return md({p.K, p.N}, dt::f32, p.tb ? dnnl::memory::dims{1, p.K} : dnnl::memory::dims{p.N, 1});
}

// alpha == 1 and C a row: beta*C is the matmul's bias (the only bias shape
// with a fast kernel). Otherwise Y is first filled with beta*C (broadcast) and
// the product lands on it through a sum post-op after a linear(alpha) one, so
// the order of operations is alpha * (A B) + beta * C.
std::shared_ptr<const Prim> gemm_prim(const KernelContext& ctx, const GemmProblem& p, bool fused) {
  return get_prim(p.key, [&] {
    dnnl::post_ops po;
    const bool c_as_bias = p.c_as_bias;
    if (p.alpha != 1.0f) po.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, p.alpha, 0.f);
    if (!p.c.empty() && !c_as_bias) po.append_sum(1.f);
    if (fused && !append_activation(ctx, po)) return Prim{};
    dnnl::primitive_attr attr = base_attr();
    attr.set_post_ops(po);
    const md wei = p.constant_b ? md({p.K, p.N}, dt::f32, tag::any) : gemm_b_md(p);
    const md dst = plain_md({p.M, p.N});
    using F = dnnl::matmul;
    F::desc d = c_as_bias ? F::desc(gemm_a_md(p), wei, plain_md(p.c), dst) : F::desc(gemm_a_md(p), wei, dst);
    F::primitive_desc pd(d, attr, engine());
    Prim r = make_prim<F>(pd, true);
    r.weights = pd.weights_desc();
    return r;
  });
}

template <bool Fused>
bool accepts_gemm(const KernelContext& ctx) {
  return safely([&] {
    GemmProblem p;
    if (!gemm_problem(ctx, p, Fused)) return false;
    if (p.constant_b) return !Fused || activation_ok(ctx);
    return gemm_prim(ctx, p, Fused)->ok;
  });
}

template <bool Fused>
void Gemm(KernelContext& ctx) {
  guarded(ctx, [&] {
    GemmProblem p;
    if (!gemm_problem(ctx, p, Fused)) ctx.fail("problem not supported by the oneDNN gemm");
    std::shared_ptr<const Prim> prim;
    std::shared_ptr<dnnl::memory> wei;
    if (!p.constant_b || pack_weights(p.M, p.K, p.N, p.tb)) {
      prim = gemm_prim(ctx, p, Fused);
      if (p.constant_b && prim->ok) wei = cached_weights(ctx, 1, gemm_b_md(p), prim->weights);
    }
    if (p.constant_b && !wei) {  // sgemm on the plain weights: see pack_weights, or no room for a packed copy
      Tensor& y = new_output(ctx, Shape{p.M, p.N});
      float* out = y.mutable_data<float>();
      if (!p.c.empty()) {  // Y = beta * C broadcast, then the product is added to it
        const float* c = ctx.input(2).data<float>();
        const int64_t rs = p.c[0] == 1 ? 0 : p.c[1], cs = p.c[1] == 1 ? 0 : 1;
        for (int64_t i = 0; i < p.M; ++i)
          for (int64_t j = 0; j < p.N; ++j) out[i * p.N + j] = p.beta * c[i * rs + j * cs];
      }
      sgemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, ctx.input(0).data<float>(), ctx.input(1).data<float>(),
            p.c.empty() ? 0.f : 1.f, out);
      if (Fused) apply_activation(ctx, out, p.M * p.N);
      return;
    }
    if (!prim->ok) ctx.fail("oneDNN could not create this gemm");
    Tensor& y = new_output(ctx, Shape{p.M, p.N});
    if (!wei) wei = weights_in(ctx, 1, gemm_b_md(p), prim->weights);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, user_mem(gemm_a_md(p), ctx.input(0).raw())},
                                               {DNNL_ARG_WEIGHTS, *wei},
                                               {DNNL_ARG_DST, user_mem(plain_md({p.M, p.N}), y.mutable_raw())}};
    std::vector<float> scaled;  // beta * C when beta != 1
    if (!p.c.empty()) {
      const float* c = ctx.input(2).data<float>();
      if (p.c_as_bias) {
        if (p.beta != 1.0f) {
          scaled.assign(c, c + p.N);
          for (float& v : scaled) v *= p.beta;
          c = scaled.data();
        }
        args.emplace(DNNL_ARG_BIAS, user_mem(plain_md(p.c), c));
      } else {
        // Y = beta * C broadcast; the sum post-op adds the product to it.
        float* out = y.mutable_data<float>();
        const int64_t rs = p.c[0] == 1 ? 0 : p.c[1], cs = p.c[1] == 1 ? 0 : 1;
        for (int64_t i = 0; i < p.M; ++i)
          for (int64_t j = 0; j < p.N; ++j) out[i * p.N + j] = p.beta * c[i * rs + j * cs];
      }
    }
    execute(*prim, std::move(args));
  });
}

}  // namespace

void register_onednn_matmul(KernelRegistry& r) {
  r.add(KernelDef{"", "MatMul", 1, INT_MAX, "onednn", MatMul<false>, accepts_matmul<false>});
  r.add(KernelDef{"onnxscope.cpu", "FusedMatMul", 1, INT_MAX, "onednn", MatMul<true>, accepts_matmul<true>});
  // Before opset 7 Gemm had a `broadcast` attribute; those stay with the reference.
  r.add(KernelDef{"", "Gemm", 7, INT_MAX, "onednn", Gemm<false>, accepts_gemm<false>});
  r.add(KernelDef{"onnxscope.cpu", "FusedGemm", 1, INT_MAX, "onednn", Gemm<true>, accepts_gemm<true>});
}

}  // namespace onnxscope::cpu::onednn
