// Reference kernel: com.microsoft Attention (ONNX Runtime's contrib
// operator; its transformers optimizer writes it for BERT- and GPT-2-style
// models).
//
//   q, k, v = split(input @ weights + bias)     widths qkv_hidden_sizes (Dq = Dk)
//   keys/values = concat(past[0|1], k|v)         past (2, B, N, P, H); present the same with T = P + S
//   scores = scale * q k^T + mask + attention_bias, causal keys j > P + i out when unidirectional
//   output (B, S, Dv) = softmax(scores) v
//
// mask_index formats and values: contrib_attention::mask_bias (masked keys
// get mask_filter_value, -10000 by default, as ONNX Runtime adds it); the
// causal frontier removes keys entirely. Computed in double, rounded once.
#include <string>
#include <vector>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"
#include "reference/ops/nn/contrib_attention_common.h"
#include "reference/ops/real_values.h"

namespace onnxscope::ref {

namespace ca = contrib_attention;

namespace contrib_attention {

void attention_after_projection(KernelContext& ctx, const Projection& in) {
  const Tensor* mask = ctx.optional_input(in.mask_input);
  const Tensor* past = ctx.optional_input(in.past_input);
  const Tensor* attn_bias = in.attention_bias_input >= 0 ? ctx.optional_input(in.attention_bias_input) : nullptr;
  if (ctx.attr_int("do_rotary", 0) != 0)
    ctx.fail("do_rotary: rotary embedding inside Attention is not supported (ONNX Runtime's CPU kernel has none)");
  if (ctx.attr_int("past_present_share_buffer", 0) != 0)
    ctx.fail("past_present_share_buffer: a shared past/present buffer is not supported (ONNX Runtime runs it on CUDA only)");
  const int64_t B = in.B, S = in.S, Din = in.Din, width = in.width;
  const int64_t N = ctx.attr_int("num_heads", 0);
  std::vector<int64_t> sizes = ctx.attr_ints("qkv_hidden_sizes", {});
  if (sizes.empty()) {
    if (width % 3 != 0) ctx.fail("weights width " + std::to_string(width) + " is not 3 * hidden; give qkv_hidden_sizes");
    sizes.assign(3, width / 3);
  }
  if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] <= 0 || sizes[2] <= 0 || sizes[0] + sizes[1] + sizes[2] != width)
    ctx.fail("qkv_hidden_sizes must be three positive values (Q and K equal) summing to the weights width " +
             std::to_string(width));
  const int64_t H = head_size(ctx, sizes[0], N, "Q/K"), Hv = head_size(ctx, sizes[2], N, "V");
  if (int64_t(in.bias.size()) != width)
    ctx.fail("bias must have shape [" + std::to_string(width) + "] (the weights width)");
  int64_t P = 0;
  if (past) {
    if (H != Hv) ctx.fail("past needs equal Q, K and V hidden sizes");
    if (past->rank() != 5 || past->shape()[0] != 2 || past->shape()[1] != B || past->shape()[2] != N ||
        past->shape()[4] != H)
      ctx.fail("past of shape " + shape_to_string(past->shape()) + " must be (2, batch, num_heads, past_length, head_size " +
               std::to_string(H) + ")");
    real::require_float(ctx, *past, "past");
    P = past->shape()[3];
  }
  const int64_t T = P + S;

  // The projection, in double: rows of W in order (contiguous), each sum over d in order, then the bias.
  real::check_work(ctx, {B, S, width}, "the Q/K/V projection");
  std::vector<double> qkv(size_t(B * S * width), 0.0);
  for (int64_t r = 0; r < B * S; ++r) {
    double* acc = &qkv[size_t(r * width)];
    for (int64_t d = 0; d < Din; ++d) {
      const double xv = in.x[size_t(r * Din + d)];
      const double* wr = &in.w[size_t(d * width)];
      for (int64_t c = 0; c < width; ++c) acc[c] += xv * wr[c];
    }
    for (int64_t c = 0; c < width; ++c) acc[c] += in.bias[size_t(c)];
  }
  Heads q = make_heads(ctx, B, N, S, H, "Q"), k = make_heads(ctx, B, N, S, H, "K"), v = make_heads(ctx, B, N, S, Hv, "V");
  split_heads(q, qkv, width, 0);
  split_heads(k, qkv, width, sizes[0]);
  split_heads(v, qkv, width, 2 * sizes[0]);
  if (past) {
    const std::vector<double> pv = real_values(*past);
    const size_t half = pv.size() / 2;
    k = concat_past(ctx, Heads{B, N, P, H, std::vector<double>(pv.begin(), pv.begin() + half)}, k, "the keys (past and new)");
    v = concat_past(ctx, Heads{B, N, P, H, std::vector<double>(pv.begin() + half, pv.end())}, v, "the values (past and new)");
  }

  const KeyBias key_bias(ctx, mask, "mask_index", attn_bias, B, N, S, T, P);
  const Options o = key_bias.options();
  const std::vector<double> y = attend(ctx, q, k, v, o);
  real::store_doubles(ctx, ctx.allocate_output(0, in.out_type, {B, S, N * Hv}), y);
  if (ctx.output_count() > 1 && ctx.output_wanted(1)) {
    std::vector<double> present(k.v);
    present.insert(present.end(), v.v.begin(), v.v.end());
    real::store_doubles(ctx, ctx.allocate_output(1, in.out_type, {2, B, N, T, H}), present);
  }
}

}  // namespace contrib_attention

void ContribAttention(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  if (ctx.optional_input(6)) ctx.fail("past_sequence_length: a shared past/present buffer is not supported");
  real::require_float(ctx, x, "input");
  if (x.rank() != 3) ctx.fail("input must be 3-D (batch, sequence, input_hidden), got " + shape_to_string(x.shape()));
  if (w.rank() != 2 || w.shape()[0] != x.shape()[2])
    ctx.fail("weights of shape " + shape_to_string(w.shape()) + " must be (input_hidden " + std::to_string(x.shape()[2]) +
             ", Dq + Dk + Dv)");
  for (const Tensor* t : {&w, bias, ctx.optional_input(4), ctx.optional_input(5)})
    if (t && t->dtype() != x.dtype()) ctx.fail("weights, bias, past and attention_bias must have the input's element type");
  if (bias && bias->rank() != 1) ctx.fail("bias must be 1-D, got " + shape_to_string(bias->shape()));
  ca::Projection p;
  p.B = x.shape()[0], p.S = x.shape()[1], p.Din = x.shape()[2], p.width = w.shape()[1];
  p.x = real_values(x);
  p.w = real_values(w);
  p.bias = bias ? real_values(*bias) : std::vector<double>(size_t(p.width), 0.0);
  p.out_type = x.dtype();
  p.mask_input = 3, p.past_input = 4, p.attention_bias_input = 5;
  ca::attention_after_projection(ctx, p);
}

}  // namespace onnxscope::ref
