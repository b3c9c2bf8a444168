// Attention (ai.onnx 23 to 25), float32, as three steps on the device
// (float16 / bfloat16 through float32, each stage rounded as the
// reference's: see run_attention):
// S = scale * Q K^T (one strided-batched GEMM), the masked softmax in place
// (kernels/attention.h), Y = S V (a second GEMM). Grouped query heads need
// no copies: the query heads of a group are contiguous in (B, Hq, Sq, D), so
// each (batch, key/value head) is one GEMM of group * Sq rows. 3-D inputs
// and the key/value cache are laid out as (B, H, S, D) by a strided copy
// first. Geometry and its checks are the reference's (core/attention_plan.h).
// Also onnxscope.cpu FusedAttention (masked, guarded torch.onnx exports;
// cpu/fused_ops.h) on the same steps, and RotaryEmbedding, which LLM exports
// run on Q and K before Attention.
#include <cmath>
#include <stdexcept>

#include "core/attention_plan.h"
#include "cuda/ops/op_table.h"

namespace onnxscope::cuda {

namespace {

enum Input { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpad };

std::optional<std::string> refuse_attention(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3) return std::string("Attention takes Q, K and V");
  // Q, K, V and the cache of one type (the spec lets V's differ): every float output is then of Q's type.
  if (auto r = require_one_real_type(g, n, kQ, 3)) return r;
  if (auto r = require_types(g, n, {DataType::Bool, DataType::Float, DataType::Float16, DataType::BFloat16}, kMask, 1)) return r;
  for (size_t i : {size_t{kPastKey}, size_t{kPastValue}})
    if (i < n.inputs.size() && !n.inputs[i].empty() && declared_type(g, n.inputs[i]) != declared_type(g, n.inputs[kQ]))
      return std::string("the CUDA Attention takes past_key and past_value of Q's type");
  if (auto r = require_types(g, n, {DataType::Int64}, kNonpad, 1)) return r;
  if (const Attribute* p = n.attribute("softmax_precision"); p && p->i != 1)
    return std::string("softmax_precision other than float (1)");
  return std::nullopt;
}

// A logical (B, H, S, D) tensor, stored 4-D or packed 3-D (B, S, H * D),
// copied into rows [at, at + S) of the sequence axis of a (B, H, T, D) buffer.
void copy_heads(OpContext& c, const void* x, bool packed, int64_t B, int64_t H, int64_t S, int64_t D, void* to,
                int64_t T, int64_t at) {
  if (B * H * S * D == 0) return;
  StridedCopy p;
  p.dims = {B, H, S, D};
  p.in_stride = packed ? std::vector<int64_t>{S * H * D, D, H * D, 1} : std::vector<int64_t>{H * S * D, S * D, D, 1};
  p.out_stride = {H * T * D, T * D, D, 1};
  p.out_base = at * D;
  strided_copy(c, DataType::Float, p, x, to);
}

// K or V for the product: (B, Hkv, T, D) with the cache in front, written
// into the present output when it is asked for; the input itself when it
// already has that layout and no present output is.
DeviceTensor keys_or_values(OpContext& c, const attention::Geometry& g, Input in, Input past, size_t present, int64_t D) {
  const DeviceTensor& x = c.input(in);
  if (!g.packed && g.P == 0 && !c.wants_output(present)) return x;
  DeviceTensor all = c.allocate(DataType::Float, {g.B, g.Hkv, g.T, D});
  if (g.P > 0) copy_heads(c, c.input(past).data, false, g.B, g.Hkv, g.P, D, all.data, g.T, 0);
  copy_heads(c, x.data, g.packed, g.B, g.Hkv, g.Skv, D, all.data, g.T, g.P);
  if (c.wants_output(present)) c.output(present) = all;
  return all;
}

// S = scale * Q K^T per (batch, key/value head) over its group's query
// rows (one strided-batched GEMM), the row kernel `k` in place (the caller
// sets its masking and outputs), then Y = P V into y (B, Hq, Sq, Dv).
// Q, keys and values are 4-D: (B, Hq, Sq, D), (B, Hkv, T, D), (B, Hkv, T, Dv).
// `alpha` scales the product (1 where Q and K come scaled).
void attend(OpContext& c, const attention::Geometry& g, const DeviceTensor& q, const DeviceTensor& keys,
            const DeviceTensor& values, AttentionSoftmaxKernel k, const DeviceTensor& y, float alpha) {
  DeviceTensor s = c.allocate(DataType::Float, g.qk_shape());
  auto* sd = static_cast<float*>(s.data);
  const int64_t m = g.group * g.Sq;
  if (g.D == 0)
    c.rt().zero(sd, bytes_of(DataType::Float, g.qk_shape()));
  else
    row_major_gemm(c, static_cast<const float*>(q.data), static_cast<const float*>(keys.data), sd, m, g.D, g.T, false,
                   true, alpha, 0.f, g.B * g.Hkv, m * g.D, g.T * g.D);
  k.T = g.T;
  k.Hq = g.Hq;
  k.Sq = g.Sq;
  k.s = sd;
  launch(c.rt(), k, g.B * g.Hq * g.Sq);
  if (g.Dv == 0) return;  // an empty Y; qk_matmul_output is written by the kernel
  row_major_gemm(c, sd, static_cast<const float*>(values.data), static_cast<float*>(y.data), m, g.T, g.Dv, false,
                 false, 1.f, 0.f, g.B * g.Hkv, m * g.T, g.T * g.Dv);
}

// `type`: Q's (float16 or bfloat16: the reference's roundings, narrow_row).
void attention_f32(OpContext& c, DataType type) {
  attention::Request req = attention::request_of(c.node(), c.opset());
  req.q = c.input(kQ).shape;
  req.k = c.input(kK).shape;
  req.v = c.input(kV).shape;
  if (c.has_input(kMask)) req.mask = c.input(kMask).shape;
  if (c.has_input(kPastKey)) req.past_key = c.input(kPastKey).shape;
  if (c.has_input(kPastValue)) req.past_value = c.input(kPastValue).shape;
  const bool nonpad = c.opset() >= 24 && c.has_input(kNonpad);
  if (nonpad && c.input(kNonpad).dtype != DataType::Int64)
    c.fail("nonpad_kv_seqlen must be int64, got " + std::string(dtype_name(c.input(kNonpad).dtype)));
  if (nonpad) req.nonpad = c.input(kNonpad).shape;
  attention::Geometry g;
  try {
    g = attention::plan(req);
  } catch (const std::invalid_argument& e) {
    c.fail(e.what());
  }
  const DeviceTensor keys = keys_or_values(c, g, kK, kPastKey, 1, g.D);
  const DeviceTensor values = keys_or_values(c, g, kV, kPastValue, 2, g.Dv);
  c.output(0) = c.allocate(DataType::Float, g.y_shape());
  const bool want_qk = c.wants_output(3);
  if (want_qk) c.output(3) = c.allocate(DataType::Float, g.qk_shape());
  const int64_t rows = g.B * g.Hq * g.Sq;
  if (rows == 0) return;
  if (g.T == 0) {  // nothing to attend to: a sum over no keys
    c.rt().zero(c.output(0).data, bytes_of(DataType::Float, g.y_shape()));
    return;
  }
  DeviceTensor q = c.input(kQ);
  if (g.packed) {
    q = c.allocate(DataType::Float, {g.B, g.Hq, g.Sq, g.D});
    copy_heads(c, c.input(kQ).data, true, g.B, g.Hq, g.Sq, g.D, q.data, g.Sq, 0);
  }
  AttentionSoftmaxKernel k;
  k.narrow = narrow_code(type);
  k.soft = c.node().attribute("softmax_precision") ? 0 : k.narrow;  // 1 (float) is the only other one taken
  DeviceTensor scaled_keys = keys;
  float alpha = static_cast<float>(g.scale);
  if (k.narrow != 0) {  // Q and K each scaled by sqrt(scale) rounded to their type, then rounded, before the product
    ScaleRoundKernel sk;
    sk.scale = round_to_narrow(static_cast<float>(std::sqrt(g.scale)), k.narrow);
    sk.narrow = k.narrow;
    DeviceTensor qs = c.allocate(DataType::Float, q.shape);
    sk.x = static_cast<const float*>(q.data);
    sk.y = static_cast<float*>(qs.data);
    launch(c.rt(), sk, static_cast<int64_t>(elements_of(q.shape)));
    q = qs;
    scaled_keys = c.allocate(DataType::Float, keys.shape);
    sk.x = static_cast<const float*>(keys.data);
    sk.y = static_cast<float*>(scaled_keys.data);
    launch(c.rt(), sk, static_cast<int64_t>(elements_of(keys.shape)));
    alpha = 1.f;
  }
  k.softcap = g.softcap > 0 ? static_cast<float>(g.softcap) : 0.f;
  k.causal = g.causal;
  k.left = g.left;
  k.right = g.right;
  k.past = g.P;
  if (nonpad) k.nonpad = static_cast<const int64_t*>(c.input(kNonpad).data);
  if (g.has_mask) {
    const DeviceTensor& mask = c.input(kMask);
    if (mask.dtype == DataType::Bool) k.mask_b = static_cast<const uint8_t*>(mask.data);
    else if (mask.dtype == DataType::Float) k.mask_f = static_cast<const float*>(mask.data);
    else c.fail("attn_mask must be bool or float32, not " + std::string(dtype_name(mask.dtype)));
    k.Tm = g.Tm;
    for (int a = 0; a < 4; ++a) k.ms[a] = g.mask_stride[static_cast<size_t>(a)];
  }
  if (want_qk) {
    k.qk = static_cast<float*>(c.output(3).data);
    k.mode = static_cast<int>(g.mode);
  }
  // Y = P V, into Y itself when it is 4-D.
  DeviceTensor y4 = g.packed ? c.allocate(DataType::Float, {g.B, g.Hq, g.Sq, g.Dv}) : c.output(0);
  attend(c, g, q, scaled_keys, values, k, y4, alpha);
  if (g.packed) {  // (B, Hq, Sq, Dv) -> (B, Sq, Hq * Dv)
    StridedCopy p;
    p.dims = {g.B, g.Hq, g.Sq, g.Dv};
    p.in_stride = {g.Hq * g.Sq * g.Dv, g.Sq * g.Dv, g.Dv, 1};
    p.out_stride = {g.Sq * g.Hq * g.Dv, g.Dv, g.Hq * g.Dv, 1};
    strided_copy(c, DataType::Float, p, y4.data, c.output(0).data);
  }
}

// FusedAttention from [B, S, H, D]: each (batch, head) matrix read in place
// through pointer arrays (Runtime::gemm_pointers), the scores [B, H, Sq, T]
// contiguous as attend's, Y written straight into its layout: no copies of
// Q, K, V or Y. Column-major, S_bh^T = K_bh Q_bh^T and Y_bh^T = V_bh^T P_bh^T,
// a head's rows H * D apart. fp16 (`half`: Q, K, V's half copies, written by
// their projections' epilogues): the products of float16 operands rounded
// to float16 after each GEMM, P converted for the second, as attend's GEMMs
// do; the same bits.
void attend_in_place(OpContext& c, const attention::Geometry& g, AttentionSoftmaxKernel k, int64_t bshd_in,
                     bool bshd_out, const void* const* half) {
  const int64_t BH = g.B * g.Hq;
  const int64_t es = half ? 2 : 4;  // Q, K, V, P's element bytes
  const void* q = half ? half[0] : c.input(0).data;
  const void* kk = half ? half[1] : c.input(1).data;
  const void* v = half ? half[2] : c.input(2).data;
  DeviceTensor s = c.allocate(DataType::Float, g.qk_shape());
  DeviceTensor tables = c.allocate(DataType::Int64, {6, BH});  // K, Q, S, V, P, Y addresses
  const void** t = static_cast<const void**>(tables.data);
  auto table = [&](int at, const void* base, int64_t outer, int64_t inner, int64_t bytes) {  // strides in elements
    PointerTableKernel p{static_cast<const unsigned char*>(base), g.Hq, outer * bytes, inner * bytes, t + at * BH};
    launch(c.rt(), p, BH);
    return static_cast<void*>(t + at * BH);  // the array, typed by its use
  };
  // Per input: a head's matrix's batch stride, head stride and row stride,
  // in elements, in [B, S, H, D] (bit set) or [B, H, S, D].
  struct Layout {
    int64_t outer, inner, ld;
  };
  auto layout = [&](int bit, int64_t S, int64_t D) {
    return (bshd_in & bit) ? Layout{S * g.Hq * D, D, g.Hq * D} : Layout{g.Hq * S * D, S * D, D};
  };
  const Layout lq = layout(1, g.Sq, g.D), lk = layout(2, g.T, g.D), lv = layout(4, g.T, g.Dv);
  const Layout ly = bshd_out ? Layout{g.Sq * g.Hq * g.Dv, g.Dv, g.Hq * g.Dv} : Layout{g.Hq * g.Sq * g.Dv, g.Sq * g.Dv, g.Dv};
  GemmPointersArgs qk;
  qk.trans_a = true;  // K_bh stored [T, D] rows lk.ld apart: column-major [D, T], op(A) = K_bh
  qk.m = g.T;
  qk.n = g.Sq;
  qk.k = g.D;
  qk.alpha = static_cast<float>(g.scale);
  qk.a = static_cast<const float* const*>(table(0, kk, lk.outer, lk.inner, es));
  qk.lda = lk.ld;
  qk.b = static_cast<const float* const*>(table(1, q, lq.outer, lq.inner, es));
  qk.ldb = lq.ld;
  qk.c = static_cast<float* const*>(table(2, s.data, g.Hq * g.Sq * g.T, g.Sq * g.T, 4));
  qk.ldc = g.T;
  qk.batch = BH;
  qk.half = half != nullptr;
  c.rt().gemm_pointers(qk, c.mode());
  const int64_t scores = BH * g.Sq * g.T;
  if (half) launch(c.rt(), RoundToHalfKernel{static_cast<const float*>(s.data), static_cast<float*>(s.data)}, scores);
  k.T = g.T;
  k.Hq = g.Hq;
  k.Sq = g.Sq;
  k.s = static_cast<float*>(s.data);
  launch(c.rt(), k, BH * g.Sq);
  GemmPointersArgs pv;
  pv.m = g.Dv;
  pv.n = g.Sq;
  pv.k = g.T;
  DeviceTensor p16;  // fp16: P in float16 for the second product
  if (half) {
    p16 = c.allocate(DataType::Float16, g.qk_shape());
    launch(c.rt(), CastKernel{ElemType::Float, ElemType::Float16, s.data, p16.data, false}, scores);
  }
  pv.a = static_cast<const float* const*>(table(3, v, lv.outer, lv.inner, es));
  pv.lda = lv.ld;
  pv.b = static_cast<const float* const*>(table(4, half ? p16.data : s.data, g.Hq * g.Sq * g.T, g.Sq * g.T, es));
  pv.ldb = g.T;
  pv.c = static_cast<float* const*>(table(5, c.output(0).data, ly.outer, ly.inner, 4));
  pv.ldc = ly.ld;
  pv.batch = BH;
  pv.half = half != nullptr;
  c.rt().gemm_pointers(pv, c.mode());
  if (half) {
    float* y = static_cast<float*>(c.output(0).data);
    launch(c.rt(), RoundToHalfKernel{y, y}, static_cast<int64_t>(elements_of(c.output(0).shape)));
  }
}

std::optional<std::string> refuse_fused_attention(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3 || n.inputs.size() > 4) return std::string("FusedAttention takes Q, K, V and an optional Mask");
  return require_types(g, n, {DataType::Float});
}

