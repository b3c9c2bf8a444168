// Plain kernels of the fused operators (fused_ops.h), so a fused graph always
// runs: the base operator is the reference kernel itself (Conv-22, Gemm-13,
// MatMul-13 and Add-14 for the bias), called through a forwarding context
// that shows it the node without the activation attributes; the activation
// is then the reference kernel of that activation (Clip: its clamp here).
// The results are therefore exactly those of the unfused reference graph.
// FusedElementwise likewise runs each op of its chain by its reference kernel,
// and FusedAttention each step of the graph it replaces.
#include <limits>

#include "cpu/fused_ops.h"
#include "cpu/kernels/kernels.h"
#include "cpu/nchwc.h"
#include "cpu/nhwc.h"
#include "cpu/optimizer.h"
#include "onnxscope/reference.h"
#include "reference/kernel_util.h"

namespace onnxscope::cpu {
namespace {

// Shows a kernel another node (op, attributes, inputs) and collects its
// outputs; everything else is the outer context's.
class Forward final : public KernelContext {
 public:
  Forward(KernelContext& outer, Node node, int64_t version, std::vector<const Value*> inputs, size_t outputs)
      : outer_(outer), node_(std::move(node)), version_(version), inputs_(std::move(inputs)), outputs_(outputs) {}

  const Node& node() const override { return node_; }
  int64_t opset_version() const override { return version_; }
  size_t input_count() const override { return inputs_.size(); }
  const Value* input_value(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t output_count() const override { return outputs_.size(); }
  bool output_wanted(size_t i) const override { return i < outputs_.size(); }
  Value& output(size_t i) override {
    if (i >= outputs_.size()) fail("kernel wrote output " + std::to_string(i) + " of " + std::to_string(outputs_.size()));
    return outputs_[i];
  }
  std::vector<Value> run_graph(const Graph& g, std::vector<Value> inputs) override {
    return outer_.run_graph(g, std::move(inputs));
  }
  uint64_t seed() const override { return outer_.seed(); }
  uint64_t max_tensor_bytes() const override { return outer_.max_tensor_bytes(); }
  Location location() const override { return outer_.location(); }
  const Graph& graph() const override { return outer_.graph(); }

  Value take(size_t i) { return std::move(outputs_[i]); }

 private:
  KernelContext& outer_;
  Node node_;
  int64_t version_;
  std::vector<const Value*> inputs_;
  std::vector<Value> outputs_;
};

// Runs the reference kernel of (op, version) on `f`; fails if none accepts.
void run_reference(KernelContext& ctx, Forward& f, const char* op, int64_t version) {
  for (const KernelDef* def : reference_kernels().candidates("", op, version))
    if (!def->accepts || def->accepts(f)) {
      def->fn(f);
      return;
    }
  ctx.fail(std::string("no reference kernel for ") + op + " at opset " + std::to_string(version));
}

// A default-domain node `op` carrying the fused node's attributes except the activation's.
Node base_node(const KernelContext& ctx, const char* op) {
  Node n;
  n.name = ctx.node().name;
  n.op_type = op;
  for (const auto& a : ctx.node().attributes)
    if (a.name != "activation" && a.name != "activation_params") n.attributes.push_back(a);
  return n;
}

Attribute float_attr(const char* name, float v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::Float;
  a.f = v;
  return a;
}

std::vector<const Value*> inputs_of(const KernelContext& ctx) {
  std::vector<const Value*> in;
  for (size_t i = 0; i < ctx.input_count(); ++i) in.push_back(ctx.input_value(i));
  return in;
}

// The activation `act` (fused_ops.h's names) of `v`, by the reference kernels.
Value activated(KernelContext& ctx, Value v, const std::string& act, const std::vector<float>& params) {
  if (act.empty()) return v;
  int expected = -1;
  for (const auto& a : kFusableActivations)
    if (act == a.op) expected = a.params;
  if (expected < 0) ctx.fail("unknown activation '" + act + "'");
  if (static_cast<int>(params.size()) != expected)
    ctx.fail("activation " + act + " takes " + std::to_string(expected) + " activation_params, got " +
             std::to_string(params.size()));
  if (!v.is_tensor()) ctx.fail("base operator produced no tensor");
  if (act == "Swish") {
    // x * sigmoid(alpha * x), in the element type's compute type like Sigmoid.
    const Tensor& x = v.tensor();
    Tensor y = Tensor::zeros(x.dtype(), x.shape());
    ref::dispatch<ref::kFloats>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      using C = ref::compute_t<S>;
      const C alpha = static_cast<C>(params[0]);
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        const C e = ref::get<S>(x, i), t = alpha * e;
        const C s = t >= 0 ? C(1) / (C(1) + std::exp(-t)) : std::exp(t) / (C(1) + std::exp(t));
        ref::put<S>(y, i, e * s);
      }
    });
    return Value(std::move(y));
  }
  if (act == "Clip") {
    // Clip's bounds come as floats here; compare in the element type like Clip does.
    const Tensor& x = v.tensor();
    Tensor y = Tensor::zeros(x.dtype(), x.shape());
    ref::dispatch<ref::kFloats>(ctx, x.dtype(), [&](auto tag) {
      using S = typename decltype(tag)::type;
      using C = ref::compute_t<S>;
      const C lo = static_cast<C>(params[0]), hi = static_cast<C>(params[1]);
      for (uint64_t i = 0; i < x.element_count(); ++i) {
        C e = ref::get<S>(x, i);
        if (e < lo) e = lo;
        if (e > hi) e = hi;
        ref::put<S>(y, i, e);
      }
    });
    return Value(std::move(y));
  }
  Node n;
  n.name = ctx.node().name;
  n.op_type = act;
  if (act == "LeakyRelu") n.attributes.push_back(float_attr("alpha", params[0]));
  if (act == "HardSigmoid") {
    n.attributes.push_back(float_attr("alpha", params[0]));
    n.attributes.push_back(float_attr("beta", params[1]));
  }
  if (act == "Gelu") {
    Attribute a;
    a.name = "approximate";
    a.type = AttrType::String;
    a.s = params[0] != 0.f ? "tanh" : "none";
    n.attributes.push_back(std::move(a));
  }
  const Value* in[] = {&v};
  Forward f(ctx, std::move(n), 22, {in[0]}, 1);
  run_reference(ctx, f, act.c_str(), 22);
  return f.take(0);
}

