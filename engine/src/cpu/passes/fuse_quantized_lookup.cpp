// A DequantizeLinear of an 8-bit tensor, float activations (or one-input
// math functions, or arithmetic with a scalar constant) each read only by
// the next, and a QuantizeLinear back to 8 bits, all with constant scalar
// scales and zero points (what onnxruntime's quantizer leaves around an
// activation it has no QLinear operator for: MobileNetV3's HardSwish as
// DequantizeLinear, HardSigmoid, QuantizeLinear, 29 times; GELU's Div and
// Erf in QDQ transformers), is a function of each input byte alone:
//   -> onnxscope.cpu::QuantizedLookup(X, table)
// with the table made at prepare time by running the original nodes on the
// reference over all 256 values of X's type, so every result is the
// reference's own. Three passes over the tensor (one of them in float)
// become one byte lookup.
#include <cstring>
#include <memory>

#include "cpu/nhwc.h"
#include "cpu/passes/passes.h"
#include "onnxscope/reference.h"
#include "reference/interpreter.h"

namespace onnxscope::cpu {
namespace {

// The results of `chain` (sorted, its first node reads x) for x = every value
// of the 8-bit `type`, by the reference; nullopt when it fails or gives
// something other than 256 8-bit values.
// With `channels` > 0 (a per-channel chain on [N, C, H, W]): x is
// [1, C, 256, 1], every channel's 256 values, and the table [C, 256].
std::optional<Tensor> table_of(const Model& m, const std::vector<const Node*>& chain, DataType type, int64_t channels) {
  auto tiny = std::make_shared<Model>();
  tiny->ir_version = m.ir_version;
  tiny->opset_imports = m.opset_imports;
  tiny->source = m.source;
  const std::string& x = chain.front()->inputs[0];
  tiny->graph.inputs.push_back({x, {}, {}});
  std::set<std::string> made{x};
  for (const Node* n : chain) {
    for (const std::string& in : n->inputs)  // the rest are constants: scales, zero points, operands
      if (!in.empty() && !made.count(in) && !tiny->graph.initializer(in))
        tiny->graph.initializers.push_back({in, *constant_tensor(m, in), {}});
    tiny->graph.nodes.push_back(*n);
    made.insert(n->outputs[0]);
  }
  tiny->graph.outputs.push_back({chain.back()->outputs[0], {}, {}});
  const int64_t rows = std::max<int64_t>(channels, 1);
  Tensor all = Tensor::zeros(type, channels > 0 ? Shape{1, channels, 256, 1} : Shape{256});
  for (int64_t e = 0; e < rows * 256; ++e) reinterpret_cast<uint8_t*>(all.mutable_raw())[e] = static_cast<uint8_t>(e % 256);
  const Shape all_shape = all.shape();
  try {
    ref::Interpreter interp(tiny, reference_kernels(), uint64_t{1} << 20);
    NamedValues out = interp.run({{x, Value(std::move(all))}}, RunOptions{});
    if (out.size() != 1 || !out[0].second.is_tensor()) return std::nullopt;
    Tensor t = std::move(out[0].second.tensor());
    if ((t.dtype() != DataType::Uint8 && t.dtype() != DataType::Int8) || t.shape() != all_shape) return std::nullopt;
    if (channels == 0) return t;
    Tensor rows_of = Tensor::zeros(t.dtype(), {channels, 256});  // row c: channel c's 256 results
    std::memcpy(rows_of.mutable_raw(), t.raw(), t.byte_size());
    return rows_of;
  } catch (const std::exception&) {
    return std::nullopt;  // left as it is: running it reports the error there
  }
}

// A float node whose output is a function of `v`'s value alone, element by
// element: an activation reading it, a one-input math function, or a binary
// arithmetic op with a scalar constant as the other operand (GELU's
// Div(x, sqrt 2) -> Erf between a DequantizeLinear and a QuantizeLinear).
bool elementwise_of(const Model& m, const Node& n, const std::string& v) {
  if (n.outputs.size() != 1 || n.outputs[0].empty() || !is_default_domain(n.domain)) return false;
  if (is_float_activation(m, n)) return n.inputs[0] == v;
  for (const char* op : {"Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Softplus", "Gelu", "Mish", "Floor", "Ceil",
                         "Round", "Sin", "Cos"})
    if (is_op(n, op)) return n.inputs.size() == 1 && n.inputs[0] == v;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
    if (is_op(n, op)) {
      if (n.inputs.size() != 2 || (n.inputs[0] == v) == (n.inputs[1] == v)) return false;
      const std::string& other = n.inputs[0] == v ? n.inputs[1] : n.inputs[0];
      const Tensor* c = constant_tensor(m, other);
      return c && c->element_count() == 1 && c->dtype() == DataType::Float;
    }
  return false;
}

// A float node that maps `v` element by element with one function per
// channel (axis 1): an inference BatchNormalization (DenseNet's
// pre-activation BN between a DequantizeLinear and a QuantizeLinear; any
// rank, and it tells the channels where no shape does: `channels` 0), or, on
// a value known to be [N, C, H, W] (`rank4`), arithmetic with a per-channel
// constant ([C, 1, 1]).
bool channelwise_of(const Model& m, const Node& n, const std::string& v, int64_t& channels, bool rank4) {
  if (n.outputs.size() != 1 || n.outputs[0].empty() || !is_default_domain(n.domain)) return false;
  if (is_op(n, "BatchNormalization")) {
    if (n.inputs.size() != 5 || n.inputs[0] != v) return false;
    if (const Attribute* a = n.attribute("training_mode"); a && a->i != 0) return false;
    const Tensor* scale = constant_tensor(m, n.inputs[1]);
    const int64_t c = scale && scale->rank() == 1 ? scale->shape()[0] : 0;
    if (c <= 0 || c > 4096 || (channels != 0 && c != channels)) return false;
    for (size_t i = 2; i < 5; ++i) {
      const Tensor* t = constant_tensor(m, n.inputs[i]);
      if (!t || t->rank() != 1 || t->shape()[0] != c) return false;
    }
    channels = c;
    return true;
  }
  if (!rank4 || channels == 0) return false;
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    if (is_op(n, op)) {
      if (n.inputs.size() != 2 || (n.inputs[0] == v) == (n.inputs[1] == v)) return false;
      return per_channel(constant_tensor(m, n.inputs[0] == v ? n.inputs[1] : n.inputs[0]), 4, channels).has_value();
    }
  return false;
}

}  // namespace

bool fuse_quantized_lookup(Model& model, PassContext& ctx) {
  Graph& g = model.graph;
  const GraphIndex idx(g);
  std::vector<bool> remove(g.nodes.size(), false);
  FreshNames fresh(g);
  size_t fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& dq = g.nodes[i];
    if (remove[i] || !per_tensor_quantization(model, dq) || !is_op(dq, "DequantizeLinear")) continue;
    // X's type: its zero point's (the same by the spec), else as declared.
    const Tensor* zp = dq.inputs.size() > 2 ? constant_tensor(model, dq.inputs[2]) : nullptr;
    const DataType type = zp ? zp->dtype() : elem_type(g, dq.inputs[0]);
    if (type != DataType::Uint8 && type != DataType::Int8) continue;
    // X's channels where its shape is known (else a BatchNormalization's):
    // per-channel steps may join the chain.
    const auto xs = static_shape(g, dq.inputs[0]);
    const bool rank4 = known_rank(g, dq.inputs[0]) == size_t{4};
    int64_t C = rank4 && xs && (*xs)[1] > 0 && (*xs)[1] <= 4096 ? (*xs)[1] : 0;
    bool per_channel_steps = false;
    std::vector<const Node*> chain{&dq};
    bool closed = false;
    for (std::string v = dq.outputs[0];;) {
      auto it = idx.readers.find(v);
      if (it == idx.readers.end() || it->second.size() != 1 || !idx.only_read_by(v, it->second[0])) break;
      const Node& r = g.nodes[it->second[0]];
      const bool per_channel_step = channelwise_of(model, r, v, C, rank4);
      if (per_channel_step || elementwise_of(model, r, v)) {
        per_channel_steps = per_channel_steps || per_channel_step;
        chain.push_back(&r);
        v = r.outputs[0];
        continue;
      }
      if (is_op(r, "QuantizeLinear") && r.inputs[0] == v && per_tensor_quantization(model, r)) {
        chain.push_back(&r);
        closed = true;
      }
      break;
    }
    if (!closed || chain.size() < 3) continue;  // DequantizeLinear then QuantizeLinear alone: left as they are
    std::optional<Tensor> table = table_of(model, chain, type, per_channel_steps ? C : 0);
    if (!table) continue;
    Node q;
    q.name = chain.back()->name.empty() ? fresh(chain.back()->outputs[0] + "_lookup") : chain.back()->name;
    q.domain = kCpuDomain;
    q.op_type = kQuantizedLookup;
    const std::string table_name = fresh(chain.back()->outputs[0] + "_table");
    q.inputs = {dq.inputs[0], table_name};
    q.outputs = {chain.back()->outputs[0]};
    if (per_channel_steps) q.attributes.push_back(make_attr_int("axis", 1));  // table [C, 256]
    if (!replace_chain(ctx, g, remove, chain, std::move(q))) continue;
    g.initializers.push_back({table_name, std::move(*table), {}});
    ++fused;
  }
  if (!fused) return false;
  erase_nodes(g, remove);
  add_cpu_opset(model);
  log_pass(ctx, model, "fuse-quantized-lookup: " + std::to_string(fused) + " dequantize-activation-quantize chains as lookups");
  return true;
}

}  // namespace onnxscope::cpu
