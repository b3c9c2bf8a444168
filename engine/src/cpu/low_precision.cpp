// float16/bfloat16 nodes on the float32 kernels (low_precision.h).
#include "cpu/low_precision.h"

#include <set>
#include <string>

#include "cpu/kernels/kernels.h"
#include "onnxscope/float_formats.h"

namespace onnxscope::cpu {

bool keeps_its_type(const Node& n) {
  static const std::set<std::string> ops = {
      "Cast", "CastLike", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Split",
      "SplitToSequence", "Slice", "Gather", "GatherElements", "GatherND", "Scatter", "ScatterElements", "ScatterND",
      "Expand", "Tile", "Pad", "DepthToSpace", "SpaceToDepth", "Shape", "Size", "Where", "Compress", "ReverseSequence",
      "Constant", "ConstantOfShape", "EyeLike", "Trilu", "NonZero", "Unique", "OneHot", "Equal", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "IsNaN", "IsInf", "RandomNormal", "RandomUniform", "RandomNormalLike",
      "RandomUniformLike", "Multinomial", "Bernoulli", "Optional", "OptionalGetElement", "OptionalHasElement",
      "SequenceConstruct", "SequenceAt", "SequenceInsert", "SequenceErase", "ConcatFromSequence",
      // the spec computes parts of these in the input type; the reference rounds there too, float32 would not
      "Attention", "FlexAttention", "SwiGLU", "CausalConvWithState", "QuantizeLinear"};
  if (n.domain.empty() && ops.count(n.op_type)) return true;
  for (const auto& a : n.attributes) {
    if (a.g || !a.graphs.empty()) return true;  // subgraphs see the outer values by name
    if (a.name == "to" || a.name == "dtype" || a.name == "output_dtype") return true;  // output type set by an attribute
  }
  return false;
}

bool computes_float16_itself(const Node& n, const std::function<const Tensor*(const std::string&)>& constant) {
  if (n.domain.empty() && n.inputs.size() == 1 && n.outputs.size() == 1 && unary_avx512_takes_half(n.op_type)) return true;
  return depthwise_conv_takes_half(n, constant);
}

bool allows_float(const OpSchema& s, const FormalParam* p) {
  if (!p) return false;
  const std::string t = p->type_str;
  if (t.rfind("tensor(", 0) == 0) return t == "tensor(float)";
  const TypeConstraint* c = s.constraint(t);
  return c && std::string(c->allowed).find("tensor(float)") != std::string::npos;
}

Tensor widened_to_float(const Tensor& t) {
  Tensor out = Tensor::zeros(DataType::Float, t.shape());
  const auto* in = reinterpret_cast<const uint16_t*>(t.raw());
  float* o = out.mutable_data<float>();
  const uint64_t n = t.element_count();
  if (t.dtype() == DataType::BFloat16)
    for (uint64_t i = 0; i < n; ++i) o[i] = bfloat16_to_float(in[i]);
  else
    half_cast(in, o, static_cast<int64_t>(n), false);
  return out;
}

Tensor narrowed(const Tensor& t, DataType to) {
  Tensor out = Tensor::zeros(to, t.shape());
  const float* in = t.data<float>();
  auto* o = reinterpret_cast<uint16_t*>(out.mutable_raw());
  const uint64_t n = t.element_count();
  if (to == DataType::BFloat16)
    for (uint64_t i = 0; i < n; ++i) o[i] = float_to_bfloat16(in[i]);
  else
    half_cast(in, o, static_cast<int64_t>(n), true);
  return out;
}

namespace {

const OpSchema* schema_of(const KernelContext& ctx) {
  const Node& n = ctx.node();
  if (!(n.domain.empty() || n.domain == "ai.onnx" || n.domain == "com.microsoft") || keeps_its_type(n)) return nullptr;
  return find_schema(n.domain == "ai.onnx" ? "" : n.domain, n.op_type, ctx.opset_version());
}

const Tensor* low_input(const KernelContext& ctx, size_t i) {
  const Value* v = ctx.input_value(i);
  return v && v->is_tensor() && low_precision(v->tensor().dtype()) ? &v->tensor() : nullptr;
}


// The node as its float32 kernels see it: half inputs widened, outputs in slots of its own.
class Widened final : public KernelContext {
 public:
  explicit Widened(KernelContext& outer) : outer_(outer), inputs_(outer.input_count()), outputs_(outer.output_count()) {
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (const Tensor* t = low_input(outer, i)) inputs_[i] = Value(widened_to_float(*t));
  }
  const Node& node() const override { return outer_.node(); }
  int64_t opset_version() const override { return outer_.opset_version(); }
  size_t input_count() const override { return inputs_.size(); }
  const Value* input_value(size_t i) const override {
    if (i < inputs_.size() && inputs_[i].is_tensor()) return &inputs_[i];
    return outer_.input_value(i);
  }
  size_t output_count() const override { return outputs_.size(); }
  bool output_wanted(size_t i) const override { return outer_.output_wanted(i); }
  Value& output(size_t i) override { return outputs_.at(i); }
  std::vector<Value> run_graph(const Graph& g, std::vector<Value> in) override { return outer_.run_graph(g, std::move(in)); }
  uint64_t seed() const override { return outer_.seed(); }
  uint64_t max_tensor_bytes() const override { return outer_.max_tensor_bytes(); }
  Location location() const override { return outer_.location(); }
  const Graph& graph() const override { return outer_.graph(); }