// Applies the node's activation to `v` and stores the result as output 0.
void activate_and_store(KernelContext& ctx, Value v) {
  ctx.set_output(0, activated(ctx, std::move(v), ctx.attr_string("activation"), ctx.attr_floats("activation_params")));
}

// With a fourth input Z: activation(Add(Conv(X, W, B), Z)).
void FusedConv(KernelContext& ctx) {
  std::vector<const Value*> in = inputs_of(ctx);
  const Value* z = in.size() > 3 ? in[3] : nullptr;
  if (in.size() > 4 || (in.size() == 4 && !z)) ctx.fail("FusedConv takes X, W, an optional B and an optional Z");
  in.resize(std::min<size_t>(in.size(), 3));
  if (in.size() == 3 && !in[2]) in.resize(2);
  Forward conv(ctx, base_node(ctx, "Conv"), 22, in, 1);
  run_reference(ctx, conv, "Conv", 22);
  Value y = conv.take(0);
  if (z) {
    Forward add(ctx, base_node(ctx, "Add"), 14, {&y, z}, 1);
    run_reference(ctx, add, "Add", 14);
    y = add.take(0);
  }
  activate_and_store(ctx, std::move(y));
}

void FusedGemm(KernelContext& ctx) {
  Forward gemm(ctx, base_node(ctx, "Gemm"), 13, inputs_of(ctx), 1);
  run_reference(ctx, gemm, "Gemm", 13);
  activate_and_store(ctx, gemm.take(0));
}

void FusedMatMul(KernelContext& ctx) {
  if (ctx.input_count() < 2 || ctx.input_count() > 3) ctx.fail("FusedMatMul takes A, B and an optional Bias");
  std::vector<const Value*> ab = {ctx.input_value(0), ctx.input_value(1)};
  Forward mm(ctx, base_node(ctx, "MatMul"), 13, ab, 1);
  run_reference(ctx, mm, "MatMul", 13);
  Value product = mm.take(0);
  if (const Tensor* bias = ctx.optional_input(2)) {
    if (bias->rank() != 1) ctx.fail("Bias must be 1-D, got " + shape_to_string(bias->shape()));
    const Value* in[] = {&product, ctx.input_value(2)};
    Forward add(ctx, base_node(ctx, "Add"), 14, {in[0], in[1]}, 1);
    run_reference(ctx, add, "Add", 14);
    product = add.take(0);
  }
  activate_and_store(ctx, std::move(product));
}

