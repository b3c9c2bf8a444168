#include "blocked_conv_case.h"

#include <cmath>
#include <sstream>

#include "model_builder.h"
#include <stdexcept>

#include "onnxscope/engines.h"
#include "onnxscope/reference.h"

namespace onnxscope::test {

using namespace harness;

std::string BlockedConvCase::text() const {
  std::ostringstream o;
  o << "NchwcConv x" << shape_to_string(x) << " M " << out_channels << " g " << group << " block " << block << " k"
    << shape_to_string(kernel) << " s" << shape_to_string(strides) << " d" << shape_to_string(dilations) << " " << auto_pad
    << " pads" << shape_to_string(pads) << (bias ? " bias" : "") << (residual ? " residual" : "") << " " << act
    << (w_constant ? " constant W" : " W as input") << (odd_values ? " NaN/inf in X" : "");
  return o.str();
}

const std::vector<std::pair<std::string, std::vector<float>>>& blocked_conv_activations() {
  static const std::vector<std::pair<std::string, std::vector<float>>> acts = {
      {"", {}},          {"Relu", {}},     {"LeakyRelu", {0.1f}}, {"Clip", {-1.0f, 2.0f}}, {"HardSigmoid", {0.2f, 0.5f}},
      {"HardSwish", {}}, {"Swish", {1.0f}}, {"Swish", {1.5f}},    {"Sigmoid", {}},         {"Tanh", {}},
      {"Gelu", {0.0f}},  {"Gelu", {1.0f}}};
  return acts;
}

std::vector<int64_t> blocked_conv_out(const BlockedConvCase& c) {
  std::vector<int64_t> out(2);
  for (size_t d = 0; d < 2; ++d) {
    const int64_t in = c.x[2 + d], ext = (c.kernel[d] - 1) * c.dilations[d] + 1, st = c.strides[d];
    if (c.auto_pad == "NOTSET") out[d] = (in + c.pads[d] + c.pads[2 + d] - ext) / st + 1;
    else if (c.auto_pad == "VALID") out[d] = (in - ext) / st + 1;
    else out[d] = (in + st - 1) / st;
    if (out[d] < 1) return {};
  }
  return out;
}

namespace {

// The activation after "t" into "y", as plain ONNX operators.
void reference_activation(ModelBuilder& rm, const std::string& op, const std::vector<float>& params) {
  auto scalar = [&](const std::string& name, float v) { rm.initializer(make_float_tensor(name, {}, {v})); };
  if (op.empty()) {
    rm.node("Identity", {"t"}, {"y"}, "act");
  } else if (op == "Swish") {  // x sigmoid(alpha x)
    scalar("alpha", params[0]);
    rm.node("Mul", {"t", "alpha"}, {"ax"}, "ax");
    rm.node("Sigmoid", {"ax"}, {"sig"}, "sig");
    rm.node("Mul", {"t", "sig"}, {"y"}, "act");
  } else if (op == "Gelu") {  // x/2 (1 + erf(x / sqrt 2)), or with tanh(sqrt(2/pi) (x + 0.044715 x^3))
    scalar("half", 0.5f);
    scalar("one", 1.0f);
    if (params[0] == 0.0f) {
      scalar("rsqrt2", 0.70710678f);
      rm.node("Mul", {"t", "rsqrt2"}, {"u"}, "u");
      rm.node("Erf", {"u"}, {"f"}, "f");
    } else {
      scalar("c", 0.044715f);
      scalar("k", 0.7978845608f);
      rm.node("Mul", {"t", "t"}, {"t2"}, "t2");
      rm.node("Mul", {"t2", "t"}, {"t3"}, "t3");
      rm.node("Mul", {"t3", "c"}, {"ct3"}, "ct3");
      rm.node("Add", {"t", "ct3"}, {"in"}, "in");
      rm.node("Mul", {"in", "k"}, {"u"}, "u");
      rm.node("Tanh", {"u"}, {"f"}, "f");
    }
    rm.node("Add", {"f", "one"}, {"f1"}, "f1");
    rm.node("Mul", {"t", "f1"}, {"g"}, "g");
    rm.node("Mul", {"g", "half"}, {"y"}, "act");
  } else if (op == "Clip") {
    scalar("lo", params[0]);
    scalar("hi", params[1]);
    rm.node("Clip", {"t", "lo", "hi"}, {"y"}, "act");
  } else {
    auto& an = rm.node(op, {"t"}, {"y"}, "act");
    if (op == "LeakyRelu") attr_float(an, "alpha", params[0]);
    if (op == "HardSigmoid") {
      attr_float(an, "alpha", params[0]);
      attr_float(an, "beta", params[1]);
    }
  }
}

struct Ran : Observer {
  std::string kernel;
  void on_node(const NodeEvent& e) override {
    if (e.node->op_type == "NchwcConv") kernel = e.kernel;
  }
};

}  // namespace

BlockedConvRun run_blocked_conv(const BlockedConvCase& c, Rng& rng, const std::vector<Engine*>& engines) {
  const std::vector<int64_t> out = blocked_conv_out(c);
  const int64_t C = c.x[1], M = c.out_channels;
  Tensor x = random_tensor(rng, DataType::Float, c.x, -3, 3);
  if (c.odd_values) {
    const std::vector<float> odd = {NAN, INFINITY, -INFINITY};
    for (uint64_t e = 0; e < x.element_count(); e += static_cast<uint64_t>(pick(rng, 5, 40)))
      x.mutable_data<float>()[e] = odd[static_cast<size_t>(pick(rng, 0, 2))];
  }
  const Tensor w = random_tensor(rng, DataType::Float, {M, C / c.group, c.kernel[0], c.kernel[1]}, -1, 1);
  const Tensor b = random_tensor(rng, DataType::Float, {M}, -1, 1);
  const Tensor r = random_tensor(rng, DataType::Float, {c.x[0], M, out.at(0), out.at(1)}, -2, 2);
  ModelBuilder cm(14), rm(14);
  cm.opset("onnxscope.cpu", 1);
  NamedValues in{{"x", Value(x)}};
  for (ModelBuilder* m : {&cm, &rm}) {
    m->input("x", DataType::Float, dims_of(c.x));
    if (c.w_constant) add_initializer(*m, "w", w);
    else m->input("w", DataType::Float, dims_of(w.shape()));
    if (c.bias) add_initializer(*m, "b", b);
    if (c.residual) m->input("r", DataType::Float, dims_of(r.shape()));
  }
  if (!c.w_constant) in.emplace_back("w", Value(w));
  if (c.residual) in.emplace_back("r", Value(r));
  attr_int(cm.node("ToNchwc", {"x"}, {"xb"}, "to", "onnxscope.cpu"), "block", c.block);
  std::vector<std::string> cin{"xb", "w", c.bias ? "b" : ""};
  if (c.residual) {
    attr_int(cm.node("ToNchwc", {"r"}, {"rb"}, "to_r", "onnxscope.cpu"), "block", c.block);
    cin.push_back("rb");
  }
  if (!c.bias && !c.residual) cin.pop_back();
  auto& n = cm.node("NchwcConv", cin, {"yb"}, "conv", "onnxscope.cpu");
  attr_int(n, "block", c.block);
  if (!c.act.empty()) {
    attr_string(n, "activation", c.act);
    if (!c.act_params.empty()) attr_floats(n, "activation_params", c.act_params);
  }
  attr_int(cm.node("FromNchwc", {"yb"}, {"y"}, "from", "onnxscope.cpu"), "channels", M);
  std::vector<std::string> rin{"x", "w"};
  if (c.bias) rin.push_back("b");
  auto& rc = rm.node("Conv", rin, {c.residual ? "t0" : "t"}, "conv");
  for (auto* node : {&n, &rc}) {
    attr_int(*node, "group", c.group);
    attr_ints(*node, "strides", c.strides);
    attr_ints(*node, "dilations", c.dilations);
    if (c.auto_pad == "NOTSET") attr_ints(*node, "pads", c.pads);
    else attr_string(*node, "auto_pad", c.auto_pad);
  }
  if (c.residual) rm.node("Add", {"t0", "r"}, {"t"}, "add");
  reference_activation(rm, c.act, c.act_params);
  for (ModelBuilder* m : {&cm, &rm}) m->output_untyped("y");
  auto cl = cm.load(), rl = rm.load();
  if (!cl.ok() || !rl.ok()) throw std::runtime_error("blocked conv case did not load: " + dump(cl) + dump(rl));
  const std::shared_ptr<const Model> cpu_model(std::move(cl.model));
  BlockedConvRun run;
  run.want = make_reference_engine()->prepare(std::shared_ptr<const Model>(std::move(rl.model)))->run(in).at(0).second.tensor();
  for (Engine* e : engines) {
    Ran ran;
    RunOptions ro;
    ro.observer = &ran;
    ro.capture_original = false;
    run.got.push_back(e->prepare(cpu_model)->run(in, ro).at(0).second.tensor());
    run.kernels.push_back(ran.kernel);
  }
  return run;
}

std::string blocked_conv_mismatch(const Tensor& want, const Tensor& got, double tol) {
  if (got.shape() != want.shape()) return "shape " + shape_to_string(got.shape()) + ", want " + shape_to_string(want.shape());
  for (uint64_t e = 0; e < got.element_count(); ++e) {
    const float w = want.data<float>()[e], g = got.data<float>()[e];
    const bool ok = std::isnan(w) || std::isnan(g) ? std::isnan(w) && std::isnan(g)
                    : std::isinf(w) || std::isinf(g) ? w == g
                                                      : std::abs(w - g) <= tol * (1 + std::abs(w));
    if (!ok) {
      std::ostringstream o;
      o << "at " << e << ": ref " << w << " cpu " << g;
      return o.str();
    }
  }
  return {};
}

}  // namespace onnxscope::test
