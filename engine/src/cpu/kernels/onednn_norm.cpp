// oneDNN softmax and normalization: Softmax / LogSoftmax (the single-axis
// form: opset 13+, or earlier when the axis is the last one so that the 2-D
// coercion changes nothing), BatchNormalization (inference: given mean and
// var) and LRN (odd sizes: oneDNN's window is symmetric). Float32 only.
#include "cpu/fused_ops.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/optimizer.h"

namespace onnxscope::cpu::onednn {
namespace {

using md = dnnl::memory::desc;

// What a kernel here worked out for its node (PlannedInputs): the problem,
// its primitive and memory objects re-pointed at each call's buffers.
template <class Problem>
struct NormState {
  bool ok = false;
  PlannedInputs in;
  Problem p;
  std::shared_ptr<const Prim> prim;
  md x_md, c_md;
  dnnl::memory xm, ym, scale_m, shift_m;
  std::unordered_map<int, dnnl::memory> args;
};

// The node's kept plan while it fits, else `make_problem` and `make_prim`
// again (into the node's state, or `local`); nullptr when oneDNN does not
// take the problem.
template <class Problem, class MakeProblem, class MakePrim>
NormState<Problem>* norm_plan(const KernelContext& ctx, std::optional<NormState<Problem>>& local, MakeProblem&& make_problem,
                              MakePrim&& make_prim) {
  NormState<Problem>* kept = node_state<NormState<Problem>>(ctx);
  if (kept && kept->ok && kept->in.same(ctx)) return kept->prim->ok ? kept : nullptr;
  NormState<Problem>& s = kept ? *kept : local.emplace();
  if (kept) s = NormState<Problem>{};
  if (!make_problem(s.p)) return nullptr;
  s.prim = make_prim(s.p);
  s.in.record(ctx);
  s.ok = true;
  return s.prim->ok ? &s : nullptr;
}

// --- Softmax / LogSoftmax ------------------------------------------------------

struct SoftmaxProblem {
  Shape x;
  int axis = 0;
  int threads = 1;  // threads_for its elements
  std::string key;
};

bool softmax_problem(const KernelContext& ctx, SoftmaxProblem& p, bool log) {
  if (ctx.input_count() != 1 || !is_float(ctx.input_value(0))) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  if (x.rank() < 1 || x.rank() > 6 || !nonempty(x)) return false;
  const int64_t rank = x.rank();
  const bool coerce_2d = ctx.opset_version() < 13;
  int64_t axis = ctx.attr_int("axis", coerce_2d ? 1 : -1);
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  if (coerce_2d && axis != rank - 1) return false;
  p.x = x.shape();
  p.axis = static_cast<int>(axis);
  p.threads = use_threads(threads_for(static_cast<int64_t>(x.element_count())));
  p.key = std::string(log ? "logsoftmax" : "softmax") + dims_key(p.x) + std::to_string(axis) + "|t" +
          std::to_string(p.threads);
  return true;
}

std::shared_ptr<const Prim> softmax_prim(const SoftmaxProblem& p, bool log) {
  return get_prim(p.key, [&] {
    using F = dnnl::softmax_v2_forward;
    F::desc d(dnnl::prop_kind::forward_inference, log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate,
              plain_md(p.x), plain_md(p.x), p.axis);
    F::primitive_desc pd(d, base_attr(), engine());
    return make_prim<F>(pd);
  });
}

template <bool Log>
NormState<SoftmaxProblem>* softmax_plan(const KernelContext& ctx, std::optional<NormState<SoftmaxProblem>>& local) {
  return norm_plan(
      ctx, local, [&](SoftmaxProblem& p) { return softmax_problem(ctx, p, Log); },
      [](const SoftmaxProblem& p) { return softmax_prim(p, Log); });
}

template <bool Log>
bool accepts_softmax(const KernelContext& ctx) {
  return safely([&] {
    std::optional<NormState<SoftmaxProblem>> local;
    return softmax_plan<Log>(ctx, local) != nullptr;
  });
}

template <bool Log>
void Softmax(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::optional<NormState<SoftmaxProblem>> local;
    auto* s = softmax_plan<Log>(ctx, local);
    if (!s) ctx.fail("problem not supported by the oneDNN softmax");
    Tensor& y = new_output(ctx, s->p.x);
    if (!s->xm) s->x_md = plain_md(s->p.x);
    s->args[DNNL_ARG_SRC] = point(s->xm, s->x_md, ctx.input(0).raw());
    s->args[DNNL_ARG_DST] = point(s->ym, s->x_md, y.mutable_raw());
    use_threads(s->p.threads);
    execute_kept(*s->prim, s->args);
  });
}