  // Each float32 output whose type constraint binds it to a half input, rounded to that input's type.
  void finish(const OpSchema& s) {
    for (size_t k = 0; k < outputs_.size(); ++k) {
      Value& v = outputs_[k];
      if (v.is_tensor() && v.tensor().dtype() == DataType::Float) {
        const FormalParam* out = s.output_param(k);
        for (size_t i = 0; out && i < inputs_.size(); ++i) {
          const FormalParam* in = s.input_param(i);
          const Tensor* t = low_input(outer_, i);
          if (t && in && std::string(in->type_str) == out->type_str) {
            v = Value(narrowed(v.tensor(), t->dtype()));
            break;
          }
        }
      }
      outer_.output(k) = std::move(v);
    }
  }

 private:
  KernelContext& outer_;
  std::vector<Value> inputs_;
  std::vector<Value> outputs_;
};

bool accepts_float32(const KernelContext& ctx) {
  const OpSchema* s = schema_of(ctx);
  if (!s) return false;
  bool any = false;
  for (size_t i = 0; i < ctx.input_count(); ++i)
    if (low_input(ctx, i)) {
      if (!allows_float(*s, s->input_param(i))) return false;
      any = true;
    }
  return any;
}

void run_float32(KernelContext& ctx) {
  const KernelDef* self = ctx.kernel_def();
  const auto& engine = *static_cast<const KernelRegistry*>(self->data);
  const Node& n = ctx.node();
  const auto candidates = engine.candidates(n.domain, n.op_type, ctx.opset_version());
  Widened w(ctx);
  for (const KernelDef* k : candidates) {
    if (k->impl == "reference" || k->fn == &run_float32) continue;
    w.set_kernel_def(k);
    if (k->accepts && !k->accepts(w)) continue;
    k->fn(w);
    w.finish(*schema_of(ctx));
    ctx.set_kernel_def(self);
    return;
  }
  for (const KernelDef* k : candidates)  // no float32 kernel takes it: the reference, on the node as it is
    if (k->impl == "reference") {
      ctx.set_kernel_def(k);
      k->fn(ctx);
      ctx.set_kernel_def(self);
      return;
    }
  ctx.fail("no kernel for this node");
}

}  // namespace

void register_float32_kernels(KernelRegistry& r, const KernelRegistry& cpu, const KernelRegistry* engine) {
  std::set<std::pair<std::string, std::string>> ops;
  for (const KernelDef& k : cpu.all())
    if (ops.insert({k.domain, k.op_type}).second)
      r.add(KernelDef{k.domain, k.op_type, 1, INT_MAX, "cpu-float32", &run_float32, &accepts_float32, engine});
}

}  // namespace onnxscope::cpu