// The blocked layout (cpu/nchwc.h) in plain loops: unblock, the FusedConv
// above, block again.
void ToNchwcRef(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t block = ctx.attr_int("block", 0);
  if (x.dtype() != DataType::Float || x.rank() < 3 || (block != 8 && block != 16))
    ctx.fail("ToNchwc takes a float tensor of rank >= 3 and block 8 or 16");
  ctx.set_output(0, Value(to_nchwc(x, block)));
}

// A blocked tensor must hold `channels` in blocks of `block` (the last dim):
// the passes planned from declared shapes, and a model whose declarations lie
// reaches here with another tensor (from_nchwc would read past it).
void require_blocked(const KernelContext& ctx, const Tensor& x, int64_t channels, int64_t block, const char* what) {
  if (x.dtype() != DataType::Float || x.rank() < 4 || x.shape().back() != block || !blocks_hold(channels, x.shape()[1], block))
    ctx.fail(std::string(what) + " " + shape_to_string(x.shape()) + " does not hold " + std::to_string(channels) +
             " float channels in blocks of " + std::to_string(block));
}

void FromNchwcRef(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t channels = ctx.attr_int("channels", 0);
  require_blocked(ctx, x, channels, x.rank() ? x.shape().back() : 0, "FromNchwc: input");
  ctx.set_output(0, Value(from_nchwc(x, channels)));
}

void NchwcConvRef(KernelContext& ctx) {
  const Tensor& w = ctx.input(1);
  const int64_t block = ctx.attr_int("block", 0);
  if (w.rank() < 3 || (block != 8 && block != 16)) ctx.fail("NchwcConv needs weights of rank >= 3 and block 8 or 16");
  const bool plain_input = ctx.attr_int("plain_input", 0) == 1;
  int64_t in_channels = 0;
  if (__builtin_mul_overflow(w.shape()[1], ctx.attr_int("group", 1), &in_channels)) ctx.fail("NchwcConv: group overflows");
  if (!plain_input) require_blocked(ctx, ctx.input(0), in_channels, block, "NchwcConv: input");
  Value plain = plain_input ? *ctx.input_value(0) : Value(from_nchwc(ctx.input(0), in_channels));
  std::vector<const Value*> in = inputs_of(ctx);
  in[0] = &plain;
  const Value* residual = in.size() > 3 ? in[3] : nullptr;
  in.resize(std::min<size_t>(in.size(), 3));
  if (in.size() == 3 && !in[2]) in.resize(2);
  Node conv = base_node(ctx, "Conv");
  std::erase_if(conv.attributes, [](const Attribute& a) { return a.name == "block" || a.name == "plain_input"; });
  Forward f(ctx, std::move(conv), 22, in, 1);
  run_reference(ctx, f, "Conv", 22);
  Value y = f.take(0);
  if (residual) {  // the sum input: Y = activation(Conv(X) + R)
    if (!residual->is_tensor()) ctx.fail("NchwcConv: the sum input is not a tensor");
    require_blocked(ctx, residual->tensor(), w.shape()[0], block, "NchwcConv: the sum input");
    const Value r(from_nchwc(residual->tensor(), w.shape()[0]));
    Forward add(ctx, base_node(ctx, "Add"), 14, {&y, &r}, 1);
    run_reference(ctx, add, "Add", 14);
    y = add.take(0);
  }
  activate_and_store(ctx, std::move(y));
  ctx.set_output(0, Value(to_nchwc(ctx.output(0).tensor(), block)));
}