// --- BatchNormalization (inference) ---------------------------------------------

struct BnProblem {
  Shape x;
  float eps = 1e-5f;
  std::string key;
};

bool bn_problem(const KernelContext& ctx, BnProblem& p) {
  if (ctx.input_count() != 5 || !float_inputs(ctx)) return false;
  for (size_t i = 0; i < 5; ++i)
    if (!ctx.input_value(i)) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  if (x.rank() < 2 || x.rank() > 5 || !nonempty(x)) return false;
  const int64_t version = ctx.opset_version();
  if (version < 9 && ctx.attr_int("spatial", 1) == 0) return false;
  if (version >= 14 && ctx.attr_int("training_mode", 0) != 0) return false;
  for (size_t k = 1; k < ctx.output_count(); ++k)
    if (ctx.output_wanted(k)) return false;  // training statistics
  for (size_t i = 1; i < 5; ++i) {
    const Tensor& t = ctx.input_value(i)->tensor();
    if (t.rank() != 1 || t.shape()[0] != x.shape()[1]) return false;
  }
  p.x = x.shape();
  p.eps = ctx.attr_float("epsilon", 1e-5f);
  p.key = "bn" + dims_key(p.x) + float_key(p.eps) + "|t" + std::to_string(sync_threads());
  return true;
}

std::shared_ptr<const Prim> bn_prim(const BnProblem& p) {
  return get_prim(p.key, [&] {
    using F = dnnl::batch_normalization_forward;
    const auto flags = dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    F::desc d(dnnl::prop_kind::forward_inference, plain_md(p.x), p.eps, flags);
    F::primitive_desc pd(d, base_attr(), engine());
    return make_prim<F>(pd);
  });
}

bool accepts_bn(const KernelContext& ctx) {
  return safely([&] {
    BnProblem p;
    return bn_problem(ctx, p) && bn_prim(p)->ok;
  });
}

void BatchNormalization(KernelContext& ctx) {
  guarded(ctx, [&] {
    BnProblem p;
    if (!bn_problem(ctx, p)) ctx.fail("problem not supported by the oneDNN batch normalization");
    auto prim = bn_prim(p);
    if (!prim->ok) ctx.fail("oneDNN could not create this batch normalization");
    Tensor& y = new_output(ctx, p.x);
    const md c = plain_md({p.x[1]});
    execute(*prim, {{DNNL_ARG_SRC, user_mem(plain_md(p.x), ctx.input(0).raw())},
                    {DNNL_ARG_SCALE, user_mem(c, ctx.input(1).raw())},
                    {DNNL_ARG_SHIFT, user_mem(c, ctx.input(2).raw())},
                    {DNNL_ARG_MEAN, user_mem(c, ctx.input(3).raw())},
                    {DNNL_ARG_VARIANCE, user_mem(c, ctx.input(4).raw())},
                    {DNNL_ARG_DST, user_mem(plain_md(p.x), y.mutable_raw())}});
  });
}

// --- LRN ---------------------------------------------------------------------

struct LrnProblem {
  Shape x;
  int64_t size = 0;
  float alpha = 0, beta = 0, bias = 0;
  std::string key;
};

