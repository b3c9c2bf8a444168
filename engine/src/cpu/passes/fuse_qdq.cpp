// QDQ models (onnxruntime's quantize_static default format, and other
// quantizers') write each integer operation as its float operation between
// DequantizeLinear and QuantizeLinear nodes:
//   Q(Conv(DQ(x), DQ(w) [, DQ(bias int32)]))          -> QLinearConv
//   Q(MatMul(DQ(a), DQ(b)))                           -> QLinearMatMul
//   [Q](Gemm(DQ(a), DQ(B) [, DQ(C int32)]))            -> com.microsoft QGemm (float Y without the Q)
//   Q(Add|Mul(DQ(a), DQ(b)))                          -> com.microsoft QLinearAdd | QLinearMul
//   Q(Concat(DQ(x1), DQ(x2), ...))                    -> com.microsoft QLinearConcat (the same bytes)
//   Q(MaxPool|Reshape|Flatten|Transpose|Squeeze|Unsqueeze|Slice(DQ(x))), the same scale and zero point
//                                                     -> the op on the 8-bit values
// so the 8-bit kernels (and nhwc-int8-layout after them) run them, as
// onnxruntime's QDQ transformer does. The fused forms sum in integers and
// requantize once; the float graph rounds the dequantized values, their sums
// and the division by the output scale: results can differ by one step of
// the output's quantization where the exact value sits at a rounding
// boundary (the data-movement forms are exact: Q(DQ(v)) is v). `diff` and
// the debugger run with this pass off (it fuses); --disable-pass fuse-qdq
// keeps the float graph.
#include <cmath>
#include <cstring>

#include "cpu/passes/passes.h"

