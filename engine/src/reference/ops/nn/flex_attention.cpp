// Reference kernel: ai.onnx.preview FlexAttention.
//
// Inputs are widened to double and sums accumulate in double; where the
// spec's computation graph has an intermediate tensor of the input type
// (Attention's QK^T, its softmax output) the value is rounded to that type
// there, so narrow-float results follow the spec's precision.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/attention_plan.h"
#include "reference/kernel_util.h"
#include "reference/ops/real_values.h"
#include "reference/ops/nn/common.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

using real::round_to;
namespace {

// Runs a modifier subgraph on a (B, Hq, L, S) tensor of type `t`; returns its output as doubles.
std::vector<double> run_modifier(KernelContext& ctx, const Graph& g, DataType t, const Shape& shape,
                                 const std::vector<double>& in, const char* name) {
  Tensor arg = Tensor::zeros(t, shape);
  real::store_doubles(ctx, arg, in);
  std::vector<Value> outs = ctx.run_graph(g, {Value(std::move(arg))});
  if (outs.size() != 1 || !outs[0].is_tensor()) ctx.fail(std::string(name) + " must produce exactly one tensor");
  const Tensor& r = outs[0].tensor();
  if (r.shape() != shape)
    ctx.fail(std::string(name) + " output has shape " + shape_to_string(r.shape()) + ", expected " + shape_to_string(shape));
  real::require_float(ctx, r, name);
  std::vector<double> v = real_values(r);
  for (double& x : v) x = round_to(t, x);
  return v;
}

}  // namespace

// Y = prob_mod(softmax(score_mod((Q K^T) * scale))) V
void FlexAttention(KernelContext& ctx) {
  const Tensor& Q = ctx.input(0);
  const Tensor& K = ctx.input(1);
  const Tensor& V = ctx.input(2);
  real::require_float(ctx, Q, "Q");
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
  real::store_doubles(ctx, ctx.allocate_output(0, t, {B, Hq, L, Ev}), y);
}

}  // namespace onnxscope::ref