bool lrn_problem(const KernelContext& ctx, LrnProblem& p) {
  if (ctx.input_count() != 1 || !is_float(ctx.input_value(0))) return false;
  const Tensor& x = ctx.input_value(0)->tensor();
  if (x.rank() < 3 || x.rank() > 5 || !nonempty(x)) return false;
  p.size = ctx.attr_int("size", 0);
  if (p.size <= 0 || p.size % 2 == 0) return false;
  p.alpha = ctx.attr_float("alpha", 1e-4f);
  p.beta = ctx.attr_float("beta", 0.75f);
  p.bias = ctx.attr_float("bias", 1.0f);
  p.x = x.shape();
  p.key = "lrn" + dims_key(p.x) + std::to_string(p.size) + "," + float_key(p.alpha) + "," + float_key(p.beta) +
          "," + float_key(p.bias) + "|t" + std::to_string(sync_threads());
  return true;
}

std::shared_ptr<const Prim> lrn_prim(const LrnProblem& p) {
  return get_prim(p.key, [&] {
    using F = dnnl::lrn_forward;
    F::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::lrn_across_channels, plain_md(p.x), p.size, p.alpha,
              p.beta, p.bias);
    F::primitive_desc pd(d, base_attr(), engine());
    return make_prim<F>(pd);
  });
}

bool accepts_lrn(const KernelContext& ctx) {
  return safely([&] {
    LrnProblem p;
    return lrn_problem(ctx, p) && lrn_prim(p)->ok;
  });
}

void LRN(KernelContext& ctx) {
  guarded(ctx, [&] {
    LrnProblem p;
    if (!lrn_problem(ctx, p)) ctx.fail("problem not supported by the oneDNN LRN");
    auto prim = lrn_prim(p);
    if (!prim->ok) ctx.fail("oneDNN could not create this LRN");
    Tensor& y = new_output(ctx, p.x);
    execute(*prim, {{DNNL_ARG_SRC, user_mem(plain_md(p.x), ctx.input(0).raw())},
                    {DNNL_ARG_DST, user_mem(plain_md(p.x), y.mutable_raw())}});
  });
}

// --- LayerNormalization -------------------------------------------------------

// Rows of the normalized axes, scale (and bias) of the normalized shape,
// float32 throughout, stash_type 1, no Mean / InvStdDev outputs wanted (their
// forms differ from oneDNN's statistics): the reference and the Eigen kernel
// (layer_norm.cpp) take the rest.
struct LnProblem {
  int64_t rows = 0, n = 0;
  float eps = 1e-5f;
  bool bias = false;
  int threads = 1;  // threads_for its elements
  std::string key;
};

bool ln_problem(const KernelContext& ctx, LnProblem& p) {
  if (ctx.input_count() < 2 || ctx.input_count() > 3 || !float_inputs(ctx)) return false;
  const Value* xv = ctx.input_value(0);
  const Value* sv = ctx.input_value(1);
  if (!xv || !sv) return false;
  const Tensor& x = xv->tensor();
  if (!nonempty(x) || x.rank() == 0 || ctx.attr_int("stash_type", 1) != 1) return false;
  for (size_t i = 1; i < ctx.output_count(); ++i)
    if (ctx.output_wanted(i)) return false;
  const int64_t rank = x.rank();
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  p.n = 1;
  for (int64_t d = axis; d < rank; ++d) p.n *= x.shape()[static_cast<size_t>(d)];
  p.rows = static_cast<int64_t>(x.element_count()) / p.n;
  // The normalized shape, maybe without leading 1s.
  auto matches = [&](const Tensor& t) {
    return t.shape().size() <= static_cast<size_t>(rank - axis) && static_cast<int64_t>(t.element_count()) == p.n;
  };
  if (!matches(sv->tensor())) return false;
  const Value* bv = ctx.input_count() > 2 ? ctx.input_value(2) : nullptr;
  if (bv && !matches(bv->tensor())) return false;
  p.bias = bv != nullptr;
  p.eps = ctx.attr_float("epsilon", 1e-5f);
  p.threads = use_threads(threads_for(p.rows * p.n));
  p.key = "ln" + std::to_string(p.rows) + "x" + std::to_string(p.n) + "," + float_key(p.eps) + (p.bias ? "b" : "") +
          "|t" + std::to_string(p.threads);
  return true;
}

