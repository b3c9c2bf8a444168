// Reference kernel: Attention (opsets 23 to 25).
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

}  // namespace

void Attention(KernelContext& ctx) {
  const int64_t opset = ctx.opset_version();
  const Tensor& Q = ctx.input(0);
  const Tensor& K = ctx.input(1);
  const Tensor& V = ctx.input(2);
  const Tensor* mask = ctx.optional_input(3);
  const Tensor* past_key = ctx.optional_input(4);
  const Tensor* past_value = ctx.optional_input(5);
  const Tensor* nonpad = opset >= 24 ? ctx.optional_input(6) : nullptr;
  real::require_float(ctx, Q, "Q");
  real::require_float(ctx, V, "V");
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
  if (want_qk) real::check_work(ctx, G.qk_shape(), "qk_matmul_output");
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
  real::store_doubles(ctx, Y, y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) real::store_doubles(ctx, ctx.allocate_output(1, t1, G.present_key_shape()), keys);
  if (ctx.output_count() > 2 && ctx.output_wanted(2))
    real::store_doubles(ctx, ctx.allocate_output(2, t2, G.present_value_shape()), values);
  if (want_qk) real::store_doubles(ctx, ctx.allocate_output(3, t1, G.qk_shape()), qk_out);
}

}  // namespace onnxscope::ref