void NchwcPoolRef(KernelContext& ctx) {
  const std::string op = ctx.attr_string("op", "");
  const int64_t block = ctx.attr_int("block", 0), channels = ctx.attr_int("channels", 0);
  const Tensor& xb = ctx.input(0);
  if (op != "MaxPool" && op != "AveragePool" && op != "GlobalMaxPool" && op != "GlobalAveragePool")
    ctx.fail("NchwcPool: unknown pooling '" + op + "'");
  if ((block != 8 && block != 16) || xb.rank() < 4 || xb.shape().back() != block ||
      !blocks_hold(channels, xb.shape()[1], block))
    ctx.fail("NchwcPool: input " + shape_to_string(xb.shape()) + " does not hold " + std::to_string(channels) +
             " channels in blocks of " + std::to_string(block));
  const Value plain(from_nchwc(xb, channels));
  Node pool = base_node(ctx, op.c_str());
  std::erase_if(pool.attributes, [](const Attribute& a) { return a.name == "op" || a.name == "block" || a.name == "channels"; });
  Forward f(ctx, std::move(pool), 22, {&plain}, 1);
  run_reference(ctx, f, op.c_str(), 22);
  ctx.set_output(0, Value(to_nchwc(f.take(0).tensor(), block)));
}

// --- the channels-last 8-bit layout (nhwc.h) ---------------------------------------

// X of rank 3 to 5 (the pass's ranks) and a fixed-size element type.
const Tensor& channels_tensor(const KernelContext& ctx, size_t i, const char* what) {
  const Tensor& x = ctx.input(i);
  if (x.is_string() || x.rank() < 3 || x.rank() > 5)
    ctx.fail(std::string(what) + " takes a numeric tensor of rank 3 to 5, not " + shape_to_string(x.shape()));
  return x;
}

void ToNhwcRef(KernelContext& ctx) {
  const Tensor& x = channels_tensor(ctx, 0, "ToNhwc");
  ctx.set_output(0, Value(reorder_channels(x, x.shape(), true)));
}

void FromNhwcRef(KernelContext& ctx) {
  const Tensor& x = channels_tensor(ctx, 0, "FromNhwc");
  ctx.set_output(0, Value(reorder_channels(x, channels_first_shape(x.shape()), false)));
}

// The plain operator (QLinearConv-10, MaxPool-22) on X made channels first,
// its result made channels last again.
void channels_last_reference(KernelContext& ctx, const char* op, int64_t version) {
  const Tensor& x = channels_tensor(ctx, 0, (std::string("Nhwc") + op).c_str());
  const Value plain(reorder_channels(x, channels_first_shape(x.shape()), false));
  std::vector<const Value*> in = inputs_of(ctx);
  in[0] = &plain;
  Forward f(ctx, base_node(ctx, op), version, in, 1);
  run_reference(ctx, f, op, version);
  const Value y = f.take(0);
  ctx.set_output(0, Value(reorder_channels(y.tensor(), y.tensor().shape(), true)));
}

void NhwcQLinearConvRef(KernelContext& ctx) { channels_last_reference(ctx, "QLinearConv", 10); }

// QuantizedLookup: Y[i] = table[X[i] as a byte]; with axis, table[c][X[i]]
// for c the index of element i along that axis.
void QuantizedLookupRef(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& table = ctx.input(1);
  auto int8 = [](DataType d) { return d == DataType::Uint8 || d == DataType::Int8; };
  const bool per_channel = ctx.has_attr("axis");
  const int64_t axis = per_channel ? ctx.attr_int("axis", 1) : 0;
  if (per_channel && (axis < 0 || axis >= x.rank()))
    ctx.fail("QuantizedLookup: axis " + std::to_string(axis) + " is out of range for X of rank " + std::to_string(x.rank()));
  const int64_t C = per_channel ? x.shape()[static_cast<size_t>(axis)] : 1;
  const Shape want = per_channel ? Shape{C, 256} : Shape{256};
  if (!int8(x.dtype()) || !int8(table.dtype()) || table.shape() != want)
    ctx.fail("QuantizedLookup takes an 8-bit X and a table of " + shape_to_string(want) + " 8-bit values, got " +
             std::string(dtype_name(x.dtype())) + " and " + std::string(dtype_name(table.dtype())) + shape_to_string(table.shape()));
  uint64_t inner = 1;
  for (int64_t d = axis + 1; per_channel && d < x.rank(); ++d) inner *= static_cast<uint64_t>(x.shape()[static_cast<size_t>(d)]);
  Tensor& y = ctx.allocate_output(0, table.dtype(), x.shape());
  const auto* in = reinterpret_cast<const uint8_t*>(x.raw());
  const auto* t = reinterpret_cast<const uint8_t*>(table.raw());
  auto* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  for (uint64_t i = 0; i < x.element_count(); ++i) {
    const uint64_t c = per_channel ? (i / inner) % static_cast<uint64_t>(C) : 0;
    out[i] = t[c * 256 + in[i]];
  }
}
void NhwcMaxPoolRef(KernelContext& ctx) { channels_last_reference(ctx, "MaxPool", 22); }