std::shared_ptr<const Prim> ln_prim(const LnProblem& p) {
  return get_prim(p.key, [&] {
    using F = dnnl::layer_normalization_forward;
    auto flags = dnnl::normalization_flags::use_scale;
    if (p.bias) flags = flags | dnnl::normalization_flags::use_shift;
    F::desc d(dnnl::prop_kind::forward_inference, plain_md({p.rows, p.n}), p.eps, flags);
    F::primitive_desc pd(d, base_attr(), engine());
    return make_prim<F>(pd, /*no_ref=*/true);
  });
}

NormState<LnProblem>* ln_plan(const KernelContext& ctx, std::optional<NormState<LnProblem>>& local) {
  return norm_plan(
      ctx, local, [&](LnProblem& p) { return ln_problem(ctx, p); }, [](const LnProblem& p) { return ln_prim(p); });
}

bool accepts_ln(const KernelContext& ctx) {
  return safely([&] {
    std::optional<NormState<LnProblem>> local;
    return ln_plan(ctx, local) != nullptr;
  });
}

void LayerNormalization(KernelContext& ctx) {
  guarded(ctx, [&] {
    std::optional<NormState<LnProblem>> local;
    auto* s = ln_plan(ctx, local);
    if (!s) ctx.fail("problem not supported by the oneDNN layer normalization");
    const Tensor& x = ctx.input(0);
    Tensor& y = new_output(ctx, x.shape());
    if (!s->xm) {
      s->x_md = plain_md({s->p.rows, s->p.n});
      s->c_md = plain_md({s->p.n});
    }
    auto& args = s->args;
    args[DNNL_ARG_SRC] = point(s->xm, s->x_md, x.raw());
    args[DNNL_ARG_SCALE] = point(s->scale_m, s->c_md, ctx.input(1).raw());
    args[DNNL_ARG_DST] = point(s->ym, s->x_md, y.mutable_raw());
    if (s->p.bias) args[DNNL_ARG_SHIFT] = point(s->shift_m, s->c_md, ctx.input(2).raw());
    use_threads(s->p.threads);
    execute_kept(*s->prim, args);
  });
}

}  // namespace

void register_onednn_norm(KernelRegistry& r) {
  r.add(KernelDef{"", "LayerNormalization", 17, INT_MAX, "onednn", LayerNormalization, accepts_ln});
  r.add(KernelDef{"", "LayerNormalization", 1, 16, "onednn", LayerNormalization, accepts_ln});  // ONNX Runtime's onnx-domain one
  r.add(KernelDef{kCpuDomain, kLayerNorm, 1, INT_MAX, "onednn", LayerNormalization, accepts_ln});
  r.add(KernelDef{"", "Softmax", 1, INT_MAX, "onednn", Softmax<false>, accepts_softmax<false>});
  r.add(KernelDef{"", "LogSoftmax", 1, INT_MAX, "onednn", Softmax<true>, accepts_softmax<true>});
  // Before opset 9 (the `spatial` attribute); from 9 kernels/nn/batch_norm.cpp is faster on plain NCHW.
  r.add(KernelDef{"", "BatchNormalization", 1, 8, "onednn", BatchNormalization, accepts_bn});
  r.add(KernelDef{"", "LRN", 1, INT_MAX, "onednn", LRN, accepts_lrn});
}

}  // namespace onnxscope::cpu::onednn
