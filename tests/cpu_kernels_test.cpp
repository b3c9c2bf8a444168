// The CPU engine's oneDNN kernels against the reference engine, in the style of
// ggml's test-backend-ops: for every "onednn" kernel of cpu_kernels(), seeded
// random one-node problems (odd sizes, batch 1 and > 1, strides / pads /
// dilations / groups, broadcasting, zero-sized dims) run on both engines and
// must agree; an observer checks which implementation ran each node, so a
// kernel that silently declines (falls back to the reference) fails the test.
//
// Tolerance: |cpu - ref| <= 1e-5 + 1e-4 * |ref|. The reference accumulates in
// double and rounds once; oneDNN accumulates float32 in a blocked order and uses
// polynomial exp/tanh/logistic, so results differ by a few ulps of the larger
// partial sums (~1e-6 absolute for the O(1) data and sums of <= ~300 products
// used here), well inside that bound, while a wrong index or a missed tap
// moves outputs by O(0.1).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;
constexpr int kCasesPerKernel = 16;

using Rng = std::mt19937;

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
template <typename T>
T choose(Rng& rng, const std::vector<T>& v) { return v[static_cast<size_t>(pick(rng, 0, static_cast<int64_t>(v.size()) - 1))]; }

std::vector<float> random_floats(Rng& rng, uint64_t n, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

uint64_t count(const Shape& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}

std::vector<DimSpec> dims(const Shape& s) { return std::vector<DimSpec>(s.begin(), s.end()); }

// One random problem: the model for the CPU engine, the model the reference
// runs (the unfused equivalent for the fused ops), the inputs, and whether the
// oneDNN kernel is expected to take it.
struct Case {
  std::string what;
  ModelBuilder cpu{17};
  ModelBuilder ref{17};
  NamedValues inputs;
  bool expect_onednn = true;
};

// Adds a float tensor to both models, as a graph input or an initializer.
struct Builder {
  Case& c;
  Rng& rng;
  void input(const std::string& name, const Shape& s, float lo = -1.f, float hi = 1.f) {
    Tensor t = Tensor::zeros(DataType::Float, s);
    auto v = random_floats(rng, count(s), lo, hi);
    std::copy(v.begin(), v.end(), t.mutable_data<float>());
    c.cpu.input(name, DataType::Float, dims(s));
    c.ref.input(name, DataType::Float, dims(s));
    c.inputs.emplace_back(name, Value(std::move(t)));
  }
  void constant(const std::string& name, const Shape& s, float lo = -1.f, float hi = 1.f) {
    auto v = random_floats(rng, count(s), lo, hi);
    c.cpu.initializer(make_float_tensor(name, s, v));
    c.ref.initializer(make_float_tensor(name, s, v));
  }
  void weight(const std::string& name, const Shape& s) {
    if (pick(rng, 0, 1)) constant(name, s);
    else input(name, s);
  }
  void output(const std::string& name) {
    c.cpu.output_untyped(name);
    c.ref.output_untyped(name);
  }
};

void set_opset(Case& c, int64_t v) {
  c.cpu = ModelBuilder(v);
  c.ref = ModelBuilder(v);
}

// --- activation of the fused ops ------------------------------------------------

struct Act {
  std::string op;
  std::vector<float> params;
};

Act random_activation(Rng& rng) {
  switch (pick(rng, 0, 8)) {
    case 7: return {"HardSwish", {}};
    case 8: return {"Swish", {pick(rng, 0, 1) ? 1.0f : 1.5f}};
    case 0: return {"", {}};
    case 1: return {"Relu", {}};
    case 2: return {"LeakyRelu", {0.1f + static_cast<float>(pick(rng, 0, 5)) * 0.1f}};
    case 3: return {"Sigmoid", {}};
    case 4: return {"Tanh", {}};
    case 5: return {"Clip", {-0.5f, 0.25f + static_cast<float>(pick(rng, 0, 3)) * 0.25f}};
    default: return {"HardSigmoid", {0.2f, 0.5f}};
  }
}

// Sets the activation attributes on the fused node and appends the unfused
// activation after `from` in the reference model; returns the final name.
void apply_activation(Case& c, onnx::NodeProto& fused, const Act& a, const std::string& from, const std::string& out) {
  attr_string(fused, "activation", a.op);
  if (!a.params.empty()) attr_floats(fused, "activation_params", a.params);
  if (a.op.empty()) {
    c.ref.node("Identity", {from}, {out});
    return;
  }
  if (a.op == "Swish") {
    // x * Sigmoid(alpha * x), written out: Swish is an opset-24 operator.
    c.ref.initializer(make_float_tensor(out + "_alpha", {}, {a.params[0]}));
    c.ref.node("Mul", {from, out + "_alpha"}, {out + "_ax"});
    c.ref.node("Sigmoid", {out + "_ax"}, {out + "_s"});
    c.ref.node("Mul", {from, out + "_s"}, {out});
    return;
  }
  if (a.op == "HardSwish") {
    // x * HardSigmoid(x, 1/6, 1/2), written out: some cases are below opset 14.
    auto& hs = c.ref.node("HardSigmoid", {from}, {out + "_hs"});
    attr_float(hs, "alpha", 1.0f / 6.0f);
    attr_float(hs, "beta", 0.5f);
    c.ref.node("Mul", {from, out + "_hs"}, {out});
    return;
  }
  auto& n = c.ref.node(a.op, {from}, {out});
  if (a.op == "LeakyRelu") attr_float(n, "alpha", a.params[0]);
  if (a.op == "HardSigmoid") {
    attr_float(n, "alpha", a.params[0]);
    attr_float(n, "beta", a.params[1]);
  }
  if (a.op == "Clip") {
    // Opset 11+: min and max are inputs.
    c.ref.initializer(make_float_tensor(out + "_min", {}, {a.params[0]}));
    c.ref.initializer(make_float_tensor(out + "_max", {}, {a.params[1]}));
    n.add_input(out + "_min");
    n.add_input(out + "_max");
  }
}

// --- generators ----------------------------------------------------------------

// Conv / FusedConv: 1-3 spatial dims, groups (depthwise too), strides, pads or
// auto_pad, dilations, optional bias.
Case conv_case(Rng& rng, int idx, bool fused) {
  Case c;
  c.cpu.opset("onnxscope.cpu", 1);
  Builder b{c, rng};
  const int64_t k = idx % 3 == 2 ? 3 : pick(rng, 1, 2);
  const int64_t N = choose<int64_t>(rng, {1, 1, 2, 3});
  const bool depthwise = pick(rng, 0, 3) == 0;  // group == C
  int64_t group = choose<int64_t>(rng, {1, 1, 2, 3});
  int64_t Cg = pick(rng, 1, k == 3 ? 3 : 5), Mg = pick(rng, 1, 4);
  if (depthwise) {
    group = pick(rng, 2, 6);
    Cg = 1;
    Mg = pick(rng, 1, 2);
  }
  const int64_t C = group * Cg, M = group * Mg;
  const std::string auto_pad = choose<std::string>(rng, {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  Shape x{N, C}, w{M, Cg};
  std::vector<int64_t> strides, dil, pads(2 * k);
  for (int64_t d = 0; d < k; ++d) {
    const int64_t ks = pick(rng, 1, 3), dl = pick(rng, 1, 2), st = pick(rng, 1, 3);
    const int64_t span = (ks - 1) * dl + 1;
    x.push_back(span + pick(rng, 0, k == 3 ? 4 : 9));
    w.push_back(ks);
    strides.push_back(st);
    dil.push_back(dl);
    pads[d] = pick(rng, 0, 2);
    pads[k + d] = pick(rng, 0, 2);
  }
  const bool bias = pick(rng, 0, 1);
  if (idx == kCasesPerKernel - 1) {  // zero-sized batch: the reference handles it
    x[0] = 0;
    c.expect_onednn = false;
  }
  b.input("x", x);
  b.weight("w", w);
  std::vector<std::string> in{"x", "w"};
  if (bias) {
    b.weight("b", {w[0]});
    in.push_back("b");
  }
  auto set = [&](onnx::NodeProto& n) {
    attr_int(n, "group", group);
    attr_ints(n, "strides", strides);
    attr_ints(n, "dilations", dil);
    attr_ints(n, "kernel_shape", Shape(w.begin() + 2, w.end()));
    if (auto_pad == "NOTSET") attr_ints(n, "pads", pads);
    else attr_string(n, "auto_pad", auto_pad);
  };
  if (fused) {
    Act a = random_activation(rng);
    auto& n = c.cpu.node("FusedConv", in, {"y"}, "fused", "onnxscope.cpu");
    set(n);
    set(c.ref.node("Conv", in, {"t"}));
    apply_activation(c, n, a, "t", "y");
    c.what = "FusedConv " + a.op;
  } else {
    set(c.cpu.node("Conv", in, {"y"}));
    set(c.ref.node("Conv", in, {"y"}));
    c.what = "Conv";
  }
  c.what += " x" + shape_to_string(x) + " w" + shape_to_string(w) + " g" + std::to_string(group) +
            " s" + shape_to_string(strides) + " d" + shape_to_string(dil) + " " + auto_pad + " p" + shape_to_string(pads);
  b.output("y");
  return c;
}

// ConvTranspose: groups, strides, dilations, pads, output_padding, SAME and output_shape.
Case deconv_case(Rng& rng, int idx) {
  Case c;
  Builder b{c, rng};
  const int64_t k = idx % 3 == 2 ? 3 : pick(rng, 1, 2);
  const int64_t N = choose<int64_t>(rng, {1, 1, 2, 3});
  const int64_t group = choose<int64_t>(rng, {1, 1, 2, 3});
  const int64_t Cg = pick(rng, 1, k == 3 ? 3 : 5), Mg = pick(rng, 1, 4);
  const int mode = static_cast<int>(pick(rng, 0, 5));  // 0-3 pads, 4 SAME_UPPER, 5 output_shape
  Shape x{N, group * Cg}, w{group * Cg, Mg};
  std::vector<int64_t> strides, dil, pads(2 * k), out_pad(k, 0), out_shape;
  for (int64_t d = 0; d < k; ++d) {
    const int64_t ks = pick(rng, 1, 3), dl = pick(rng, 1, 2);
    const int64_t span = (ks - 1) * dl + 1;
    const int64_t st = mode == 4 ? pick(rng, 1, span) : pick(rng, 1, 3);
    x.push_back(pick(rng, 1, k == 3 ? 4 : 8));
    w.push_back(ks);
    strides.push_back(st);
    dil.push_back(dl);
    if (mode < 4) {
      out_pad[d] = pick(rng, 0, std::max(st, dl) - 1);
      pads[d] = pick(rng, 0, span - 1);
      pads[k + d] = std::min(span - 1, out_pad[d] + pick(rng, 0, 1));  // oneDNN needs pad_end >= output_padding
      if (pads[k + d] < out_pad[d]) out_pad[d] = pads[k + d];
    }
    out_shape.push_back(st * (x.back() - 1) + span - (mode == 5 ? pick(rng, 0, span - 1) : 0));
  }
  b.input("x", x);
  b.weight("w", w);
  std::vector<std::string> in{"x", "w"};
  if (pick(rng, 0, 1)) {
    b.weight("b", {group * Mg});
    in.push_back("b");
  }
  for (auto* m : {&c.cpu, &c.ref}) {
    auto& n = m->node("ConvTranspose", in, {"y"});
    attr_int(n, "group", group);
    attr_ints(n, "strides", strides);
    attr_ints(n, "dilations", dil);
    if (mode < 4) {
      attr_ints(n, "pads", pads);
      attr_ints(n, "output_padding", out_pad);
    } else if (mode == 4) {
      attr_string(n, "auto_pad", "SAME_UPPER");
    } else {
      attr_ints(n, "output_shape", out_shape);
    }
  }
  c.what = "ConvTranspose x" + shape_to_string(x) + " w" + shape_to_string(w) + " g" + std::to_string(group) + " s" +
           shape_to_string(strides) + " d" + shape_to_string(dil) + " mode " + std::to_string(mode) + " p" +
           shape_to_string(pads) + " op" + shape_to_string(out_pad) + " os" + shape_to_string(out_shape);
  b.output("y");
  return c;
}

// Random MatMul operand shapes with broadcasting batch dims and 1-D operands.
void matmul_shapes(Rng& rng, int idx, Shape& a, Shape& bs) {
  const int64_t M = pick(rng, 1, 17), K = pick(rng, 1, 33), N = pick(rng, 1, 19);
  const int64_t ra = idx < 3 ? idx + 1 : pick(rng, 1, 4), rb = idx < 3 ? 2 : pick(rng, 1, 4);
  a = ra == 1 ? Shape{K} : Shape{M, K};
  bs = rb == 1 ? Shape{K} : Shape{K, N};
  const int64_t batch = std::max<int64_t>(ra, rb) - 2;
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t d = pick(rng, 2, 3);
    const int mode = static_cast<int>(pick(rng, 0, 3));  // both, a only (b 1), b only (a 1), both 1
    if (static_cast<int64_t>(a.size()) < ra) a.insert(a.begin(), mode == 0 || mode == 1 ? d : 1);
    if (static_cast<int64_t>(bs.size()) < rb) bs.insert(bs.begin(), mode == 0 || mode == 2 ? d : 1);
  }
}

Case matmul_case(Rng& rng, int idx, bool fused) {
  Case c;
  c.cpu.opset("onnxscope.cpu", 1);
  Builder b{c, rng};
  Shape a, bs;
  matmul_shapes(rng, idx, a, bs);
  if (fused && bs.size() == 1) bs = {bs[0], pick(rng, 1, 9)};  // FusedMatMul's bias needs an N
  if (idx == kCasesPerKernel - 1) {  // zero-sized: K = 0 gives zeros, left to the reference
    a.back() = 0;
    bs[bs.size() == 1 ? 0 : bs.size() - 2] = 0;
    c.expect_onednn = false;
  }
  b.input("a", a);
  if (bs.size() == 2 && pick(rng, 0, 1)) b.constant("b", bs);
  else b.input("b", bs);
  if (fused) {
    const int64_t N = bs.back();
    const bool bias = pick(rng, 0, 2) > 0;
    Act act = random_activation(rng);
    std::vector<std::string> in{"a", "b"};
    if (bias) {
      b.weight("bias", {N});
      in.push_back("bias");
    }
    auto& n = c.cpu.node("FusedMatMul", in, {"y"}, "fused", "onnxscope.cpu");
    c.ref.node("MatMul", {"a", "b"}, {"t0"});
    if (bias) c.ref.node("Add", {"t0", "bias"}, {"t1"});
    apply_activation(c, n, act, bias ? "t1" : "t0", "y");
    c.what = "FusedMatMul " + act.op + (bias ? " bias" : "");
  } else {
    c.cpu.node("MatMul", {"a", "b"}, {"y"});
    c.ref.node("MatMul", {"a", "b"}, {"y"});
    c.what = "MatMul";
  }
  c.what += " " + shape_to_string(a) + " @ " + shape_to_string(bs);
  b.output("y");
  return c;
}

// Gemm / FusedGemm: transA/transB, alpha/beta, every C broadcast.
Case gemm_case(Rng& rng, int idx, bool fused) {
  Case c;
  set_opset(c, 13);
  c.cpu.opset("onnxscope.cpu", 1);
  Builder b{c, rng};
  const int64_t M = pick(rng, 1, 21), K = pick(rng, 1, 40), N = pick(rng, 1, 23);
  const bool ta = pick(rng, 0, 1), tb = pick(rng, 0, 1);
  const float alpha = choose<float>(rng, {1.f, 1.f, 0.5f, -2.f}), beta = choose<float>(rng, {1.f, 1.f, 0.25f, -1.f, 0.f});
  const int cmode = idx % 7;  // none, [N], [1,N], [M,1], [M,N], [1,1], []
  const std::vector<Shape> cshapes{{}, {N}, {1, N}, {M, 1}, {M, N}, {1, 1}, {}};
  Shape as = ta ? Shape{K, M} : Shape{M, K}, bs = tb ? Shape{N, K} : Shape{K, N};
  b.input("a", as);
  b.weight("b", bs);
  std::vector<std::string> in{"a", "b"};
  if (cmode != 0) {
    b.weight("c", cshapes[static_cast<size_t>(cmode)]);
    in.push_back("c");
  }
  auto set = [&](onnx::NodeProto& n) {
    attr_int(n, "transA", ta);
    attr_int(n, "transB", tb);
    attr_float(n, "alpha", alpha);
    attr_float(n, "beta", beta);
  };
  if (fused) {
    Act act = random_activation(rng);
    auto& n = c.cpu.node("FusedGemm", in, {"y"}, "fused", "onnxscope.cpu");
    set(n);
    set(c.ref.node("Gemm", in, {"t"}));
    apply_activation(c, n, act, "t", "y");
    c.what = "FusedGemm " + act.op;
  } else {
    set(c.cpu.node("Gemm", in, {"y"}));
    set(c.ref.node("Gemm", in, {"y"}));
    c.what = "Gemm";
  }
  c.what += " M" + std::to_string(M) + " K" + std::to_string(K) + " N" + std::to_string(N) + (ta ? " tA" : "") +
            (tb ? " tB" : "") + " alpha " + std::to_string(alpha) + " beta " + std::to_string(beta) + " C" +
            (cmode ? shape_to_string(cshapes[static_cast<size_t>(cmode)]) : "-");
  b.output("y");
  return c;
}

// MaxPool / AveragePool: 1-3 spatial dims, pads within the window, strides,
// dilations, ceil_mode, auto_pad, count_include_pad.
Case pool_case(Rng& rng, int idx, const std::string& op) {
  Case c;
  set_opset(c, 19);
  Builder b{c, rng};
  const int64_t k = idx % 3 == 2 ? 3 : pick(rng, 1, 2);
  Shape x{choose<int64_t>(rng, {1, 2, 3}), pick(rng, 1, 5)};
  std::vector<int64_t> kernel, strides, dil, pads(2 * k);
  for (int64_t d = 0; d < k; ++d) {
    const int64_t ks = pick(rng, 1, 3), dl = pick(rng, 1, 2), st = pick(rng, 1, 3);
    const int64_t span = (ks - 1) * dl + 1;
    x.push_back(span + pick(rng, 0, k == 3 ? 4 : 9));
    kernel.push_back(ks);
    strides.push_back(st);
    dil.push_back(dl);
    pads[d] = pick(rng, 0, span - 1);
    pads[k + d] = pick(rng, 0, span - 1);
  }
  const bool include_pad = op == "AveragePool" && pick(rng, 0, 1);
  const bool ceil = !include_pad && pick(rng, 0, 1);  // include_pad + ceil may need uncounted padding: see onednn_pool.cpp
  const std::string auto_pad = choose<std::string>(rng, {"NOTSET", "NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  b.input("x", x);
  for (auto* m : {&c.cpu, &c.ref}) {
    auto& n = m->node(op, {"x"}, {"y"});
    attr_ints(n, "kernel_shape", kernel);
    attr_ints(n, "strides", strides);
    attr_ints(n, "dilations", dil);
    attr_int(n, "ceil_mode", ceil);
    if (auto_pad == "NOTSET") attr_ints(n, "pads", pads);
    else attr_string(n, "auto_pad", auto_pad);
    if (op == "AveragePool") attr_int(n, "count_include_pad", include_pad);
  }
  c.what = op + " x" + shape_to_string(x) + " k" + shape_to_string(kernel) + " s" + shape_to_string(strides) + " d" +
           shape_to_string(dil) + " " + auto_pad + " p" + shape_to_string(pads) + (ceil ? " ceil" : "") +
           (include_pad ? " include_pad" : "");
  b.output("y");
  return c;
}

// Softmax / LogSoftmax: opset 13 any axis; opset 11 (2-D coercion) only the last axis goes to oneDNN.
Case softmax_case(Rng& rng, int idx, const std::string& op) {
  Case c;
  const bool old = idx % 4 == 3;
  set_opset(c, old ? 11 : 13);
  Builder b{c, rng};
  const int64_t r = pick(rng, 1, 4);
  Shape x;
  for (int64_t d = 0; d < r; ++d) x.push_back(pick(rng, 1, 11));
  int64_t axis = pick(rng, -r, r - 1);
  if (old) c.expect_onednn = axis == r - 1 || axis == -1;
  // From opset 13 an axis other than the last is kernels/math/softmax_axis.cpp's (cpu_ops_harness_test).
  if (!old && axis != r - 1 && axis != -1) axis = -1;
  if (idx == kCasesPerKernel - 1) {
    x[0] = 0;
    c.expect_onednn = false;
  }
  b.input("x", x, -4.f, 4.f);
  for (auto* m : {&c.cpu, &c.ref}) attr_int(m->node(op, {"x"}, {"y"}), "axis", axis);
  c.what = op + " opset " + std::to_string(old ? 11 : 13) + " x" + shape_to_string(x) + " axis " + std::to_string(axis);
  b.output("y");
  return c;
}

Case batchnorm_case(Rng& rng, int idx) {
  Case c;
  // Opset 8: from 9 on the cpu-simd affine kernel (kernels/nn/batch_norm.cpp) runs it, tested in cpu_ops_harness_test.
  set_opset(c, 8);
  Builder b{c, rng};
  const int64_t r = pick(rng, 2, 5);
  Shape x{choose<int64_t>(rng, {1, 2, 3}), pick(rng, 1, 9)};
  for (int64_t d = 2; d < r; ++d) x.push_back(pick(rng, 1, 9));
  b.input("x", x);
  const int64_t C = x[1];
  b.weight("scale", {C});
  b.weight("bias", {C});
  b.weight("mean", {C});
  if (pick(rng, 0, 1)) b.constant("var", {C}, 0.1f, 2.f);
  else b.input("var", {C}, 0.1f, 2.f);
  const float eps = choose<float>(rng, {1e-5f, 1e-3f, 0.1f});
  for (auto* m : {&c.cpu, &c.ref}) attr_float(m->node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}), "epsilon", eps);
  c.what = "BatchNormalization x" + shape_to_string(x);
  b.output("y");
  return c;
}

Case lrn_case(Rng& rng, int idx) {
  Case c;
  Builder b{c, rng};
  Shape x{choose<int64_t>(rng, {1, 2}), pick(rng, 1, 12), pick(rng, 1, 7), pick(rng, 1, 7)};
  const int64_t size = idx % 5 == 4 ? 2 * pick(rng, 1, 2) : 2 * pick(rng, 0, 3) + 1;  // even sizes: reference
  c.expect_onednn = size % 2 == 1;
  const float alpha = choose<float>(rng, {1e-4f, 0.01f, 0.5f}), beta = choose<float>(rng, {0.75f, 0.5f, 1.f}),
              bias = choose<float>(rng, {1.f, 2.f});
  b.input("x", x, -2.f, 2.f);
  for (auto* m : {&c.cpu, &c.ref}) {
    auto& n = m->node("LRN", {"x"}, {"y"});
    attr_int(n, "size", size);
    attr_float(n, "alpha", alpha);
    attr_float(n, "beta", beta);
    attr_float(n, "bias", bias);
  }
  c.what = "LRN x" + shape_to_string(x) + " size " + std::to_string(size);
  b.output("y");
  return c;
}

// LayerNormalization: any axis, scale with or without leading 1s, with and
// without a bias; a broadcast scale and a wanted Mean output go to another kernel.
Case layernorm_case(Rng& rng, int idx) {
  Case c;
  set_opset(c, 17);
  Builder b{c, rng};
  Shape x;
  for (int64_t d = 0, r = pick(rng, 1, 4); d < r; ++d) x.push_back(pick(rng, 1, 9));
  if (idx % 4 == 0) x.back() = 768;  // a transformer's hidden size
  const int64_t rank = static_cast<int64_t>(x.size());
  const int64_t axis = pick(rng, -rank, rank - 1);
  const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
  Shape normalized(x.begin() + static_cast<int64_t>(a), x.end());
  const bool broadcast_scale = idx % 7 == 6 && normalized.size() > 1 && normalized.back() > 1;
  Shape scale = normalized;
  if (broadcast_scale) scale.back() = 1;
  const bool bias = pick(rng, 0, 2) != 0;
  const float eps = choose<float>(rng, {1e-5f, 1e-12f, 0.1f});
  b.input("x", x, -3.f, 3.f);
  b.weight("scale", scale);
  if (bias) b.weight("bias", scale);
  c.expect_onednn = !broadcast_scale;
  for (auto* m : {&c.cpu, &c.ref}) {
    auto& n = m->node("LayerNormalization", bias ? std::vector<std::string>{"x", "scale", "bias"} : std::vector<std::string>{"x", "scale"}, {"y"});
    attr_int(n, "axis", axis);
    attr_float(n, "epsilon", eps);
  }
  c.what = "LayerNormalization x" + shape_to_string(x) + " axis " + std::to_string(axis) + (bias ? " bias" : "") +
           (broadcast_scale ? " broadcast scale" : "");
  b.output("y");
  return c;
}

// Sum: 1-4 same-shape inputs go to oneDNN; broadcasting ones to the reference.
Case sum_case(Rng& rng, int idx) {
  Case c;
  set_opset(c, 13);
  Builder b{c, rng};
  Shape x;
  for (int64_t d = pick(rng, 0, 4); d > 0; --d) x.push_back(pick(rng, 1, 13));
  const int64_t n = pick(rng, 1, 4);
  const bool broadcast = idx % 5 == 4 && n > 1 && !x.empty();
  if (idx == kCasesPerKernel - 1) {
    x.push_back(0);
    c.expect_onednn = false;
  }
  std::vector<std::string> in;
  for (int64_t i = 0; i < n; ++i) {
    in.push_back("x" + std::to_string(i));
    b.input(in.back(), broadcast && i == 1 ? Shape(x.begin() + 1, x.end()) : x);
  }
  if (broadcast) c.expect_onednn = false;
  c.cpu.node("Sum", in, {"y"});
  c.ref.node("Sum", in, {"y"});
  c.what = "Sum of " + std::to_string(n) + " x" + shape_to_string(x) + (broadcast ? " broadcast" : "");
  b.output("y");
  return c;
}

// The blocked layout (cpu/nchwc.h): a 2-D convolution (group 1 or depthwise,
// channel counts around the block size, plain or blocked input, with an
// activation) as ToNchwc -> NchwcConv -> FromNchwc against Conv + activation.
// The case for op ToNchwc / FromNchwc is the same chain: each kernel in it must run.
Case nchwc_case(Rng& rng, int idx, bool blocked_input = false, bool testing_conv = true) {
  Case c;
  c.cpu.opset("onnxscope.cpu", 1);
  Builder b{c, rng};
  // idx % 4 == 3: a problem oneDNN's Winograd kernels take (3x3, stride 1,
  // channels in whole 16-blocks; F(2x2,3x3) at batch 1, F(4x4,3x3) above).
  const bool winograd = idx % 4 == 3;
  const int64_t block = winograd ? 16 : choose<int64_t>(rng, {8, 16});
  const bool depthwise = idx % 4 == 1;
  // idx % 8 == 6: groups of whole 8-channel blocks (RegNet's grouped 3x3 convolutions).
  const int64_t groups = idx % 8 == 6 ? choose<int64_t>(rng, {2, 3, 5}) : 1;
  // idx % 8 == 7: a dilated Winograd-shaped problem, large enough that the
  // convolution runs on the input's phases (tensor/nchwc_phases.h; pads
  // need not be symmetric there); idx % 8 == 2: dilated on oneDNN's own kernel.
  const bool phases = winograd && idx % 8 == 7;
  // Batch 1 or 2 and at most 32 input channels there: F(4x4,3x3) (batch 2
  // and up) over 48 channels goes past this tolerance on a few elements in
  // a thousand cases (docs/cpu-engine.md), more often on the phases' larger
  // images; these cases are about the phases, the other Winograd ones keep
  // batch 8 and 48 channels.
  const int64_t N = phases ? pick(rng, 1, 2) : winograd ? choose<int64_t>(rng, {1, 8}) : choose<int64_t>(rng, {1, 2});
  int64_t C = depthwise ? pick(rng, 2, 40)
              : phases  ? choose<int64_t>(rng, {16, 32})
              : winograd ? choose<int64_t>(rng, {16, 32, 48})
                         : choose<int64_t>(rng, {3, 8, 16, 17, 24, 33});
  int64_t M = depthwise ? C : winograd ? choose<int64_t>(rng, {16, 32}) : pick(rng, 1, 40);
  if (groups > 1) {
    C = groups * choose<int64_t>(rng, {8, 16, 24});
    M = groups * choose<int64_t>(rng, {8, 16});
  }
  const bool plain_input = !depthwise && C < block && !blocked_input;
  std::vector<int64_t> dil{1, 1};
  if (phases) dil = choose<std::vector<int64_t>>(rng, {{2, 2}, {2, 1}, {1, 3}, {3, 3}, {2, 4}});
  if (idx % 8 == 2) dil = {pick(rng, 1, 2), pick(rng, 1, 3)};
  Shape x{N, C, pick(rng, 3, 12), pick(rng, 3, 12)};
  if (phases) x = {N, C, pick(rng, 10 * dil[0], 14 * dil[0]), pick(rng, 10 * dil[1], 14 * dil[1])};
  // Depthwise filters up to 7 wide (MobileNet's and EfficientNet's 5x5, ConvNeXt's 7x7).
  auto side = [&] { return winograd ? int64_t{3} : depthwise ? choose<int64_t>(rng, {1, 2, 3, 3, 5, 5, 7}) : pick(rng, 1, 3); };
  const int64_t kh = side(), kw = side();
  Shape w{M, depthwise ? 1 : C / groups, kh, kw};
  x[2] = std::max(x[2], (kh - 1) * dil[0] + 1);  // an output pixel at least, whatever the pads
  x[3] = std::max(x[3], (kw - 1) * dil[1] + 1);
  std::vector<int64_t> strides{winograd ? 1 : pick(rng, 1, 2), winograd ? 1 : pick(rng, 1, 2)},
      pads{pick(rng, 0, 1), pick(rng, 0, 1), pick(rng, 0, 1), pick(rng, 0, 1)};
  if (winograd) pads = {pads[0], pads[0], pads[0], pads[0]};  // oneDNN's Winograd takes symmetric pads
  if (phases) pads = {pick(rng, 0, dil[0]), pick(rng, 0, dil[1]), pick(rng, 0, dil[0]), pick(rng, 0, dil[1])};
  b.input("x", x);
  b.constant("w", w, -0.5f, 0.5f);
  std::vector<std::string> in{"x", "w"};
  if (pick(rng, 0, 1)) {
    b.constant("b", {M});
    in.push_back("b");
  }
  Act a = random_activation(rng);
  if (winograd) a = pick(rng, 0, 1) ? Act{"Relu", {}} : Act{"", {}};  // the post-ops Winograd takes
  auto set = [&](onnx::NodeProto& n) {
    if (depthwise) attr_int(n, "group", C);
    if (groups > 1) attr_int(n, "group", groups);
    attr_ints(n, "strides", strides);
    attr_ints(n, "pads", pads);
    if (dil != std::vector<int64_t>{1, 1}) attr_ints(n, "dilations", dil);
  };
  std::vector<std::string> cin = in;
  if (!plain_input) {
    attr_int(c.cpu.node("ToNchwc", {"x"}, {"xb"}, "to", "onnxscope.cpu"), "block", block);
    cin[0] = "xb";
  }
  // Every third case adds a residual R through the sum input: Y = act(Conv(X) + R).
  const bool sum = idx % 3 == 0;
  if (sum) {
    Shape y{N, M};
    for (size_t d = 0; d < 2; ++d) y.push_back((x[2 + d] + pads[d] + pads[2 + d] - (w[2 + d] - 1) * dil[d] - 1) / strides[d] + 1);
    b.input("r", y);
    attr_int(c.cpu.node("ToNchwc", {"r"}, {"rb"}, "to_r", "onnxscope.cpu"), "block", block);
    if (cin.size() == 2) cin.push_back("");
    cin.push_back("rb");
    // oneDNN's sum post-op is wrong for strided convolutions, and crashes where
    // a whole output row or column reads only padding: the kernel declines both.
    const int64_t ext[2] = {(w[2] - 1) * dil[0] + 1, (w[3] - 1) * dil[1] + 1};
    const bool pad_past_kernel = pads[0] >= ext[0] || pads[2] >= ext[0] || pads[1] >= ext[1] || pads[3] >= ext[1];
    if (testing_conv) c.expect_onednn = strides[0] == 1 && strides[1] == 1 && !pad_past_kernel;
  }
  auto& n = c.cpu.node("NchwcConv", cin, {"yb"}, "conv", "onnxscope.cpu");
  set(n);
  attr_int(n, "block", block);
  attr_int(n, "plain_input", plain_input ? 1 : 0);
  attr_int(c.cpu.node("FromNchwc", {"yb"}, {"y"}, "from", "onnxscope.cpu"), "channels", M);
  set(c.ref.node("Conv", in, {"t"}));
  if (sum) c.ref.node("Add", {"t", "r"}, {"t_sum"});
  apply_activation(c, n, a, sum ? "t_sum" : "t", "y");
  c.what = std::string(sum ? "sum " : "") + "NchwcConv block " + std::to_string(block) + (plain_input ? " plain input" : "") + " " + a.op + " x" +
           shape_to_string(x) + " w" + shape_to_string(w) + (depthwise ? " depthwise" : "") + (groups > 1 ? " groups " + std::to_string(groups) : "") +
           (dil != std::vector<int64_t>{1, 1} ? " dilations " + shape_to_string(dil) : "");
  b.output("y");
  return c;
}

// NchwcPool: ToNchwc -> NchwcPool -> FromNchwc against the plain pooling,
// channel counts with and without a padded last block.
Case nchwc_pool_case(Rng& rng, int idx) {
  Case c;
  c.cpu.opset("onnxscope.cpu", 1);
  Builder b{c, rng};
  const int64_t block = choose<int64_t>(rng, {8, 16});
  const std::string op = std::vector<std::string>{"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"}[idx % 4];
  const int64_t C = choose<int64_t>(rng, {3, 8, 16, 17, 24, 33});
  Shape x{choose<int64_t>(rng, {1, 2}), C, pick(rng, 3, 12), pick(rng, 3, 12)};
  b.input("x", x);
  attr_int(c.cpu.node("ToNchwc", {"x"}, {"xb"}, "to", "onnxscope.cpu"), "block", block);
  auto& p = c.cpu.node("NchwcPool", {"xb"}, {"yb"}, "pool", "onnxscope.cpu");
  auto& r = c.ref.node(op, {"x"}, {"y"});
  attr_string(p, "op", op);
  attr_int(p, "channels", C);
  attr_int(p, "block", block);
  std::string what = op;
  if (op == "MaxPool" || op == "AveragePool") {
    const std::vector<int64_t> k{pick(rng, 1, 3), pick(rng, 1, 3)};
    const std::vector<int64_t> s{pick(rng, 1, 2), pick(rng, 1, 2)};
    const std::vector<int64_t> pads{pick(rng, 0, k[0] - 1), pick(rng, 0, k[1] - 1), pick(rng, 0, k[0] - 1),
                                    pick(rng, 0, k[1] - 1)};
    for (auto* n : {&p, &r}) {
      attr_ints(*n, "kernel_shape", k);
      attr_ints(*n, "strides", s);
      attr_ints(*n, "pads", pads);
      if (op == "AveragePool" && idx % 8 == 1) attr_int(*n, "count_include_pad", 1);
    }
    what += " k" + shape_to_string(k) + " s" + shape_to_string(s) + " p" + shape_to_string(pads);
  }
  attr_int(c.cpu.node("FromNchwc", {"yb"}, {"y"}, "from", "onnxscope.cpu"), "channels", C);
  c.what = what + " block " + std::to_string(block) + " x" + shape_to_string(x);
  b.output("y");
  return c;
}

using Generator = std::function<Case(Rng&, int)>;

const std::map<std::string, Generator>& generators() {
  static const std::map<std::string, Generator> g{
      {"Conv", [](Rng& r, int i) { return conv_case(r, i, false); }},
      {"FusedConv", [](Rng& r, int i) { return conv_case(r, i, true); }},
      {"ConvTranspose", [](Rng& r, int i) { return deconv_case(r, i); }},
      {"MatMul", [](Rng& r, int i) { return matmul_case(r, i, false); }},
      {"FusedMatMul", [](Rng& r, int i) { return matmul_case(r, i, true); }},
      {"Gemm", [](Rng& r, int i) { return gemm_case(r, i, false); }},
      {"FusedGemm", [](Rng& r, int i) { return gemm_case(r, i, true); }},
      {"MaxPool", [](Rng& r, int i) { return pool_case(r, i, "MaxPool"); }},
      {"AveragePool", [](Rng& r, int i) { return pool_case(r, i, "AveragePool"); }},
      {"Softmax", [](Rng& r, int i) { return softmax_case(r, i, "Softmax"); }},
      {"LogSoftmax", [](Rng& r, int i) { return softmax_case(r, i, "LogSoftmax"); }},
      {"BatchNormalization", [](Rng& r, int i) { return batchnorm_case(r, i); }},
      {"LayerNormalization", [](Rng& r, int i) { return layernorm_case(r, i); }},
      {"LRN", [](Rng& r, int i) { return lrn_case(r, i); }},
      {"Sum", [](Rng& r, int i) { return sum_case(r, i); }},
      {"NchwcConv", [](Rng& r, int i) { return nchwc_case(r, i); }},
      {"ToNchwc", [](Rng& r, int i) { return nchwc_case(r, i, true, false); }},  // never a plain input: ToNchwc runs
      {"FromNchwc", [](Rng& r, int i) { return nchwc_case(r, i, false, false); }},
      {"NchwcPool", [](Rng& r, int i) { return nchwc_pool_case(r, i); }},
  };
  return g;
}

// --- running ---------------------------------------------------------------------

struct KernelLog : Observer {
  std::vector<std::pair<std::string, std::string>> ran;  // (op_type, kernel)
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.node->op_type, std::string(e.kernel)); }
};