// onnxscope.cpu FusedAttention (cpu/fused_ops.h): Attention's steps with
// the unfused graph's values: the three scales as one GEMM factor, the
// mask added as Add broadcasts it (a last dim of 1 covers every key),
// Softmax's NaN rows, and the NaN guard when asked.
// bshd_in / bshd_out (fuse-attention-transposes): Q, K, V read and Y
// written as [B, S, H, D] instead of [B, H, S, D].
void run_fused_attention(OpContext& c) {
  const int64_t bshd_in = c.attr_int("bshd_in", 0);  // bits: 1 Q, 2 K, 4 V
  const bool bshd_out = c.attr_int("bshd_out", 0) != 0;
  if (bshd_in < 0 || bshd_in > 7) c.fail("bshd_in " + std::to_string(bshd_in) + " is not a set of the bits 1, 2, 4");
  auto bshd = [&](size_t i) { return (bshd_in & (int64_t{1} << i)) != 0; };
  // The shapes as [B, H, S, D] whatever the layout.
  auto heads_outer = [&](size_t i) {
    const Shape& s = c.input(i).shape;
    return bshd(i) && s.size() == 4 ? Shape{s[0], s[2], s[1], s[3]} : s;
  };
  const Shape qs = heads_outer(0), ks = heads_outer(1), vs = heads_outer(2);
  if (qs.size() != 4 || ks.size() != 4 || vs.size() != 4 || ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] ||
      vs[1] != qs[1] || ks[3] != qs[3] || vs[2] != ks[2])
    c.fail("Q " + shape_to_string(c.input(0).shape) + ", K " + shape_to_string(c.input(1).shape) + " and V " +
           shape_to_string(c.input(2).shape) + " are not, as [B, H, S, D] (bshd_in " + std::to_string(bshd_in) +
           "), [B, H, Sq, D], [B, H, T, D], [B, H, T, Dv]");
  attention::Geometry g;
  g.B = qs[0];
  g.Hq = g.Hkv = qs[1];
  g.Sq = qs[2];
  g.Skv = g.T = ks[2];
  g.D = qs[3];
  g.Dv = vs[3];
  g.scale = static_cast<double>(c.attr_float("scale_q", 1.f)) * c.attr_float("scale_k", 1.f) * c.attr_float("scale", 1.f);
  AttentionSoftmaxKernel k;
  k.plain = true;
  k.nan_to_zero = c.attr_int("nan_to_zero", 0) != 0;
  if (c.has_input(3)) {
    const DeviceTensor& mask = c.input(3);
    const Shape scores = g.qk_shape();
    bool fits = mask.shape.size() <= 4;
    int64_t stride = 1;
    for (size_t i = 0; fits && i < mask.shape.size(); ++i) {  // from the last dim
      const int64_t d = mask.shape[mask.shape.size() - 1 - i];
      fits = d == 1 || d == scores[3 - i];
      k.ms[3 - i] = d == 1 ? 0 : stride;
      stride *= d;
    }
    if (!fits)
      c.fail("the mask " + shape_to_string(mask.shape) + " does not broadcast into the scores " + shape_to_string(scores));
    k.mask_f = static_cast<const float*>(mask.data);
    k.Tm = g.T;
  }
  const Shape y_shape = bshd_out ? Shape{g.B, g.Sq, g.Hq, g.Dv} : g.y_shape();
  c.output(0) = c.allocate(DataType::Float, y_shape);
  if (g.B * g.Hq * g.Sq * g.Dv == 0) return;
  if (g.T == 0) {  // a product over no keys
    c.rt().zero(c.output(0).data, bytes_of(DataType::Float, y_shape));
    return;
  }
  // In place when every matrix starts on 16 bytes: cuBLAS cannot see the
  // addresses in a pointer array, and its tensor-core kernels assume it. In
  // fp16 from Q, K and V's half copies (8 elements to 16 bytes), when their
  // producers wrote them.
  auto on16 = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool fp16 = c.mode() == MathMode::Fp16;
  const int64_t per16 = fp16 ? 8 : 4;
  bool in_place = (bshd_in != 0 || bshd_out) && g.D > 0 && g.D % per16 == 0 && g.Dv % per16 == 0 &&
                  (g.Sq * g.T) % per16 == 0 && g.Dv % 4 == 0 && on16(c.output(0).data);
  for (size_t i = 0; in_place && i < 3; ++i) {
    const DeviceTensor& in = c.input(i);
    in_place = fp16 ? in.half_copy && on16(in.half_copy) : on16(in.data);
  }
  if (in_place) {
    const void* half[3] = {};
    if (fp16)
      for (size_t i = 0; i < 3; ++i) half[i] = c.half_input(i);
    attend_in_place(c, g, k, bshd_in, bshd_out, fp16 ? half : nullptr);
    return;
  }
  // Otherwise (fp16 without half copies, matrices off 16 bytes): [B, S, H, D]
  // copied to [B, H, S, D] for the strided-batched GEMMs (the layout of
  // Attention's packed 3-D inputs, copy_heads).
  auto as_heads_outer = [&](size_t i, int64_t S, int64_t D) {
    if (!bshd(i)) return c.input(i);
    DeviceTensor t = c.allocate(DataType::Float, {g.B, g.Hq, S, D});
    copy_heads(c, c.input(i).data, true, g.B, g.Hq, S, D, t.data, S, 0);
    return t;
  };
  const DeviceTensor q = as_heads_outer(0, g.Sq, g.D), keys = as_heads_outer(1, g.T, g.D), values = as_heads_outer(2, g.T, g.Dv);
  const DeviceTensor y4 = bshd_out ? c.allocate(DataType::Float, g.y_shape()) : c.output(0);
  attend(c, g, q, keys, values, k, y4, static_cast<float>(g.scale));
  if (bshd_out) {  // [B, H, Sq, Dv] -> [B, Sq, H, Dv]
    StridedCopy p;
    p.dims = {g.B, g.Hq, g.Sq, g.Dv};
    p.in_stride = {g.Hq * g.Sq * g.Dv, g.Sq * g.Dv, g.Dv, 1};
    p.out_stride = {g.Sq * g.Hq * g.Dv, g.Dv, g.Hq * g.Dv, 1};
    strided_copy(c, DataType::Float, p, y4.data, c.output(0).data);
  }
}

