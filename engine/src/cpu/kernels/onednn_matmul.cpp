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
  int threads = 1;      // threads_for its multiply-adds
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
  int64_t macs = M * K * N;
  for (int64_t d : batch) macs *= d;
  p.threads = use_threads(threads_for(macs));
  p.key = std::string(fused ? "fmatmul" : "matmul") + dims_key(p.a) + dims_key(p.b) + (p.bias ? "b" : "") +
          (p.constant_b ? "c" : "") + (fused ? activation_key(ctx) : "") + "|t" + std::to_string(p.threads);
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
                            std::to_string(count) + "|t" + std::to_string(use_threads(threads_for(count)));
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

// The activation over `count` floats at y, its passes made once per node
// (kept in `prims`).
void apply_activation(const KernelContext& ctx, std::vector<std::shared_ptr<const Prim>>& prims, float* y,
                      int64_t count) {
  if (count == 0) return;
  if (prims.empty()) prims = activation_prims(ctx, count);
  for (const auto& prim : prims) {
    if (!prim || !prim->ok) ctx.fail("oneDNN could not create the fused activation");
    dnnl::memory m = user_mem(plain_md({count}), y);
    use_threads(threads_for(count));
    execute(*prim, {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}});
  }
}

// Row-major C[M,N] = alpha * op(A) op(B) + beta * C on the plain buffers.
void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, const float* B, float beta,
           float* C) {
  use_threads(threads_for(M * N * K));
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

// What a product worked out for its node (PlannedInputs): the problem, the
// primitive, packed constant weights, the sgemm path's activation passes,
// memory objects re-pointed at each call's buffers.
template <class Problem>
struct ProductState {
  bool ok = false;
  PlannedInputs in;
  const Buffer* b_buf = nullptr;  // constant B's storage (not its bytes: those may be released)
  Problem p;
  bool runnable = false;
  std::shared_ptr<const Prim> prim;   // null: sgemm on the plain weights (pack_weights)
  std::shared_ptr<dnnl::memory> wei;  // constant B packed
  std::vector<std::shared_ptr<const Prim>> act;
  md a_md, b_md, y_md, bias_md;  // bias: FusedMatMul's Bias, or Gemm's C as the bias
  dnnl::memory am, bm, ym, biasm;
  std::unordered_map<int, dnnl::memory> args;
};

// The plan for this call: the node's kept one while it fits, else worked out
// again (into the node's state, or `local` where the engine keeps none).
// nullptr when oneDNN does not take the problem. A constant B runs packed
// (`pack`) or through sgemm on its plain bytes; any other B needs the primitive.
template <class Problem, class MakeProblem, class Pack, class MakePrim>
ProductState<Problem>* product_plan(const KernelContext& ctx, std::optional<ProductState<Problem>>& local, bool fused,
                                    MakeProblem&& make_problem, Pack&& pack, MakePrim&& make_prim) {
  ProductState<Problem>* kept = node_state<ProductState<Problem>>(ctx);
  if (kept && kept->ok && kept->in.same(ctx) &&
      (!kept->p.constant_b || ctx.input(1).buffer().get() == kept->b_buf))
    return kept->runnable ? kept : nullptr;
  ProductState<Problem>& s = kept ? *kept : local.emplace();
  if (kept) s = ProductState<Problem>{};
  if (!make_problem(s.p)) return nullptr;
  if (!s.p.constant_b || pack(s.p)) s.prim = make_prim(s.p);
  s.runnable = s.p.constant_b ? !fused || activation_ok(ctx) : s.prim->ok;
  s.in.record(ctx);
  if (s.p.constant_b) s.b_buf = ctx.input(1).buffer().get();
  s.ok = true;
  return s.runnable ? &s : nullptr;
}

// Constant B packed for the primitive, kept in the plan; nullptr where B is
// not constant, the plan has no primitive, or the cache has no room.
template <class Problem>
std::shared_ptr<dnnl::memory> packed_weights(const KernelContext& ctx, ProductState<Problem>& s,
                                             const std::optional<ProductState<Problem>>& local, const md& user) {
  if (!s.wei && s.p.constant_b && s.prim && s.prim->ok) {
    std::shared_ptr<dnnl::memory> wei = cached_weights(ctx, 1, user, s.prim->weights);
    if (local) return wei;  // a plan for this call only
    s.wei = wei;
  }
  return s.wei;
}

// B for the primitive: packed, else B itself where the primitive reads its
// layout (a product of two activations), else a reorder of it.
template <class Problem>
dnnl::memory weights_arg(const KernelContext& ctx, ProductState<Problem>& s, const std::shared_ptr<dnnl::memory>& wei) {
  if (wei) return *wei;
  if (s.prim->weights == s.b_md) return point(s.bm, s.b_md, ctx.input(1).raw());
  return *weights_in(ctx, 1, s.b_md, s.prim->weights);
}

using MatMulState = ProductState<MatMulProblem>;

MatMulState* matmul_plan(const KernelContext& ctx, std::optional<MatMulState>& local, bool fused) {
  return product_plan(
      ctx, local, fused, [&](MatMulProblem& p) { return matmul_problem(ctx, p, fused); },
      [](const MatMulProblem& p) { return pack_weights(p.y[0], p.b[0], p.b[1], false); },
      [&](const MatMulProblem& p) { return matmul_prim(ctx, p, fused); });
}

template <bool Fused>
bool accepts_matmul(const KernelContext& ctx) {
  return safely([&] {
    std::optional<MatMulState> local;
    return matmul_plan(ctx, local, Fused) != nullptr;
  });
}

template <bool Fused>
void MatMul(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::optional<MatMulState> local;
    MatMulState* s = matmul_plan(ctx, local, Fused);
    if (!s) ctx.fail("problem not supported by the oneDNN matmul");
    const MatMulProblem& p = s->p;
    const Prim* prim = s->prim.get();
    const std::shared_ptr<dnnl::memory> wei = packed_weights(ctx, *s, local, plain_md(p.b));
    if (p.constant_b && !wei) {  // sgemm on the plain weights: see pack_weights, or no room for a packed copy
      Tensor& y = new_output(ctx, p.out);
      float* out = y.mutable_data<float>();
      const int64_t rows = p.y[0], N = p.y[1];
      if (p.bias) {  // the bias row is where the product starts
        const float* b = ctx.input(2).data<float>();
        for (int64_t i = 0; i < rows; ++i) std::copy(b, b + N, out + i * N);
      }
      sgemm(false, false, rows, N, p.a[1], 1.f, ctx.input(0).data<float>(), ctx.input(1).data<float>(), p.bias ? 1.f : 0.f, out);
      if (Fused) apply_activation(ctx, s->act, out, rows * N);
      return;
    }
    if (!prim || !prim->ok) ctx.fail("oneDNN could not create this matmul");
    Tensor& y = new_output(ctx, p.out);
    if (!s->am) {
      s->a_md = plain_md(p.a);
      s->b_md = plain_md(p.b);
      s->y_md = plain_md(p.y);
      if (p.bias) s->bias_md = bias_md(p.y, {p.y.back()});
    }
    auto& args = s->args;
    args[DNNL_ARG_SRC] = point(s->am, s->a_md, ctx.input(0).raw());
    args[DNNL_ARG_WEIGHTS] = weights_arg(ctx, *s, wei);
    args[DNNL_ARG_DST] = point(s->ym, s->y_md, y.mutable_raw());
    if (p.bias) args[DNNL_ARG_BIAS] = point(s->biasm, s->bias_md, ctx.input(2).raw());
    use_threads(p.threads);
    execute_kept(*prim, args);
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
  int threads = 1;  // threads_for its multiply-adds
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
  p.threads = use_threads(threads_for(p.M * p.K * p.N));
  p.key = std::string(fused ? "fgemm" : "gemm") + dims_key(a.shape()) + dims_key(b.shape()) + (p.ta ? "T" : "N") +
          (p.tb ? "T" : "N") + float_key(p.alpha) + "," + float_key(p.beta) + dims_key(p.c) +
          (p.constant_b ? "c" : "") + (fused ? activation_key(ctx) : "") + "|t" + std::to_string(p.threads);
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
// the product, scaled by alpha (the output scale), lands on it through a sum
// post-op, so the order of operations is alpha * (A B) + beta * C.
std::shared_ptr<const Prim> gemm_prim(const KernelContext& ctx, const GemmProblem& p, bool fused) {
  return get_prim(p.key, [&] {
    dnnl::post_ops po;
    const bool c_as_bias = p.c_as_bias;
    if (!p.c.empty() && !c_as_bias) po.append_sum(1.f);
    if (fused && !append_activation(ctx, po)) return Prim{};
    dnnl::primitive_attr attr = base_attr();
    // alpha as the output scale (applied before the post-ops), not a
    // linear post-op: oneDNN 2.6's matmul gave wrong values (off by up to
    // 0.5) with a second linear post-op after it, HardSigmoid's.
    if (p.alpha != 1.0f) attr.set_output_scales(0, {p.alpha});
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

using GemmState = ProductState<GemmProblem>;

GemmState* gemm_plan(const KernelContext& ctx, std::optional<GemmState>& local, bool fused) {
  return product_plan(
      ctx, local, fused, [&](GemmProblem& p) { return gemm_problem(ctx, p, fused); },
      [](const GemmProblem& p) { return pack_weights(p.M, p.K, p.N, p.tb); },
      [&](const GemmProblem& p) { return gemm_prim(ctx, p, fused); });
}

template <bool Fused>
bool accepts_gemm(const KernelContext& ctx) {
  return safely([&] {
    std::optional<GemmState> local;
    return gemm_plan(ctx, local, Fused) != nullptr;
  });
}

// Y = beta * C broadcast, for the product to be added to it.
void fill_beta_c(const GemmProblem& p, const float* c, float* out) {
  const int64_t rs = p.c[0] == 1 ? 0 : p.c[1], cs = p.c[1] == 1 ? 0 : 1;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) out[i * p.N + j] = p.beta * c[i * rs + j * cs];
}

template <bool Fused>
void Gemm(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::optional<GemmState> local;
    GemmState* s = gemm_plan(ctx, local, Fused);
    if (!s) ctx.fail("problem not supported by the oneDNN gemm");
    const GemmProblem& p = s->p;
    const Prim* prim = s->prim.get();
    const std::shared_ptr<dnnl::memory> wei = packed_weights(ctx, *s, local, gemm_b_md(p));
    if (p.constant_b && !wei) {  // sgemm on the plain weights: see pack_weights, or no room for a packed copy
      Tensor& y = new_output(ctx, Shape{p.M, p.N});
      float* out = y.mutable_data<float>();
      if (!p.c.empty()) fill_beta_c(p, ctx.input(2).data<float>(), out);
      sgemm(p.ta, p.tb, p.M, p.N, p.K, p.alpha, ctx.input(0).data<float>(), ctx.input(1).data<float>(),
            p.c.empty() ? 0.f : 1.f, out);
      if (Fused) apply_activation(ctx, s->act, out, p.M * p.N);
      return;
    }
    if (!prim || !prim->ok) ctx.fail("oneDNN could not create this gemm");
    Tensor& y = new_output(ctx, Shape{p.M, p.N});
    if (!s->am) {
      s->a_md = gemm_a_md(p);
      s->b_md = gemm_b_md(p);
      s->y_md = plain_md({p.M, p.N});
      if (!p.c.empty()) s->bias_md = plain_md(p.c);
    }
    auto& args = s->args;
    args[DNNL_ARG_SRC] = point(s->am, s->a_md, ctx.input(0).raw());
    args[DNNL_ARG_WEIGHTS] = weights_arg(ctx, *s, wei);
    args[DNNL_ARG_DST] = point(s->ym, s->y_md, y.mutable_raw());
    std::vector<float> scaled;  // beta * C when beta != 1
    if (!p.c.empty()) {
      const float* c = ctx.input(2).data<float>();
      if (p.c_as_bias) {
        if (p.beta != 1.0f) {
          scaled.assign(c, c + p.N);
          for (float& v : scaled) v *= p.beta;
          c = scaled.data();
        }
        args[DNNL_ARG_BIAS] = point(s->biasm, s->bias_md, c);
      } else {
        fill_beta_c(p, c, y.mutable_data<float>());  // the sum post-op adds the product to it
      }
    }
    use_threads(p.threads);
    execute_kept(*prim, args);
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