std::shared_ptr<const Model> load(const ModelBuilder& b) {
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

// Runs one case on both engines; returns the number of mismatching elements.
void check_case(Engine& cpu, Engine& ref, const std::string& op, Case& c) {
  SCOPED_TRACE(c.what);
  auto ref_model = load(c.ref), cpu_model = load(c.cpu);
  ASSERT_TRUE(ref_model && cpu_model);
  NamedValues want = ref.prepare(ref_model)->run(c.inputs);
  KernelLog log;
  RunOptions opts;
  opts.observer = &log;
  opts.capture_original = false;
  NamedValues got = cpu.prepare(cpu_model)->run(c.inputs, opts);
  std::string kernel = "(not run)";
  for (const auto& [type, k] : log.ran)
    if (type == op) kernel = k;
  EXPECT_EQ(kernel == "onednn", c.expect_onednn) << op << " ran on " << kernel;
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(want.size(), 1u);
  const Tensor& g = got[0].second.tensor();
  const Tensor& w = want[0].second.tensor();
  ASSERT_EQ(g.shape(), w.shape());
  ASSERT_EQ(g.dtype(), DataType::Float);
  int bad = 0;
  for (uint64_t i = 0; i < g.element_count(); ++i) {
    const double gv = g.data<float>()[i], wv = w.data<float>()[i];
    if (!(std::abs(gv - wv) <= kAtol + kRtol * std::abs(wv)) && ++bad <= 3)
      ADD_FAILURE() << "element " << i << " of " << shape_to_string(g.shape()) << ": cpu " << gv << " reference " << wv;
  }
  EXPECT_EQ(bad, 0);
}

// The CPU engine without the kernels registered ahead of a oneDNN kernel of
// the same op (our own Softmax, pooling, depthwise convolution, batch norm):
// they would take these problems, and oneDNN's would go unchecked.
std::unique_ptr<Engine> onednn_first_engine(int threads) {
  CpuOptions o{.threads = threads};
  const auto& all = cpu_kernels().all();
  for (size_t i = 0; i < all.size(); ++i)
    for (size_t j = i + 1; j < all.size(); ++j)
      if (all[j].impl == "onednn" && all[i].impl != "onednn" && all[j].op_type == all[i].op_type &&
          all[j].domain == all[i].domain)
        o.disabled_kernels.insert(all[i].impl);
  return make_cpu_engine(o);
}

void run_all(int threads) {
  auto cpu = onednn_first_engine(threads);
  auto ref = make_reference_engine();
  std::set<std::string> seen;
  for (const KernelDef& k : cpu_kernels().all()) {
    if (k.impl != "onednn") continue;  // other families (onednn-eltwise too) have their own tests: cpu_ops_harness_test
    seen.insert(k.op_type);
    auto it = generators().find(k.op_type);
    ASSERT_NE(it, generators().end()) << "no problem generator for oneDNN kernel " << k.op_type;
    for (int i = 0; i < kCasesPerKernel; ++i) {
      Rng rng(static_cast<uint32_t>(1000 * i + std::hash<std::string>{}(k.op_type) % 1000));
      Case c = it->second(rng, i);
      check_case(*cpu, *ref, k.op_type, c);
      if (testing::Test::HasFatalFailure()) return;
    }
  }
  // Every generator is exercised by a registered kernel (no stale cases).
  for (const auto& [op, gen] : generators()) EXPECT_TRUE(seen.count(op)) << op << " has no oneDNN kernel";
}

}  // namespace