// NchwcSqueezeExcite: unblock, the graph it replaces step by step, block again.
void NchwcSqueezeExciteRef(KernelContext& ctx) {
  const int64_t block = ctx.attr_int("block", 0), channels = ctx.attr_int("channels", 0);
  if (ctx.input_count() != 5) ctx.fail("NchwcSqueezeExcite takes X, W1, B1, W2 and B2 (the biases may be absent)");
  if (block != 8 && block != 16) ctx.fail("NchwcSqueezeExcite needs block 8 or 16");
  const Tensor& xb = ctx.input(0);
  require_blocked(ctx, xb, channels, block, "NchwcSqueezeExcite: input");
  if (xb.rank() != 5) ctx.fail("NchwcSqueezeExcite: input " + shape_to_string(xb.shape()) + " is not a blocked 2-D image");
  const Value plain(from_nchwc(xb, channels));
  auto step = [&](const char* op, int64_t version, std::vector<const Value*> in) {
    Node n;
    n.name = ctx.node().name;
    n.op_type = op;
    Forward f(ctx, std::move(n), version, std::move(in), 1);
    run_reference(ctx, f, op, version);
    return f.take(0);
  };
  auto conv = [&](const Value& v, size_t w, const char* act) {
    std::vector<const Value*> in = {&v, ctx.input_value(w)};
    if (ctx.input_value(w + 1)) in.push_back(ctx.input_value(w + 1));
    return activated(ctx, step("Conv", 22, in), ctx.attr_string(act), ctx.attr_floats(std::string(act) + "_params"));
  };
  const Value pooled = step("GlobalAveragePool", 22, {&plain});
  const Value hidden = conv(pooled, 1, "activation");
  const Value gate = conv(hidden, 3, "gate");
  const Value y = step("Mul", 14, {&plain, &gate});
  ctx.set_output(0, Value(to_nchwc(y.tensor(), block)));
}

// onnxscope.cpu::Gelu (fuse-gelu below opset 20) is exactly ai.onnx Gelu-20.
void CpuGelu(KernelContext& ctx) {
  Forward gelu(ctx, base_node(ctx, "Gelu"), 20, inputs_of(ctx), 1);
  run_reference(ctx, gelu, "Gelu", 20);
  ctx.set_output(0, gelu.take(0));
}

// onnxscope.cpu::LayerNormalization (fuse-layernorm below opset 17) is exactly ai.onnx LayerNormalization-17.
void CpuLayerNorm(KernelContext& ctx) {
  Forward ln(ctx, base_node(ctx, "LayerNormalization"), 17, inputs_of(ctx), 1);
  run_reference(ctx, ln, "LayerNormalization", 17);
  ctx.set_output(0, ln.take(0));
}

// onnxscope.cpu::RMSNormalization (fuse-rmsnorm below opset 23) is exactly ai.onnx RMSNormalization-23.
void CpuRMSNorm(KernelContext& ctx) {
  Forward rms(ctx, base_node(ctx, "RMSNormalization"), 23, inputs_of(ctx), 1);
  run_reference(ctx, rms, "RMSNormalization", 23);
  ctx.set_output(0, rms.take(0));
}

