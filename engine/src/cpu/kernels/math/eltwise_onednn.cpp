// Float32 unary operators as oneDNN eltwise primitives: JIT-compiled for the
// machine's widest vector ISA at run time (AVX-512 where there is one), and
// threaded by oneDNN. An operator is taken only when one eltwise algorithm
// computes exactly its formula (Pow only with a one-element exponent); Exp
// too, with NaN put back afterwards (this oneDNN's exp turns NaN into inf).
// Log, Softplus and Mish stay in elementwise.cpp (this oneDNN's log loses up
// to ~300 ulps, its softplus every digit far left of zero:
// cpu_ops_harness_test measures it), Clip and HardSigmoid in clamp.cpp (its
// clip turns NaN into the bound). Shapes do not matter to an elementwise op,
// so the primitive works on the flattened tensor.
#include <cmath>
#include <optional>

#include "core/target_clones.h"
#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/kernels/onednn_parts.h"
#include "cpu/kernels/param_values.h"
#include "cpu/optimizer.h"
#include "cpu/thread_pool.h"
#include "onnxscope/tensor.h"

namespace onnxscope::cpu {
namespace {

using namespace onednn;
using A = dnnl::algorithm;

struct Eltwise {
  A alg = A::eltwise_relu;
  float alpha = 0, beta = 0;
  bool restore_nan = false;  // this oneDNN's exp turns NaN into inf: put NaN back after
};

// y[i] = x[i] where x[i] is NaN; built for AVX-512 / AVX2 too.
ONNXSCOPE_TARGET_CLONES("avx512f", ONNXSCOPE_CLONE_AVX2, "default")
void restore_nan(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], w = y[i];
    y[i] = v != v ? v : w;
  }
}

// The eltwise algorithm that is this node's operator, with its parameters.
std::optional<Eltwise> eltwise_of(const KernelContext& ctx) {
  if (ctx.input_count() < 1 || !is_float(ctx.input_value(0))) return std::nullopt;
  const std::string& op = ctx.node().op_type;
  if (op != "Pow" && ctx.input_count() != 1) return std::nullopt;
  if (op == "LeakyRelu") return Eltwise{A::eltwise_relu, ctx.attr_float("alpha", 0.01f), 0};
  if (op == "Elu") return Eltwise{A::eltwise_elu, ctx.attr_float("alpha", 1.0f), 0};
  if (op == "Sigmoid") return Eltwise{A::eltwise_logistic, 0, 0};
  if (op == "Exp") return Eltwise{A::eltwise_exp, 0, 0, true};
  if (op == "Sqrt") return Eltwise{A::eltwise_sqrt, 0, 0};
  if (op == "Abs") return Eltwise{A::eltwise_abs, 0, 0};
  if (op == "HardSwish") return Eltwise{A::eltwise_hardswish, 0, 0};
  if (op == "Swish") return Eltwise{A::eltwise_swish, ctx.attr_float("alpha", 1.0f), 0};
  if (op == "Reciprocal") return Eltwise{A::eltwise_pow, 1, -1};
  if (op == "Gelu") {
    // 0.5 x (1 + erf(x / sqrt 2)) loses its digits far left of zero in float32;
    // oneDNN's keeps about 1e-4 of them there, far more than the plain formula.
    const std::string approx = ctx.attr_string("approximate", "none");
    if (approx == "none") return Eltwise{A::eltwise_gelu_erf, 0, 0};
    if (approx == "tanh") return Eltwise{A::eltwise_gelu_tanh, 0, 0};
    return std::nullopt;
  }
  if (op == "Pow") {
    // x ^ 2 of the norms exporters write, and x ^ 1. Other exponents go to the
    // binary kernel (0.5 too: pow(-inf, 0.5) is +inf where sqrt gives NaN).
    if (ctx.input_count() != 2) return std::nullopt;
    const std::optional<float> e = scalar_float(ctx.input_value(1));
    if (!e) return std::nullopt;
    if (*e == 2.0f) return Eltwise{A::eltwise_square, 0, 0};
    if (*e == 1.0f) return Eltwise{A::eltwise_linear, 1, 0};
    return std::nullopt;
  }
  return std::nullopt;
}