// Gemm's alpha with an activation that has a linear step of its own
// (HardSigmoid: linear, then clip) and B a graph input (the oneDNN matmul,
// not sgemm on packed weights): oneDNN 2.6 gave values off by up to 0.5 while
// alpha was a linear post-op ahead of HardSigmoid's; alpha is now the output
// scale. Found by 400 cases of the FusedGemm generator (16 never drew one).
TEST(CpuKernels, FusedGemmAlphaBeforeAnActivationWithALinearStep) {
  auto cpu = onednn_first_engine(2);
  auto ref = make_reference_engine();
  int idx = 0;
  for (float alpha : {0.5f, -2.0f})
    for (float beta : {0.0f, 0.25f})
      for (int tb : {0, 1}) {
        Case c;
        set_opset(c, 13);
        c.cpu.opset("onnxscope.cpu", 1);
        Rng rng(static_cast<uint32_t>(77 + idx++));
        Builder b{c, rng};
        const int64_t M = 17, K = 14, N = 3;
        b.input("a", {M, K});
        b.input("b", tb ? Shape{N, K} : Shape{K, N});
        b.constant("c", {N});
        auto set = [&](onnx::NodeProto& n) {
          attr_int(n, "transB", tb);
          attr_float(n, "alpha", alpha);
          attr_float(n, "beta", beta);
        };
        auto& n = c.cpu.node("FusedGemm", {"a", "b", "c"}, {"y"}, "fused", "onnxscope.cpu");
        set(n);
        set(c.ref.node("Gemm", {"a", "b", "c"}, {"t"}));
        apply_activation(c, n, Act{"HardSigmoid", {0.2f, 0.5f}}, "t", "y");
        c.what = "FusedGemm HardSigmoid alpha " + std::to_string(alpha) + " beta " + std::to_string(beta) + (tb ? " tB" : "");
        b.output("y");
        check_case(*cpu, *ref, "FusedGemm", c);
      }
}

TEST(CpuKernels, OneDnnMatchesReference) { run_all(0); }

TEST(CpuKernels, OneDnnMatchesReferenceSingleThread) { run_all(1); }

// oneDNN here runs on OpenMP: a oneDNN kernel must leave OpenMP's thread count
// on the calling thread equal to the engine's --threads.
TEST(CpuKernels, OneDnnHonoursThreadCount) {
  auto omp_max = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  ASSERT_NE(omp_max, nullptr) << "libdnnl is expected to bring libgomp";
  auto ref = make_reference_engine();
  for (int threads : {1, 2, 1}) {
    auto cpu = onednn_first_engine(threads);
    Rng rng(7);
    Case c = conv_case(rng, 0, false);
    check_case(*cpu, *ref, "Conv", c);
    EXPECT_EQ(omp_max(), threads);
  }
}