// RotaryHalf: the graph it replaces, node by node, each by its reference kernel.
void RotaryHalf(KernelContext& ctx) {
  if (ctx.input_count() != 3) ctx.fail("RotaryHalf takes X, Cos and Sin");
  const int64_t h = ctx.attr_int("split", 0);
  if (h <= 0) ctx.fail("RotaryHalf: split must be positive, got " + std::to_string(h));
  auto one = [](int64_t v) {
    Tensor t = Tensor::zeros(DataType::Int64, {1});
    t.mutable_data<int64_t>()[0] = v;
    return Value(std::move(t));
  };
  auto node = [&](const char* op) {
    Node n;
    n.name = ctx.node().name;
    n.op_type = op;
    return n;
  };
  auto run = [&](Node n, int64_t version, std::vector<const Value*> in) {
    const std::string op = n.op_type;
    Forward f(ctx, std::move(n), version, std::move(in), 1);
    run_reference(ctx, f, op.c_str(), version);
    return f.take(0);
  };
  const Value zero = one(0), split = one(h), end = one(std::numeric_limits<int64_t>::max()), last = one(-1);
  const Value* x = ctx.input_value(0);
  const Value first = run(node("Slice"), 13, {x, &zero, &split, &last});
  const Value second = run(node("Slice"), 13, {x, &split, &end, &last});
  const Value neg = run(node("Neg"), 13, {&second});
  Node cat = node("Concat");
  Attribute axis;
  axis.name = "axis";
  axis.type = AttrType::Int;
  axis.i = -1;
  cat.attributes.push_back(std::move(axis));
  const Value rotated = run(std::move(cat), 13, {&neg, &first});
  const Value a = run(node("Mul"), 14, {x, ctx.input_value(1)});
  const Value b = run(node("Mul"), 14, {&rotated, ctx.input_value(2)});
  ctx.set_output(0, run(node("Add"), 14, {&a, &b}));
}

// FusedAddLayerNorm: Add(A, B) by its reference kernel, then
// LayerNormalization-17 on the sum with the node's attributes.
void FusedAddLayerNorm(KernelContext& ctx) {
  if (ctx.input_count() < 3 || ctx.input_count() > 4) ctx.fail("FusedAddLayerNorm takes A, B, Scale and an optional Bias");
  if (ctx.input(0).shape() != ctx.input(1).shape())  // the contract (no broadcasting), as the device checks it
    ctx.fail("A " + shape_to_string(ctx.input(0).shape()) + " and B " + shape_to_string(ctx.input(1).shape()) + " differ in shape");
  Node add_node;
  add_node.name = ctx.node().name;
  add_node.op_type = "Add";
  Forward add(ctx, std::move(add_node), 14, {ctx.input_value(0), ctx.input_value(1)}, 1);
  run_reference(ctx, add, "Add", 14);
  const Value sum = add.take(0);
  std::vector<const Value*> in = {&sum, ctx.input_value(2)};
  if (ctx.input_count() > 3) in.push_back(ctx.input_value(3));
  Forward ln(ctx, base_node(ctx, "LayerNormalization"), 17, std::move(in), 1);
  run_reference(ctx, ln, "LayerNormalization", 17);
  ctx.set_output(0, ln.take(0));
}

// FusedElementwise: each op of the chain by its reference kernel, on the
// values it read in the unfused graph.
void FusedElementwise(KernelContext& ctx) {
  const std::vector<std::string> ops = ctx.attr_strings("ops");
  const std::vector<int64_t> operands = ctx.attr_ints("operands");
  const std::vector<float> params = ctx.attr_floats("params");
  if (ops.empty() || ops.size() > static_cast<size_t>(kChainMaxOps) || operands.size() != 2 * ops.size() ||
      params.size() != 3 * ops.size())
    ctx.fail("FusedElementwise needs 1 to " + std::to_string(kChainMaxOps) + " ops with two operands and three params each");
  std::vector<Value> results;
  auto place = [&](int64_t k) -> const Value* {
    const auto inputs = static_cast<int64_t>(ctx.input_count());
    if (k >= 0 && k < inputs) return ctx.input_value(static_cast<size_t>(k));
    if (k >= inputs && k < inputs + static_cast<int64_t>(results.size())) return &results[static_cast<size_t>(k - inputs)];
    ctx.fail("operand " + std::to_string(k) + " names no input or earlier result");
  };
  for (size_t s = 0; s < ops.size(); ++s) {
    const ChainOp* op = chain_op(ops[s]);
    if (!op) ctx.fail("'" + ops[s] + "' cannot be chained");
    Node n;
    n.name = ctx.node().name;
    n.op_type = ops[s];
    if (ops[s] == "Gelu") {
      Attribute a;
      a.name = "approximate";
      a.type = AttrType::String;
      a.s = params[3 * s] != 0.f ? "tanh" : "none";
      n.attributes.push_back(std::move(a));
    }
    for (size_t k = 0; k < 3; ++k)
      if (op->attrs[k]) n.attributes.push_back(float_attr(op->attrs[k], params[3 * s + k]));
    std::vector<const Value*> in;
    for (int a = 0; a < op->arity; ++a) in.push_back(place(operands[2 * s + static_cast<size_t>(a)]));
    Forward f(ctx, std::move(n), 22, in, 1);
    run_reference(ctx, f, op->op, 22);
    results.push_back(f.take(0));
  }
  ctx.set_output(0, std::move(results.back()));
}

