// The CPU engine's fused operators (cpu/fused_ops.h, domain onnxscope.cpu),
// which its passes make when the offload engine lets them run for the
// device: FusedConv, FusedGemm and FusedMatMul as the base operator and its
// epilogue (bias and activation: inside cuDNN's or cuBLASLt's call where
// the runtime can, else one kernel), Gelu as ai.onnx Gelu. Also the
// epilogue kernel's launch for the operators that apply it themselves.
#include <map>
#include <set>

#include "cuda/ops/op_table.h"
#include "cuda/ops/window.h"
#include "cuda/shapes.h"

namespace onnxscope::cuda {

Activation activation_of(const OpContext& c) {
  static const std::map<std::string, std::pair<UnaryOp, size_t>> acts{
      {"", {UnaryOp::Identity, 0}},     {"Relu", {UnaryOp::Relu, 0}},         {"LeakyRelu", {UnaryOp::LeakyRelu, 1}},
      {"Sigmoid", {UnaryOp::Sigmoid, 0}}, {"Tanh", {UnaryOp::Tanh, 0}},       {"Clip", {UnaryOp::Clip, 2}},
      {"HardSigmoid", {UnaryOp::HardSigmoid, 2}}, {"Gelu", {UnaryOp::Gelu, 1}},
      {"HardSwish", {UnaryOp::HardSwish, 0}}, {"Swish", {UnaryOp::Swish, 1}}};
  const std::string name = c.attr_string("activation", "");
  const Attribute* p = c.node().attribute("activation_params");
  const std::vector<float> params = p ? p->floats : std::vector<float>{};
  auto it = acts.find(name);
  if (it == acts.end()) c.fail("unknown activation '" + name + "'");
  if (params.size() != it->second.second)
    c.fail("activation " + name + " takes " + std::to_string(it->second.second) + " activation_params, got " + std::to_string(params.size()));
  Activation a;
  a.op = it->second.first;
  if (a.op == UnaryOp::Gelu && params[0] != 0.f) a.op = UnaryOp::GeluTanh;
  else if (a.op != UnaryOp::Gelu) {
    if (!params.empty()) a.alpha = params[0];
    if (params.size() > 1) a.beta = params[1];
  }
  return a;
}

Epilogue epilogue_of(const Activation& act) {
  Epilogue e;
  e.act = act.op;
  e.alpha = act.alpha;
  e.beta = act.beta;
  return e;
}

void apply_epilogue(OpContext& c, DeviceTensor& y, const DeviceTensor* bias, int64_t inner, int64_t channels,
                    const Activation& act) {
  const int64_t n = static_cast<int64_t>(elements_of(y.shape));
  if (n == 0) return;
  if (inner <= 0 || channels <= 0) c.fail("bad epilogue geometry");
  Epilogue e = epilogue_of(act);
  e.bias = bias ? static_cast<const float*>(bias->data) : nullptr;
  e.inner = inner;
  e.channels = channels;
  run_epilogue(c.rt(), e, static_cast<float*>(y.data), n);
}

namespace {

std::optional<std::string> refuse_fused(const Graph& g, const Node& n) {
  if (auto r = require_types(g, n, {DataType::Float})) return r;
  static const std::set<std::string> known{"",     "Relu", "LeakyRelu", "Sigmoid",  "Tanh", "Clip",
                                           "HardSigmoid", "Gelu", "HardSwish", "Swish"};
  const Attribute* a = n.attribute("activation");
  if (a && !known.count(a->s)) return "no CUDA epilogue for activation " + a->s;
  if (n.op_type == "FusedConv") return refuse_spatial_rank(g, n);
  return std::nullopt;
}

// With a residual Z (fuse-conv-residual): Z added in the convolution's
// epilogue when it has the output's shape, else as the Add it replaced
// (broadcast), then the activation, in one kernel.
void run_fused_conv(OpContext& c) {
  const Activation act = activation_of(c);
  const DeviceTensor* z = c.has_input(3) ? &c.input(3) : nullptr;
  if (conv_forward(c, act, z)) return;
  const DeviceTensor y = c.output(0);
  const Shape shapes[2] = {y.shape, z->shape};
  auto p = broadcast_plan(shapes);
  if (!p) c.fail("the residual " + shape_to_string(z->shape) + " does not broadcast with the output " + shape_to_string(y.shape));
  ElementwiseChainKernel k{};
  k.inputs = 2;
  k.bc = index_of(*p);
  k.step[0] = ChainStep{true, static_cast<int>(BinaryOp::Add), 0, 1, 0.f, 0.f, 0.f};
  k.step[1] = ChainStep{false, static_cast<int>(act.op), 2, -1, act.alpha, act.beta, 0.f};
  k.steps = 2;
  k.x[0] = static_cast<const float*>(y.data);
  k.x[1] = static_cast<const float*>(z->data);
  c.output(0) = c.allocate(DataType::Float, p->out);
  k.y = static_cast<float*>(c.output(0).data);
  launch(c.rt(), k, static_cast<int64_t>(elements_of(p->out)));
}

void run_fused_gemm(OpContext& c) {
  const Activation act = activation_of(c);
  find_op("Gemm")->run(c);
  if (act.op != UnaryOp::Identity) apply_epilogue(c, c.output(0), nullptr, 1, 1, act);
}

// Y = act(MatMul(A, B) + Bias), Bias 1-D over the last dim (float32 only:
// refuse_fused).
void run_fused_matmul(OpContext& c) {
  const DeviceTensor& a = c.input(0);
  const DeviceTensor& b = c.input(1);
  if (a.dtype != DataType::Float || b.dtype != DataType::Float) c.fail("FusedMatMul takes float32");
  c.output(0) = matmul_f32(c, a, b, true, c.has_input(2) ? &c.input(2) : nullptr, activation_of(c), true);
}

}  // namespace

void add_fused_ops(std::vector<OpDef>& t) {
  const char* cpu = "onnxscope.cpu";
  t.push_back({"FusedConv", refuse_fused, run_fused_conv, OpBackend::Conv, nullptr, cpu});
  t.push_back({"FusedGemm", refuse_fused, run_fused_gemm, OpBackend::Gemm, nullptr, cpu});
  t.push_back({"FusedMatMul", refuse_fused, run_fused_matmul, OpBackend::Gemm, nullptr, cpu});
  // Gelu below opset 20 and LayerNormalization below 17: the ai.onnx kernels.
  for (const OpDef& d : std::vector<OpDef>(t))
    if ((std::string(d.op_type) == "Gelu" || std::string(d.op_type) == "LayerNormalization") && !*d.domain) {
      OpDef g = d;
      g.domain = cpu;
      t.push_back(g);
    }
}

}  // namespace onnxscope::cuda
