// The float32 product problem both of the engine's own product kernels take
// (math/small_matmul.cpp on AVX-512, math/float_gemm_avx2.cpp on AVX2):
// MatMul, Gemm and their fused forms (bias, activation: cpu/fused_ops.h) of
// rows (A's leading dims flattened) by one plain 2-D B, [K, N] or a
// constant [N, K] with Gemm's transB; Gemm with alpha 1, transA 0 and C a
// bias row (N or [1, N]) with beta 1, or beta 0 (C dropped).
#pragma once

#include <cstdint>

#include "cpu/kernels/nn/fused_activation_avx512.h"  // FusedActivation
#include "onnxscope/kernel.h"

namespace onnxscope::cpu {

enum class ProductOp { MatMul, FusedMatMul, Gemm, FusedGemm };

struct FloatProduct {
  int64_t rows = 0, K = 0, N = 0;
  Shape out;
  bool bias = false;
  bool trans_b = false;  // B given as [N, K] (a constant: Gemm's transB)
  FusedActivation act;
};

// The node's problem, or false where it is not one of these (then another
// kernel, and in the end the reference, takes it).
inline bool float_product_of(const KernelContext& ctx, FloatProduct& p, ProductOp op) {
  const bool gemm = op == ProductOp::Gemm || op == ProductOp::FusedGemm, biased = op != ProductOp::MatMul;
  if (ctx.input_count() < 2 || ctx.input_count() > (biased ? 3u : 2u) || ctx.output_count() != 1) return false;
  if (gemm && (ctx.attr_int("transA", 0) != 0 || ctx.attr_float("alpha", 1.0f) != 1.0f)) return false;
  p.trans_b = gemm && ctx.attr_int("transB", 0) != 0;
  if (p.trans_b && !ctx.input_is_initializer(1)) return false;
  // C is required before opset 11: a Gemm without it is the reference's to name.
  if (op == ProductOp::Gemm && ctx.opset_version() < 11 && (ctx.input_count() < 3 || !ctx.input_value(2))) return false;
  auto is_float = [](const Value* v) { return v && v->is_tensor() && v->tensor().dtype() == DataType::Float; };
  const Value* av = ctx.input_value(0);
  const Value* bv = ctx.input_value(1);
  if (!is_float(av) || !is_float(bv)) return false;
  const Shape& as = av->tensor().shape();
  const Shape& bs = bv->tensor().shape();
  if (as.empty() || bs.size() != 2 || (gemm && as.size() != 2)) return false;  // B one plain matrix (a batch of B's: oneDNN's)
  p.K = as.back();
  p.N = bs[p.trans_b ? 0 : 1];
  if (bs[p.trans_b ? 1 : 0] != p.K || p.K < 1 || p.N < 1) return false;
  p.rows = 1;
  for (size_t i = 0; i + 1 < as.size(); ++i) {
    if (as[i] < 1) return false;  // (empty: oneDNN's and the reference's)
    p.rows *= as[i];
  }
  p.out.assign(as.begin(), as.end() - 1);
  p.out.push_back(p.N);
  if (const Value* b = biased && ctx.input_count() > 2 ? ctx.input_value(2) : nullptr) {
    const Shape& cs = b->tensor().shape();
    const float beta = gemm ? ctx.attr_float("beta", 1.0f) : 1.0f;
    if (!is_float(b) || (cs != Shape{p.N} && !(gemm && cs == Shape{1, p.N})) || (beta != 1.0f && beta != 0.0f))
      return false;
    p.bias = beta == 1.0f;
  }
  if ((op == ProductOp::FusedMatMul || op == ProductOp::FusedGemm) && !fused_activation_of(ctx, p.act)) return false;
  return true;
}

}  // namespace onnxscope::cpu