std::optional<std::string> refuse_rotary(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3) return std::string("RotaryEmbedding takes X, cos_cache and sin_cache");
  if (auto r = require_one_real_type(g, n, 0, 3)) return r;
  return require_types(g, n, {DataType::Int64}, 3, 1);
}

// RotaryEmbedding (opset 23), float32: y = x, then each rotated pair written
// by one thread; the shape checks are the reference's, position ids are
// checked on the device (a fault reported after the run). float16 /
// bfloat16 through float32 (run_rotary), rounded once.
void rotary(OpContext& c) {
  const DeviceTensor& x = c.input(0);
  const Shape& cache = c.input(1).shape;
  if (c.input(2).shape != cache) c.fail("cos_cache and sin_cache must have the same shape");
  RotaryKernel k;
  int64_t B = 0;
  if (x.shape.size() == 4) {
    B = x.shape[0];
    k.H = x.shape[1];
    k.S = x.shape[2];
    k.D = x.shape[3];
  } else if (x.shape.size() == 3) {
    const int64_t heads = c.attr_int("num_heads", 0);
    if (heads <= 0) c.fail("3-D input needs a positive num_heads attribute");
    if (x.shape[2] % heads != 0) c.fail("hidden size " + std::to_string(x.shape[2]) + " is not divisible by num_heads");
    k.packed = true;
    B = x.shape[0];
    k.S = x.shape[1];
    k.H = heads;
    k.D = x.shape[2] / heads;
  } else {
    c.fail("X must be 3-D or 4-D, got " + shape_to_string(x.shape));
  }
  int64_t rd = c.attr_int("rotary_embedding_dim", 0);
  if (rd == 0) rd = k.D;
  if (rd < 0 || rd > k.D || rd % 2 != 0)
    c.fail("rotary_embedding_dim " + std::to_string(rd) + " must be even and at most head_size " + std::to_string(k.D));
  k.half = rd / 2;
  k.interleaved = c.attr_int("interleaved", 0) != 0;
  if (cache.empty() || cache.back() != k.half)
    c.fail("cos/sin cache last dimension must be rotary_embedding_dim/2 = " + std::to_string(k.half) + ", got " +
           shape_to_string(cache));
  const bool pos = c.has_input(3);
  if (pos) {
    // Read as int64 on the device: a value of another type (a wrong declaration) would be read past its end.
    if (c.input(3).dtype != DataType::Int64)
      c.fail("position_ids must be int64, got " + std::string(dtype_name(c.input(3).dtype)));
    if (c.input(3).shape != Shape{B, k.S})
      c.fail("position_ids must have shape [" + std::to_string(B) + "," + std::to_string(k.S) + "]");
    if (cache.size() != 2) c.fail("with position_ids the caches must be 2-D, got " + shape_to_string(cache));
    k.rows = cache[0];
  } else if (cache != Shape{B, k.S, k.half}) {
    c.fail("without position_ids the caches must have shape [" + std::to_string(B) + "," + std::to_string(k.S) + "," +
           std::to_string(k.half) + "], got " + shape_to_string(cache));
  }
  c.output(0) = c.allocate(DataType::Float, x.shape);
  const uint64_t bytes = bytes_of(DataType::Float, x.shape);
  if (bytes == 0) return;
  c.rt().copy(c.output(0).data, x.data, bytes);
  if (k.half == 0) return;
  k.x = static_cast<const float*>(x.data);
  k.cosines = static_cast<const float*>(c.input(1).data);
  k.sines = static_cast<const float*>(c.input(2).data);
  k.y = static_cast<float*>(c.output(0).data);
  if (pos) {
    k.pos = static_cast<const int64_t*>(c.input(3).data);
    const FaultLog::Site site = c.fault_site(FaultKind::Position);
    k.fault = site.record;
    k.site = site.id;
  }
  launch(c.rt(), k, B * k.S * k.H * k.half);
}

void run_rotary(OpContext& c) { run_on_float32(c, rotary); }

void run_attention(OpContext& c) {
  const DataType t = c.input(kQ).dtype;
  run_on_float32(c, [t](OpContext& f) { attention_f32(f, t); });
}

}  // namespace

void add_attention_ops(std::vector<OpDef>& t) {
  t.push_back({"Attention", refuse_attention, run_attention});
  t.push_back({"RotaryEmbedding", refuse_rotary, run_rotary});
  t.push_back({"FusedAttention", refuse_fused_attention, run_fused_attention, OpBackend::Kernel, nullptr, "onnxscope.cpu"});
}

}  // namespace onnxscope::cuda