struct Problem {
  Eltwise e;
  int64_t n = 0;
  int threads = 1;  // threads_for about four multiply-adds' work an element (erf, tanh: more)
  std::string key;
};

bool problem(const KernelContext& ctx, Problem& p) {
  const std::optional<Eltwise> e = eltwise_of(ctx);
  if (!e) return false;
  p.e = *e;
  p.n = static_cast<int64_t>(ctx.input_value(0)->tensor().element_count());
  if (p.n == 0) return false;
  p.threads = use_threads(threads_for(4 * p.n));
  p.key = "eltwise" + std::to_string(static_cast<int>(p.e.alg)) + "," + float_key(p.e.alpha) + "," +
          float_key(p.e.beta) + "x" + std::to_string(p.n) + "|t" + std::to_string(p.threads);
  return true;
}

std::shared_ptr<const Prim> eltwise_prim(const std::string& key, A alg, float alpha, float beta, int64_t n) {
  return get_prim(key, [&] {
    using F = dnnl::eltwise_forward;
    F::desc d(dnnl::prop_kind::forward_inference, alg, plain_md({n}), alpha, beta);
    F::primitive_desc pd(d, base_attr(), engine());
    return make_prim<F>(pd, /*no_ref=*/true);
  });
}

std::shared_ptr<const Prim> prim_of(const Problem& p) { return eltwise_prim(p.key, p.e.alg, p.e.alpha, p.e.beta, p.n); }



bool accepts(const KernelContext& ctx) {
  return safely([&] {
    Problem p;
    return problem(ctx, p) && prim_of(p)->ok;
  });
}

void Run(KernelContext& ctx) {
  guarded(ctx, [&] {
    Problem p;
    if (!problem(ctx, p)) ctx.fail("problem not supported by the oneDNN eltwise kernel");
    auto prim = prim_of(p);
    if (!prim->ok) ctx.fail("oneDNN could not create this eltwise primitive");
    const Tensor& x = ctx.input(0);
    Tensor& y = new_output(ctx, x.shape());
    const dnnl::memory::desc md = plain_md({p.n});
    use_threads(p.threads);
    execute(*prim, {{DNNL_ARG_SRC, user_mem(md, x.raw())}, {DNNL_ARG_DST, user_mem(md, y.mutable_raw())}});
    if (p.e.restore_nan) {
      const float* in = x.data<float>();
      float* out = y.mutable_data<float>();
      parallel_for(p.n, 65536, [&](int64_t b, int64_t e) { restore_nan(in + b, out + b, e - b); });
    }
  });
}

}  // namespace

void register_eltwise_onednn_kernels(KernelRegistry& r) {
  // Versions from which the operator's float32 formula is the one above
  // (earlier ones had consumed_inputs). Not Relu: oneDNN's gives 0 for NaN
  // (a maximum), where the operator, onnxruntime and the reference keep NaN.
  // Not Tanh: this oneDNN's AVX2 tanh took 10x onnxruntime's time; the
  // elementwise kernels' loop (vector_exp.h's tanh_poly) runs it.
  const std::pair<const char*, int> ops[] = {
      {"LeakyRelu", 6},  {"Elu", 6},       {"Sigmoid", 6}, {"Exp", 6},
      {"Sqrt", 6},     {"Abs", 6},
      {"HardSwish", 14}, {"Swish", 24},   {"Reciprocal", 6}, {"Gelu", 20},  {"Pow", 7},
  };
  for (const auto& [op, since] : ops) r.add(KernelDef{"", op, since, INT_MAX, "onednn-eltwise", Run, accepts});
  // fuse-gelu's Gelu below opset 20 (fused_ops.h): the same formula.
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "onednn-eltwise", Run, accepts});
}

}  // namespace onnxscope::cpu