namespace onnxscope::cpu {
namespace {

bool eight_bit(DataType t) { return t == DataType::Uint8 || t == DataType::Int8; }

int64_t int_attr(const Node& n, const char* name, int64_t fallback) {
  const Attribute* a = n.attribute(name);
  return a ? a->i : fallback;
}

float float_attr(const Node& n, const char* name, float fallback) {
  const Attribute* a = n.attribute(name);
  return a ? a->f : fallback;
}

// A DequantizeLinear or QuantizeLinear's parameters: scale (float32
// constant), zero point (constant or absent) and the quantized type.
struct QParams {
  const Node* node = nullptr;
  std::string scale, zero_point;  // zero_point "" when absent (0)
  DataType type = DataType::Undefined;
  const Tensor* s = nullptr;
  const Tensor* z = nullptr;
  int64_t axis = 1;
};

std::optional<QParams> qparams(const Model& m, const Node& n, DataType declared) {
  if (n.inputs.size() < 2 || n.inputs.size() > 3 || n.outputs.size() != 1 || n.inputs[0].empty()) return std::nullopt;
  if (int_attr(n, "block_size", 0) != 0) return std::nullopt;
  QParams p;
  p.node = &n;
  p.scale = n.inputs[1];
  p.s = constant_tensor(m, p.scale);
  if (!p.s || p.s->dtype() != DataType::Float || p.s->rank() > 1 || p.s->element_count() == 0) return std::nullopt;
  if (n.inputs.size() > 2 && !n.inputs[2].empty()) {
    p.zero_point = n.inputs[2];
    p.z = constant_tensor(m, p.zero_point);
    if (!p.z || p.z->element_count() != p.s->element_count()) return std::nullopt;
    p.type = p.z->dtype();
  } else {
    p.type = declared;
  }
  if (!eight_bit(p.type)) return std::nullopt;
  p.axis = int_attr(n, "axis", 1);
  return p;
}

bool per_tensor(const QParams& p) { return p.s->element_count() == 1; }

// The DequantizeLinear producing `value` (8-bit input), or nullopt.
std::optional<QParams> dequantized(const Model& m, const GraphIndex& idx, const std::string& value) {
  const Node* dq = idx.producer_of(m.graph, value);
  if (!dq || !is_op(*dq, "DequantizeLinear")) return std::nullopt;
  return qparams(m, *dq, elem_type(m.graph, dq->inputs[0]));
}

// The one QuantizeLinear reading `value` (and nothing else reading it), to
// 8 bits; nullopt otherwise.
std::optional<QParams> requantized(const Model& m, const GraphIndex& idx, const std::string& value) {
  const Node* q = idx.sole_reader(m.graph, value, "QuantizeLinear");
  if (!q || q->inputs[0] != value || q->attribute("output_dtype")) return std::nullopt;
  auto p = qparams(m, *q, DataType::Uint8);  // no zero point: uint8
  if (!p || !per_tensor(*p)) return std::nullopt;
  return p;
}

bool same_bits(const Tensor* a, const Tensor* b) {
  if (!a || !b) return a == b;
  return a->dtype() == b->dtype() && a->element_count() == b->element_count() &&
         std::memcmp(a->raw(), b->raw(), a->byte_size()) == 0;
}

// Two parameter sets quantize alike: the same scale and zero point values.
bool same_quantization(const QParams& a, const QParams& b) {
  if (a.type != b.type || !same_bits(a.s, b.s)) return false;
  const bool az = !a.z || std::all_of(a.z->raw(), a.z->raw() + a.z->byte_size(), [](std::byte v) { return v == std::byte{0}; });
  const bool bz = !b.z || std::all_of(b.z->raw(), b.z->raw() + b.z->byte_size(), [](std::byte v) { return v == std::byte{0}; });
  if (!a.z || !b.z) return az && bz;
  return same_bits(a.z, b.z);
}

// The int32 bias a fused operator adds to its sums: QLinearConv's B and
// QGemm's C are quantized with scale x_scale * w_scale (per output channel
// where w is) and zero point 0, which is what quantizers write. A
// DequantizeLinear of a constant int32 bias with that scale passes its
// values as they are (`dq`, `values` empty). With another scale (exporters
// share one bias tensor between convolutions with different weight scales:
// TorchScript's constant deduplication, behind Identity nodes) the values
// are requantized, round(b * b_scale / (x_scale * w_scale)), when that moves
// no output by more than 1/64 of its step (half a sum unit times the
// multiplier x_scale * w_scale / y_scale; `y_scale` 0: a float output,
// which takes the exact case alone).
struct Bias {
  const Node* dq = nullptr;
  std::optional<Tensor> values;  // requantized; else dq's input as it is
};

std::optional<Bias> int32_bias(const Model& m, const GraphIndex& idx, const std::string& bias, const QParams& x,
                               const QParams& w, int64_t channels, float y_scale) {
  const Node* dq = idx.producer_of(m.graph, bias);
  if (!dq || !is_op(*dq, "DequantizeLinear") || dq->inputs.size() < 2 || int_attr(*dq, "block_size", 0) != 0)
    return std::nullopt;
  const Tensor* b = constant_tensor(m, dq->inputs[0]);
  const Tensor* s = constant_tensor(m, dq->inputs[1]);
  if (!b || !s || b->dtype() != DataType::Int32 || b->rank() != 1 || b->shape()[0] != channels) return std::nullopt;
  if (s->dtype() != DataType::Float || s->rank() > 1 || (s->element_count() != 1 && static_cast<int64_t>(s->element_count()) != channels))
    return std::nullopt;
  const int64_t axis = int_attr(*dq, "axis", 1);
  if (s->element_count() != 1 && axis != 0 && axis != -1) return std::nullopt;  // a 1-D bias has one axis
  if (dq->inputs.size() > 2 && !dq->inputs[2].empty()) {
    const Tensor* z = constant_tensor(m, dq->inputs[2]);
    if (!z || z->dtype() != DataType::Int32) return std::nullopt;
    for (uint64_t i = 0; i < z->element_count(); ++i)
      if (z->data<int32_t>()[i] != 0) return std::nullopt;
  }
  const float xs = x.s->data<float>()[0];
  bool same = true;
  for (int64_t c = 0; c < channels && same; ++c) {
    const float ws = w.s->data<float>()[per_tensor(w) ? 0 : c];
    same = s->data<float>()[s->element_count() == 1 ? 0 : c] == xs * ws;
  }
  if (same) return Bias{dq, std::nullopt};
  if (!(y_scale > 0)) return std::nullopt;
  Tensor q = Tensor::zeros(DataType::Int32, {channels});
  for (int64_t c = 0; c < channels; ++c) {
    const double unit = static_cast<double>(xs * w.s->data<float>()[per_tensor(w) ? 0 : c]);  // one sum unit
    if (!(unit > 0) || !std::isfinite(unit) || 0.5 * unit / y_scale > 1.0 / 64) return std::nullopt;
    const double v = std::nearbyint(static_cast<double>(b->data<int32_t>()[c]) *
                                    static_cast<double>(s->data<float>()[s->element_count() == 1 ? 0 : c]) / unit);
    if (!(std::abs(v) <= 2147483647.0)) return std::nullopt;
    q.mutable_data<int32_t>()[c] = static_cast<int32_t>(v);
  }
  return Bias{dq, std::move(q)};
}

class Fuser {
 public:
  Fuser(Model& m, PassContext& ctx) : m_(m), g_(m.graph), ctx_(ctx), idx_(g_), remove_(g_.nodes.size(), false), fresh_(g_) {}

