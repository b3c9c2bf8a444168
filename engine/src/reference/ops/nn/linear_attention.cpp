// Reference kernel: LinearAttention.
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
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

// Recurrent linear attention over a (B, H_kv, d_k, d_v) state, one token at a time:
//   gated:  S *= exp(g_t);  delta: v_t <- beta_t (v_t - S^T k_t);  S += k_t v_t^T;  o_t = scale q_t^T S.
void LinearAttention(KernelContext& ctx) {
  const Tensor& query = ctx.input(0);
  const Tensor& key = ctx.input(1);
  const Tensor& value = ctx.input(2);
  const Tensor* past = ctx.optional_input(3);
  const Tensor* decay = ctx.optional_input(4);
  const Tensor* beta = ctx.optional_input(5);
  real::require_float(ctx, query, "query");
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
  real::check_work(ctx, state_shape, "state");
  real::check_work(ctx, Shape{B, T, Hq * dv}, "output");
  DataType state_t = query.dtype();
  std::vector<double> state(size_t(B * Hkv * dk * dv), 0.0);
  if (past) {
    real::require_float(ctx, *past, "past_state");
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
  real::store_doubles(ctx, ctx.allocate_output(0, query.dtype(), {B, T, Hq * dv}), out);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) real::store_doubles(ctx, ctx.allocate_output(1, state_t, state_shape), state);
}

}  // namespace onnxscope::ref