// FusedAttention: the unfused graph's steps (fused_ops.h), each by its
// reference kernel; shapes checked as the device checks them, so a shape
// the fusion did not promise fails on every engine alike.
void FusedAttention(KernelContext& ctx) {
  if (ctx.input_count() < 3 || ctx.input_count() > 4) ctx.fail("FusedAttention takes Q, K, V and an optional Mask");
  for (size_t i = 0; i < 3; ++i)
    if (ctx.input(i).dtype() != DataType::Float || ctx.input(i).rank() != 4) ctx.fail("Q, K and V must be 4-D float32");
  auto step = [&](const char* op, int64_t version, std::vector<const Value*> in, std::vector<Attribute> attrs = {}) {
    Node n;
    n.name = ctx.node().name;
    n.op_type = op;
    n.attributes = std::move(attrs);
    Forward f(ctx, std::move(n), version, std::move(in), 1);
    run_reference(ctx, f, op, version);
    return f.take(0);
  };
  // [B, S, H, D] <-> [B, H, S, D] (bshd_in, bshd_out): the Transposes fuse-attention-transposes took in.
  Attribute swap;
  swap.name = "perm";
  swap.type = AttrType::Ints;
  swap.ints = {0, 2, 1, 3};
  const int64_t bshd_in = ctx.attr_int("bshd_in", 0);  // bits: 1 Q, 2 K, 4 V
  const bool bshd_out = ctx.attr_int("bshd_out", 0) != 0;
  if (bshd_in < 0 || bshd_in > 7) ctx.fail("bshd_in " + std::to_string(bshd_in) + " is not a set of the bits 1, 2, 4");
  Value heads_outer[3];
  const Value* qkv[3];
  for (size_t i = 0; i < 3; ++i) {
    if (bshd_in & (int64_t{1} << i)) heads_outer[i] = step("Transpose", 21, {ctx.input_value(i)}, {swap});
    qkv[i] = (bshd_in & (int64_t{1} << i)) ? &heads_outer[i] : ctx.input_value(i);
  }
  const Tensor& q = qkv[0]->tensor();
  const Tensor& k = qkv[1]->tensor();
  const Tensor& v = qkv[2]->tensor();
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  // A fusion that took unknown dims on trust promises the unfused steps for
  // any shapes: they run below as the graph's nodes would (MatMul and Add
  // broadcasting); one whose shapes were known fails as the device does.
  const bool unchecked = ctx.attr_int("unchecked_shapes", 0) != 0;
  if (!unchecked &&
      (ks[0] != qs[0] || vs[0] != qs[0] || ks[1] != qs[1] || vs[1] != qs[1] || ks[3] != qs[3] || vs[2] != ks[2]))
    ctx.fail("Q " + shape_to_string(qs) + ", K " + shape_to_string(ks) + " and V " + shape_to_string(vs) +
             " are not [B, H, Sq, D], [B, H, T, D], [B, H, T, Dv]");
  const Tensor* mask = ctx.optional_input(3);
  if (mask && !unchecked) {
    const Shape scores = {qs[0], qs[1], qs[2], ks[2]};
    const Shape& ms = mask->shape();
    bool fits = mask->dtype() == DataType::Float && ms.size() <= 4;
    for (size_t i = 0; fits && i < ms.size(); ++i) {
      const int64_t d = ms[ms.size() - 1 - i];
      fits = d == 1 || d == scores[3 - i];
    }
    if (!fits) ctx.fail("the mask " + shape_to_string(ms) + " does not broadcast into the scores " + shape_to_string(scores));
  }
  auto scaled = [&](Value x, const char* attr) {
    const float c = ctx.attr_float(attr, 1.f);
    if (c == 1.f) return x;
    Tensor t = Tensor::zeros(DataType::Float, {});
    t.mutable_data<float>()[0] = c;
    const Value cv(std::move(t));
    return step("Mul", 14, {&x, &cv});
  };
  Attribute perm;
  perm.name = "perm";
  perm.type = AttrType::Ints;
  perm.ints = {0, 1, 3, 2};
  const Value qv = scaled(*qkv[0], "scale_q");
  const Value kt = scaled(step("Transpose", 21, {qkv[1]}, {perm}), "scale_k");
  Value s = scaled(step("MatMul", 13, {&qv, &kt}), "scale");
  if (mask) s = step("Add", 14, {&s, ctx.input_value(3)});
  Attribute axis;
  axis.name = "axis";
  axis.type = AttrType::Int;
  axis.i = -1;
  Value p = step("Softmax", 13, {&s}, {axis});
  if (ctx.attr_int("nan_to_zero", 0) != 0) {
    const Value nan = step("IsNaN", 20, {&p});
    const Value zero(Tensor::zeros(DataType::Float, {}));
    p = step("Where", 16, {&nan, &zero, &p});
  }
  Value y = step("MatMul", 13, {&p, qkv[2]});
  if (bshd_out) y = step("Transpose", 21, {&y}, {swap});
  ctx.set_output(0, std::move(y));
}

}  // namespace