  size_t run() {
    const size_t n = g_.nodes.size();
    for (size_t i = 0; i < n; ++i) {
      if (remove_[i]) continue;
      const Node& op = g_.nodes[i];
      if (!is_default_domain(op.domain) || op.outputs.size() != 1 || op.outputs[0].empty()) continue;
      if (op.op_type == "Conv") conv(op);
      else if (op.op_type == "MatMul") matmul(op);
      else if (op.op_type == "Gemm") gemm(op);
      else if (op.op_type == "Add" || op.op_type == "Mul") binary(op);
      else if (op.op_type == "Concat") concat(op);
      else if (passes_bytes(op)) data_movement(op);
    }
    if (fused_) erase_nodes(g_, remove_);
    return fused_;
  }

  bool uses_contrib() const { return contrib_; }

 private:
  // The zero point input of a fused node: the parameter's, or a new 0 of its type.
  std::string zero_point(const QParams& p) {
    if (!p.zero_point.empty()) return p.zero_point;
    const std::string name = fresh_(p.node->outputs[0] + "_zero_point");
    g_.initializers.push_back({name, Tensor::zeros(p.type, {}), {}});
    return name;
  }

  // The op, its Q and each DequantizeLinear read by nothing else (null: none) become `fused`.
  void replace(const Node& op, const QParams* q, const std::vector<const Node*>& dqs, Node fused) {
    std::vector<const Node*> chain;
    for (const Node* d : dqs) {
      if (!d) continue;
      const std::string& v = d->outputs[0];
      if (idx_.reader_count(v) == 1 && !idx_.graph_outputs.count(v) && !idx_.subgraph_reads.count(v)) chain.push_back(d);
    }
    std::sort(chain.begin(), chain.end());
    chain.erase(std::unique(chain.begin(), chain.end()), chain.end());
    chain.push_back(&op);
    if (q) chain.push_back(q->node);
    fused.name = chain.back()->name.empty() ? fresh_(chain.back()->outputs[0] + "_qdq") : chain.back()->name;
    fused.outputs = {chain.back()->outputs[0]};
    if (replace_chain(ctx_, g_, remove_, chain, std::move(fused))) ++fused_;
  }

  // The int32 bias input of a fused `op`: the DequantizeLinear's values, or
  // the requantized ones as a new initializer.
  std::string bias_input(Bias& b, const Node& op) {
    if (!b.values) return b.dq->inputs[0];
    const std::string name = fresh_(op.outputs[0] + "_bias_int32");
    g_.initializers.push_back({name, std::move(*b.values), {}});
    return name;
  }

  static void copy_attrs(const Node& from, Node& to, std::initializer_list<const char*> names) {
    for (const char* a : names)
      if (const Attribute* at = from.attribute(a)) to.attributes.push_back(*at);
  }