void register_fused_reference_kernels(KernelRegistry& r) {
  r.add(KernelDef{kCpuDomain, kFusedConv, 1, INT_MAX, "fused-reference", FusedConv, nullptr});
  r.add(KernelDef{kCpuDomain, kFusedGemm, 1, INT_MAX, "fused-reference", FusedGemm, nullptr});
  r.add(KernelDef{kCpuDomain, kFusedMatMul, 1, INT_MAX, "fused-reference", FusedMatMul, nullptr});
  r.add(KernelDef{kCpuDomain, kGelu, 1, INT_MAX, "fused-reference", CpuGelu, nullptr});
  r.add(KernelDef{kCpuDomain, kLayerNorm, 1, INT_MAX, "fused-reference", CpuLayerNorm, nullptr});
  r.add(KernelDef{kCpuDomain, kRMSNorm, 1, INT_MAX, "fused-reference", CpuRMSNorm, nullptr});
  r.add(KernelDef{kCpuDomain, kRotaryHalf, 1, INT_MAX, "fused-reference", RotaryHalf, nullptr});
  r.add(KernelDef{kCpuDomain, kFusedElementwise, 1, INT_MAX, "fused-reference", FusedElementwise, nullptr});
  r.add(KernelDef{kCpuDomain, kFusedAttention, 1, INT_MAX, "fused-reference", FusedAttention, nullptr});
  r.add(KernelDef{kCpuDomain, kFusedAddLayerNorm, 1, INT_MAX, "fused-reference", FusedAddLayerNorm, nullptr});
  r.add(KernelDef{kCpuDomain, kToNchwc, 1, INT_MAX, "fused-reference", ToNchwcRef, nullptr});
  r.add(KernelDef{kCpuDomain, kFromNchwc, 1, INT_MAX, "fused-reference", FromNchwcRef, nullptr});
  r.add(KernelDef{kCpuDomain, kNchwcConv, 1, INT_MAX, "fused-reference", NchwcConvRef, nullptr});
  r.add(KernelDef{kCpuDomain, kNchwcPool, 1, INT_MAX, "fused-reference", NchwcPoolRef, nullptr});
  r.add(KernelDef{kCpuDomain, kNchwcSqueezeExcite, 1, INT_MAX, "fused-reference", NchwcSqueezeExciteRef, nullptr});
  r.add(KernelDef{kCpuDomain, kToNhwc, 1, INT_MAX, "fused-reference", ToNhwcRef, nullptr});
  r.add(KernelDef{kCpuDomain, kFromNhwc, 1, INT_MAX, "fused-reference", FromNhwcRef, nullptr});
  r.add(KernelDef{kCpuDomain, kNhwcQLinearConv, 1, INT_MAX, "fused-reference", NhwcQLinearConvRef, nullptr});
  r.add(KernelDef{kCpuDomain, kNhwcMaxPool, 1, INT_MAX, "fused-reference", NhwcMaxPoolRef, nullptr});
  r.add(KernelDef{kCpuDomain, kQuantizedLookup, 1, INT_MAX, "fused-reference", QuantizedLookupRef, nullptr});
}

}  // namespace onnxscope::cpu