  void conv(const Node& op) {
    if (op.inputs.size() < 2 || m_.opset_version("") < 10) return;
    auto x = dequantized(m_, idx_, op.inputs[0]);
    auto w = dequantized(m_, idx_, op.inputs[1]);
    auto y = requantized(m_, idx_, op.outputs[0]);
    if (!x || !w || !y || !per_tensor(*x)) return;
    const Tensor* wt = constant_tensor(m_, w->node->inputs[0]);
    if (!wt || wt->rank() < 3 || !eight_bit(wt->dtype())) return;
    const int64_t M = wt->shape()[0];
    if (!per_tensor(*w) && (static_cast<int64_t>(w->s->element_count()) != M || (w->axis != 0 && w->axis != -wt->rank())))
      return;  // per output channel only
    std::optional<Bias> bias;
    if (op.inputs.size() > 2 && !op.inputs[2].empty() &&
        !(bias = int32_bias(m_, idx_, op.inputs[2], *x, *w, M, y->s->data<float>()[0])))
      return;
    Node f;
    f.op_type = "QLinearConv";
    f.inputs = {x->node->inputs[0], x->scale, zero_point(*x), w->node->inputs[0], w->scale, zero_point(*w), y->scale, zero_point(*y)};
    if (bias) f.inputs.push_back(bias_input(*bias, op));
    copy_attrs(op, f, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    replace(op, &*y, {x->node, w->node, bias ? bias->dq : nullptr}, std::move(f));
  }

  void matmul(const Node& op) {
    if (op.inputs.size() != 2 || m_.opset_version("") < 10) return;
    auto a = dequantized(m_, idx_, op.inputs[0]);
    auto b = dequantized(m_, idx_, op.inputs[1]);
    auto y = requantized(m_, idx_, op.outputs[0]);
    if (!a || !b || !y || !per_tensor(*a) || !per_tensor(*b)) return;
    Node f;
    f.op_type = "QLinearMatMul";
    f.inputs = {a->node->inputs[0], a->scale, zero_point(*a), b->node->inputs[0], b->scale, zero_point(*b), y->scale, zero_point(*y)};
    replace(op, &*y, {a->node, b->node}, std::move(f));
  }

  void gemm(const Node& op) {
    if (op.inputs.size() < 2 || op.inputs.size() > 3 || m_.opset_version("") < 11) return;
    if (float_attr(op, "alpha", 1.0f) != 1.0f || float_attr(op, "beta", 1.0f) != 1.0f) return;
    auto a = dequantized(m_, idx_, op.inputs[0]);
    auto b = dequantized(m_, idx_, op.inputs[1]);
    if (!a || !b || !per_tensor(*a)) return;
    const Tensor* bt = constant_tensor(m_, b->node->inputs[0]);
    if (!bt || bt->rank() != 2) return;
    if (a->type == DataType::Int8 && b->type == DataType::Uint8) return;  // QGemm takes u8 x u8/s8 and s8 x s8
    const bool trans_b = int_attr(op, "transB", 0) != 0;
    const int64_t N = bt->shape()[trans_b ? 0 : 1];
    if (!per_tensor(*b)) {
      const int64_t axis = b->axis < 0 ? b->axis + 2 : b->axis;
      if (static_cast<int64_t>(b->s->element_count()) != N || axis != (trans_b ? 0 : 1)) return;  // one per column of Y
    }
    auto y = requantized(m_, idx_, op.outputs[0]);
    if (y && y->type != a->type) y.reset();  // QGemm's Y is quantized like A: keep the float Y and its Q
    std::optional<Bias> c;
    if (op.inputs.size() > 2 && !op.inputs[2].empty() &&
        !(c = int32_bias(m_, idx_, op.inputs[2], *a, *b, N, y ? y->s->data<float>()[0] : 0.0f)))
      return;
    Node f;
    f.domain = "com.microsoft";
    f.op_type = "QGemm";
    f.inputs = {a->node->inputs[0], a->scale, zero_point(*a), b->node->inputs[0], b->scale, zero_point(*b), c ? bias_input(*c, op) : ""};
    if (y) {
      f.inputs.push_back(y->scale);
      f.inputs.push_back(zero_point(*y));
    } else {
      while (!f.inputs.empty() && f.inputs.back().empty()) f.inputs.pop_back();
    }
    copy_attrs(op, f, {"transA", "transB"});
    contrib_ = true;
    replace(op, y ? &*y : nullptr, {a->node, b->node, c ? c->dq : nullptr}, std::move(f));
  }

  void binary(const Node& op) {
    if (op.inputs.size() != 2 || m_.opset_version("") < 7) return;
    auto a = dequantized(m_, idx_, op.inputs[0]);
    auto b = dequantized(m_, idx_, op.inputs[1]);
    auto y = requantized(m_, idx_, op.outputs[0]);
    if (!a || !b || !y || !per_tensor(*a) || !per_tensor(*b) || a->type != b->type || a->type != y->type) return;
    Node f;
    f.domain = "com.microsoft";
    f.op_type = op.op_type == "Add" ? "QLinearAdd" : "QLinearMul";
    f.inputs = {a->node->inputs[0], a->scale, zero_point(*a), b->node->inputs[0], b->scale, zero_point(*b), y->scale, zero_point(*y)};
    contrib_ = true;
    replace(op, &*y, {a->node, b->node}, std::move(f));
  }

  // Each input requantized to Y's parameters as DequantizeLinear then
  // QuantizeLinear compute it: QLinearConcat's definition, the same bytes.
  void concat(const Node& op) {
    if (op.inputs.empty() || !op.attribute("axis")) return;
    auto y = requantized(m_, idx_, op.outputs[0]);
    if (!y) return;
    std::vector<QParams> xs;
    for (const std::string& in : op.inputs) {
      auto x = in.empty() ? std::nullopt : dequantized(m_, idx_, in);
      if (!x || !per_tensor(*x) || x->type != y->type) return;
      xs.push_back(*x);
    }
    Node f;
    f.domain = "com.microsoft";
    f.op_type = "QLinearConcat";
    f.inputs = {y->scale, zero_point(*y)};
    for (const QParams& x : xs) {
      f.inputs.push_back(x.node->inputs[0]);
      f.inputs.push_back(x.scale);
      f.inputs.push_back(zero_point(x));
    }
    copy_attrs(op, f, {"axis"});
    contrib_ = true;
    std::vector<const Node*> dqs;
    for (const QParams& x : xs) dqs.push_back(x.node);
    replace(op, &*y, dqs, std::move(f));
  }

  // Ops that move or select values without computing new ones: on the bytes
  // they give what dequantizing, the op and quantizing back give.
  bool passes_bytes(const Node& op) const {
    if (op.op_type == "MaxPool") return m_.opset_version("") >= 12 && int_attr(op, "storage_order", 0) == 0;
    for (const char* o : {"Reshape", "Flatten", "Transpose", "Squeeze", "Unsqueeze", "Slice"})
      if (op.op_type == o) return true;
    return false;
  }

  void data_movement(const Node& op) {
    if (op.inputs.empty()) return;
    auto x = dequantized(m_, idx_, op.inputs[0]);
    auto y = requantized(m_, idx_, op.outputs[0]);
    if (!x || !y || !per_tensor(*x) || !same_quantization(*x, *y)) return;
    Node f = op;
    f.metadata.clear();
    f.inputs[0] = x->node->inputs[0];
    replace(op, &*y, {x->node}, std::move(f));
  }

  Model& m_;
  Graph& g_;
  PassContext& ctx_;
  const GraphIndex idx_;
  std::vector<bool> remove_;
  FreshNames fresh_;
  size_t fused_ = 0;
  bool contrib_ = false;
};

}  // namespace

bool fuse_qdq(Model& model, PassContext& ctx) {
  Fuser f(model, ctx);
  const size_t fused = f.run();
  if (!fused) return false;
  if (f.uses_contrib() && model.opset_version("com.microsoft") == 0) model.opset_imports.push_back({"com.microsoft", 1});
  log_pass(ctx, model, "fuse-qdq: " + std::to_string(fused) + " dequantize-op-quantize groups as 8-bit operators");
  return true;
}

}  // namespace onnxscope::cpu
