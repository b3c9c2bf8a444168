// The nhwc-int8-layout pass (passes/nhwc_int8_layout.cpp) and the kernels it
// leads to (NhwcQLinearConv, NhwcMaxPool, ToNhwc, FromNhwc): which nodes it
// rewrites, and the rewritten models on the CPU engine against the reference
// on the originals, bit for bit, on random convolution and pooling problems,
// with the fast kernels and with their plain (fused-reference) forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/cpu_features.h"
#include "cpu/nhwc.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "pass_test_util.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

using namespace onnxscope::test::passes;

// Adds QLinearConv `name`: x (type tx) -> y (type ty), weights [M, C/group, k...]
// with a scalar zero point, per-tensor scales, and a bias when `bias`.
onnx::NodeProto& add_qconv(ModelBuilder& b, Rng& rng, const std::string& name, const std::string& x, const std::string& y, int64_t C,
               int64_t M, std::vector<int64_t> kernel, int64_t group, DataType ty, bool bias) {
  Shape ws{M, C / group};
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  b.initializer(raw(name + "_w", bytes(rng, DataType::Int8, ws, 64, 191)));
  b.initializer(raw(name + "_wz", bytes(rng, DataType::Int8, {}, 126, 130)));
  b.initializer(make_float_tensor(name + "_ws", {}, {0.004f}));
  b.initializer(make_float_tensor(name + "_ys", {}, {0.05f}));
  b.initializer(raw(name + "_yz", bytes(rng, ty, {}, 100, 150)));
  std::vector<std::string> ins = {x, "xs", "xz", name + "_w", name + "_ws", name + "_wz", name + "_ys", name + "_yz"};
  if (bias) {
    Tensor t = Tensor::zeros(DataType::Int32, {M});
    for (int64_t m = 0; m < M; ++m) t.mutable_data<int32_t>()[m] = static_cast<int32_t>(pick(rng, -2000, 2000));
    b.initializer(raw(name + "_b", t));
    ins.push_back(name + "_b");
  }
  auto& n = b.node("QLinearConv", ins, {y}, name);
  attr_int(n, "group", group);
  return n;
}

struct Kernels : Observer {
  std::vector<std::pair<std::string, std::string>> ran;  // op, kernel
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.node->op_type, std::string(e.kernel)); }
};

// The rewritten model on the CPU engine (no further passes) against the
// reference on the original, every output bit for bit; the kernels that ran.
Kernels expect_bit_identical(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten,
                             const NamedValues& inputs, std::set<std::string> disabled = {}) {
  auto want = make_reference_engine()->prepare(original)->run(inputs);
  CpuOptions o;
  o.opt_level = 0;
  if (disabled.count("cpu-int8")) disabled.insert("cpu-int8-vbmi");  // the depthwise kernel's other form
  o.disabled_kernels = std::move(disabled);
  Kernels k;
  RunOptions ro;
  ro.observer = &k;
  auto got = make_cpu_engine(o)->prepare(rewritten)->run(inputs, ro);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    const Tensor& a = want[i].second.tensor();
    const Tensor& b = got[i].second.tensor();
    EXPECT_EQ(want[i].first, got[i].first);
    EXPECT_EQ(a.dtype(), b.dtype()) << want[i].first;
    EXPECT_EQ(a.shape(), b.shape()) << want[i].first;
    if (a.dtype() == b.dtype() && a.shape() == b.shape()) {
      EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.byte_size()), 0) << want[i].first << " differs";
    }
  }
  return k;
}

// Every node of `op` ran on one of `kernels`.
void expect_kernel(const Kernels& k, const std::string& op, const std::set<std::string>& kernels) {
  bool seen = false;
  for (const auto& [o, ker] : k.ran)
    if (o == op) {
      seen = true;
      EXPECT_TRUE(kernels.count(ker)) << op << " ran on " << ker;
    }
  EXPECT_TRUE(seen) << op << " did not run";
}

// The depthwise 8-bit kernel's form that runs here: four taps to a lane
// where the CPU has AVX-512 VBMI (its byte permute).
std::string depthwise_int8_kernel() { return ONNXSCOPE_CPU_AVX512("avx512vbmi") ? "cpu-int8-vbmi" : "cpu-int8"; }

// A QLinearConv problem as the random tests draw it: X [xs] of tx, W [ws]
// int8 (values 64..191 or 20..235 as `wide_weights`, zero points 118..138,
// one per output channel where per_channel), scales 0.02 (x), step * 1..max
// (w), y_scale (0: infinite multipliers, and X at its zero point: sums of 0),
// a bias of +-bias_range where bias > 0.
struct QConv {
  DataType tx = DataType::Uint8, ty = DataType::Uint8;
  Shape xs, ws;
  int64_t group = 1;
  std::vector<int64_t> strides, dilations, pads;
  bool per_channel = false, wide_weights = false;
  float w_scale_step = 0.001f, y_scale = 0.3f;
  int64_t w_scale_max = 20, bias = 20000;
};

// The model x -> QLinearConv -> "c" (the caller may add readers of it and
// outputs; else "c" is the output) and its input.
std::pair<ModelBuilder, NamedValues> qconv_model(Rng& rng, const QConv& q) {
  const int64_t M = q.ws[0];
  ModelBuilder b(17);
  b.input("x", q.tx, std::vector<DimSpec>(q.xs.begin(), q.xs.end()));
  b.initializer(make_float_tensor("xs", {}, {0.02f}));
  const Tensor xz = bytes(rng, q.tx, {}, 60, 200);
  b.initializer(raw("xz", xz));
  b.initializer(raw("w", q.wide_weights ? bytes(rng, DataType::Int8, q.ws, 20, 235) : bytes(rng, DataType::Int8, q.ws, 64, 191)));
  b.initializer(raw("wz", bytes(rng, DataType::Int8, q.per_channel ? Shape{M} : Shape{}, 118, 138)));
  std::vector<float> wscale(static_cast<size_t>(q.per_channel ? M : 1));
  for (auto& v : wscale) v = q.w_scale_step * static_cast<float>(pick(rng, 1, q.w_scale_max));
  b.initializer(make_float_tensor("ws", q.per_channel ? std::vector<int64_t>{M} : std::vector<int64_t>{}, wscale));
  b.initializer(make_float_tensor("ys", {}, {q.y_scale}));
  b.initializer(raw("yz", bytes(rng, q.ty, {}, 100, 150)));
  std::vector<std::string> ins = {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
  if (q.bias > 0) {
    Tensor t = Tensor::zeros(DataType::Int32, {M});
    for (int64_t m = 0; m < M; ++m) t.mutable_data<int32_t>()[m] = static_cast<int32_t>(pick(rng, -q.bias, q.bias));
    b.initializer(raw("bias", t));
    ins.push_back("bias");
  }
  auto& n = b.node("QLinearConv", ins, {"c"}, "conv");
  attr_int(n, "group", q.group);
  if (!q.strides.empty()) attr_ints(n, "strides", q.strides);
  if (!q.dilations.empty()) attr_ints(n, "dilations", q.dilations);
  if (!q.pads.empty()) attr_ints(n, "pads", q.pads);
  Tensor x = bytes(rng, q.tx, q.xs);
  if (q.y_scale == 0.0f)
    for (uint64_t e = 0; e < x.element_count(); ++e) std::memcpy(x.mutable_raw() + e, xz.raw(), 1);
  return {std::move(b), NamedValues{{"x", Value(x)}}};
}

// QuantizeLinear -> stem QLinearConv (3 channels, stride 2) -> MaxPool ->
// depthwise QLinearConv -> 1x1 QLinearConv -> QLinearAdd with the pool's
// output -> 1x1 QLinearConv -> DequantizeLinear; the Add's output is a graph
// output too.
ModelBuilder small_qop_cnn(Rng& rng) {
  ModelBuilder b(17);
  b.opset("com.microsoft", 1);
  b.input("image", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{17}, int64_t{15}});
  b.initializer(make_float_tensor("xs", {}, {0.02f}));
  b.initializer(raw("xz", bytes(rng, DataType::Uint8, {}, 120, 130)));
  b.node("QuantizeLinear", {"image", "xs", "xz"}, {"q"}, "quantize");
  auto& stem = add_qconv(b, rng, "stem", "q", "c0", 3, 16, {3, 3}, 1, DataType::Uint8, true);
  attr_ints(stem, "strides", {2, 2});
  attr_ints(stem, "pads", {1, 1, 1, 1});
  auto& pool = b.node("MaxPool", {"c0"}, {"p0"}, "pool");
  attr_ints(pool, "kernel_shape", {3, 3});
  attr_ints(pool, "pads", {1, 1, 1, 1});
  attr_ints(add_qconv(b, rng, "dw", "p0", "c1", 16, 16, {3, 3}, 16, DataType::Uint8, true), "pads", {1, 1, 1, 1});
  add_qconv(b, rng, "pw", "c1", "c2", 16, 16, {1, 1}, 1, DataType::Uint8, false);
  // QLinearAdd's quantization of its inputs reuses the convolutions' (xs, xz: same for all).
  b.node("QLinearAdd", {"c2", "xs", "xz", "p0", "xs", "xz", "xs", "xz"}, {"a"}, "residual", "com.microsoft");
  add_qconv(b, rng, "head", "a", "c3", 16, 24, {1, 1}, 1, DataType::Uint8, true);
  b.node("DequantizeLinear", {"c3", "xs", "xz"}, {"y"}, "dequantize");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{24}, int64_t{9}, int64_t{8}});
  b.output("a", DataType::Uint8, {int64_t{2}, int64_t{16}, int64_t{9}, int64_t{8}});
  return b;
}

TEST(NhwcInt8Layout, AQOperatorChainStaysChannelsLast) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: QLinearConv is the reference's, the pass does nothing";
  Rng rng(5);
  auto original = load_model(small_qop_cnn(rng));
  auto m = apply(*original, cpu::nhwc_int8_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"QuantizeLinear", "ToNhwc", "NhwcQLinearConv", "NhwcMaxPool",
                                               "NhwcQLinearConv", "NhwcQLinearConv", "QLinearAdd", "NhwcQLinearConv",
                                               "FromNhwc", "DequantizeLinear", "FromNhwc"}));
  EXPECT_EQ(m->graph.nodes[8].outputs[0], "c3");  // the original names come back
  EXPECT_EQ(m->graph.nodes[10].outputs[0], "a");   // a graph output: restored at the end
  EXPECT_EQ(m->graph.nodes[6].inputs[0], m->graph.nodes[5].outputs[0]);
  EXPECT_EQ(m->graph.nodes[6].inputs[3], m->graph.nodes[3].outputs[0]);
  EXPECT_EQ(provenance(m->graph.nodes[2]), (std::vector<std::string>{"stem"}));
  InputSpec spec;
  spec.seed = 3;
  const NamedValues inputs = make_inputs(*original, spec);
  const Kernels k = expect_bit_identical(original, m, inputs);
  // The depthwise and 1x1 convolutions (dw, pw, head) on the own kernels, the stem on oneDNN's.
  std::vector<std::string> conv_kernels;
  for (const auto& [op, kernel] : k.ran)
    if (op == "NhwcQLinearConv") conv_kernels.push_back(kernel);
  EXPECT_EQ(conv_kernels, (std::vector<std::string>{"onednn-int8", depthwise_int8_kernel(), "cpu-int8", "cpu-int8"}));
  expect_kernel(k, "NhwcMaxPool", {"cpu-simd"});
  expect_kernel(k, "ToNhwc", {"cpu-simd"});
  expect_kernel(k, "FromNhwc", {"cpu-simd"});
  // oneDNN's for every convolution, and the plain forms of the four operators: the same bits.
  expect_kernel(expect_bit_identical(original, m, inputs, {"cpu-int8"}), "NhwcQLinearConv", {"onednn-int8"});
  const Kernels plain = expect_bit_identical(original, m, inputs, {"cpu-int8", "onednn-int8", "cpu-simd"});
  expect_kernel(plain, "NhwcQLinearConv", {"fused-reference"});
  expect_kernel(plain, "NhwcMaxPool", {"fused-reference"});
  // And the whole engine, every pass, on the original.
  auto want = make_reference_engine()->prepare(original)->run(inputs);
  auto got = make_cpu_engine()->prepare(original)->run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(std::memcmp(want[i].second.tensor().raw(), got[i].second.tensor().raw(), want[i].second.tensor().byte_size()), 0);
}

// A QLinearAdd whose scale is not a constant, and a MaxPool with Indices,
// stay plain: the channels-last value is made plain for them.
TEST(NhwcInt8Layout, WhatItCannotKeepChannelsLastReadsThePlainValue) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  Rng rng(6);
  ModelBuilder b(17);
  b.opset("com.microsoft", 1);
  b.input("x", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{6}, int64_t{6}});
  b.initializer(make_float_tensor("xs", {}, {0.02f}));
  b.initializer(raw("xz", bytes(rng, DataType::Uint8, {}, 120, 130)));
  b.input("a_scale", DataType::Float, {});  // given at run time: not known to be one value
  add_qconv(b, rng, "a", "x", "c0", 8, 8, {1, 1}, 1, DataType::Uint8, false);
  attr_ints(add_qconv(b, rng, "b", "x", "c1", 8, 8, {3, 3}, 1, DataType::Uint8, false), "pads", {1, 1, 1, 1});
  b.node("QLinearAdd", {"c0", "a_scale", "xz", "c1", "xs", "xz", "xs", "xz"}, {"s"}, "add", "com.microsoft");
  auto& pool = b.node("MaxPool", {"c1"}, {"p", "i"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  b.output("s", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{6}, int64_t{6}});
  b.output("p", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{5}, int64_t{5}});
  b.output("i", DataType::Int64, {int64_t{1}, int64_t{8}, int64_t{5}, int64_t{5}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nhwc_int8_layout, true);
  // x is reordered once for both convolutions.
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNhwc", "NhwcQLinearConv", "NhwcQLinearConv", "FromNhwc",
                                               "FromNhwc", "QLinearAdd", "MaxPool"}));
  Tensor scale = Tensor::zeros(DataType::Float, {});
  scale.mutable_data<float>()[0] = 0.03f;
  expect_bit_identical(original, m, {{"x", Value(bytes(rng, DataType::Uint8, {1, 8, 6, 6}))}, {"a_scale", Value(scale)}});
}

// EfficientNet's block as onnxruntime's quantizer writes it: QLinearConv,
// SiLU as QLinearSigmoid and QLinearMul, a squeeze-excitation (DequantizeLinear,
// ReduceMean over H and W, QuantizeLinear, two 1x1 QLinearConvs, the gate's
// QLinearSigmoid, its QLinearMul with the image), then a projection; and a
// QLinearMul by a plain gate given as an input ([N, C, 1, 1]). All of it
// channels last, at opsets 17 (ReduceMean's axes an attribute) and 18 (an
// input); bit for bit.
TEST(NhwcInt8Layout, SqueezeExcitationStaysChannelsLast) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  for (const int64_t opset : {17, 18}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Rng rng(7);
    ModelBuilder b(opset);
    b.opset("com.microsoft", 1);
    b.input("x", DataType::Uint8, {int64_t{1}, int64_t{24}, int64_t{9}, int64_t{9}});
    b.input("g", DataType::Uint8, {int64_t{1}, int64_t{16}, int64_t{1}, int64_t{1}});
    b.initializer(make_float_tensor("xs", {}, {0.02f}));
    b.initializer(raw("xz", bytes(rng, DataType::Uint8, {}, 120, 130)));
    b.initializer(make_float_tensor("ss", {}, {1.0f / 256}));
    b.initializer(raw("sz", bytes(rng, DataType::Uint8, {}, 0, 0)));
    attr_ints(add_qconv(b, rng, "expand", "x", "e", 24, 16, {3, 3}, 1, DataType::Uint8, true), "pads", {1, 1, 1, 1});
    b.node("QLinearSigmoid", {"e", "xs", "xz", "ss", "sz"}, {"es"}, "sig", "com.microsoft");
    b.node("QLinearMul", {"e", "xs", "xz", "es", "ss", "sz", "xs", "xz"}, {"silu"}, "silu", "com.microsoft");
    b.node("DequantizeLinear", {"silu", "xs", "xz"}, {"silu_f"}, "dq");
    auto& mean = b.node("ReduceMean", opset >= 18 ? std::vector<std::string>{"silu_f", "axes"} : std::vector<std::string>{"silu_f"},
                        {"pooled"}, "pool");
    if (opset >= 18) b.initializer(make_int64_tensor("axes", {2}, {-1, -2}));
    else attr_ints(mean, "axes", {2, 3});
    b.node("QuantizeLinear", {"pooled", "xs", "xz"}, {"pooled_q"}, "q");
    add_qconv(b, rng, "fc1", "pooled_q", "f1", 16, 4, {1, 1}, 1, DataType::Uint8, true);
    add_qconv(b, rng, "fc2", "f1", "f2", 4, 16, {1, 1}, 1, DataType::Uint8, true);
    b.node("QLinearSigmoid", {"f2", "xs", "xz", "ss", "sz"}, {"gate"}, "gate", "com.microsoft");
    b.node("QLinearMul", {"gate", "ss", "sz", "silu", "xs", "xz", "xs", "xz"}, {"scaled"}, "excite", "com.microsoft");
    b.node("QLinearMul", {"scaled", "xs", "xz", "g", "ss", "sz", "xs", "xz"}, {"gated"}, "by_input", "com.microsoft");
    add_qconv(b, rng, "project", "gated", "y", 16, 8, {1, 1}, 1, DataType::Uint8, false);
    b.output("y", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{9}, int64_t{9}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::nhwc_int8_layout, true);
    EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNhwc", "NhwcQLinearConv", "QLinearSigmoid", "QLinearMul",
                                                 "DequantizeLinear", "ReduceMean", "QuantizeLinear", "NhwcQLinearConv",
                                                 "NhwcQLinearConv", "QLinearSigmoid", "QLinearMul", "ToNhwc", "QLinearMul",
                                                 "NhwcQLinearConv", "FromNhwc"}));
    NamedValues inputs{{"x", Value(bytes(rng, DataType::Uint8, {1, 24, 9, 9}))},
                       {"g", Value(bytes(rng, DataType::Uint8, {1, 16, 1, 1}))}};
    const Kernels k = expect_bit_identical(original, m, inputs);
    expect_kernel(k, "QLinearSigmoid", {"cpu-simd"});
    expect_bit_identical(original, m, inputs, {"cpu-int8", "onednn-int8", "cpu-simd"});
  }
}

// fuse-quantized-lookup (passes/fuse_quantized_lookup.cpp): DequantizeLinear,
// float activations, QuantizeLinear -> QuantizedLookup with the reference's
// 256 results, for uint8 and int8 (int8 out of uint8 too); a chain whose
// activation is also a graph output, and a DequantizeLinear straight into a
// QuantizeLinear, stay. Every byte value in the input; bit for bit on the
// lookup kernel and its plain form.
TEST(FuseQuantizedLookup, ActivationsBetweenDequantizeAndQuantizeBecomeATable) {
  for (const DataType t : {DataType::Uint8, DataType::Int8}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Rng rng(11);
    ModelBuilder b(17);
    b.input("x", t, {int64_t{2}, int64_t{8}, int64_t{4}, int64_t{4}});
    b.initializer(make_float_tensor("s", {}, {0.05f}));
    b.initializer(raw("z", bytes(rng, t, {}, 120, 136)));
    b.initializer(make_float_tensor("s2", {}, {1.0f / 200}));
    b.initializer(raw("z2", bytes(rng, DataType::Int8, {}, 120, 120)));
    b.initializer(make_float_tensor("lo", {}, {0.1f}));
    b.initializer(make_float_tensor("hi", {}, {0.8f}));
    b.node("DequantizeLinear", {"x", "s", "z"}, {"d"}, "dq");
    attr_float(b.node("HardSigmoid", {"d"}, {"h"}, "hs"), "alpha", 0.2f);
    b.node("Clip", {"h", "lo", "hi"}, {"c"}, "clip");
    b.node("QuantizeLinear", {"c", "s2", "z2"}, {"y"}, "q");  // int8 out
    b.node("DequantizeLinear", {"x", "s", "z"}, {"d2"}, "dq2");
    b.node("Sigmoid", {"d2"}, {"sg"}, "sig");
    b.node("QuantizeLinear", {"sg", "s2", "z"}, {"y2"}, "q2");  // x's type out
    b.node("DequantizeLinear", {"x", "s", "z"}, {"d3"}, "dq3");  // straight back: left
    b.node("QuantizeLinear", {"d3", "s2", "z"}, {"y3"}, "q3");
    b.node("DequantizeLinear", {"x", "s", "z"}, {"d4"}, "dq4");  // its activation is an output too: left
    b.node("Relu", {"d4"}, {"r4"}, "relu");
    b.node("QuantizeLinear", {"r4", "s2", "z"}, {"y4"}, "q4");
    for (const char* o : {"y", "y2", "y3", "y4", "r4"}) b.output_untyped(o);
    auto original = load_model(b);
    auto m = apply(*original, cpu::fuse_quantized_lookup, true);
    EXPECT_EQ(op_types(*m), (std::vector<std::string>{"QuantizedLookup", "QuantizedLookup", "DequantizeLinear",
                                                 "QuantizeLinear", "DequantizeLinear", "Relu", "QuantizeLinear"}));
    EXPECT_EQ(provenance(m->graph.nodes[0]), (std::vector<std::string>{"dq", "hs", "clip", "q"}));
    Tensor x = Tensor::zeros(t, {2, 8, 4, 4});
    for (uint64_t e = 0; e < x.element_count(); ++e) reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(e);
    const NamedValues inputs{{"x", Value(x)}};
    expect_kernel(expect_bit_identical(original, m, inputs), "QuantizedLookup", {"cpu-simd"});
    expect_kernel(expect_bit_identical(original, m, inputs, {"cpu-simd"}), "QuantizedLookup", {"fused-reference"});
  }
}

// DenseNet's pattern as onnxruntime's quantizer writes it: a QLinearConcat
// along the channels of a convolution's output and a plain input of rank 4
// (reordered too), then a transition's QLinearAveragePool and a convolution:
// channels last throughout (axis 3, channels_last 1); bit for bit.
TEST(NhwcInt8Layout, ConcatAndAveragePoolStayChannelsLast) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  Rng rng(9);
  ModelBuilder b(17);
  b.opset("com.microsoft", 1);
  b.input("x", DataType::Uint8, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  b.input("skip", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{8}, int64_t{8}});
  b.initializer(make_float_tensor("xs", {}, {0.02f}));
  b.initializer(raw("xz", bytes(rng, DataType::Uint8, {}, 120, 130)));
  b.initializer(make_float_tensor("cs", {}, {0.03f}));
  b.initializer(raw("cz", bytes(rng, DataType::Uint8, {}, 110, 120)));
  attr_ints(add_qconv(b, rng, "grow", "x", "g", 16, 12, {3, 3}, 1, DataType::Uint8, true), "pads", {1, 1, 1, 1});
  attr_int(b.node("QLinearConcat", {"cs", "cz", "g", "xs", "xz", "skip", "cs", "cz"}, {"cat"}, "concat", "com.microsoft"),
           "axis", 1);
  auto& pool = b.node("QLinearAveragePool", {"cat", "cs", "cz", "xs", "xz"}, {"pooled"}, "transition", "com.microsoft");
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  add_qconv(b, rng, "next", "pooled", "y", 20, 8, {1, 1}, 1, DataType::Uint8, false);
  b.output("y", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{4}, int64_t{4}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::nhwc_int8_layout, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"ToNhwc", "NhwcQLinearConv", "ToNhwc", "QLinearConcat",
                                               "QLinearAveragePool", "NhwcQLinearConv", "FromNhwc"}));
  EXPECT_EQ(m->graph.nodes[3].attribute("axis")->i, 3);
  EXPECT_EQ(m->graph.nodes[4].attribute("channels_last")->i, 1);
  NamedValues inputs{{"x", Value(bytes(rng, DataType::Uint8, {1, 16, 8, 8}))},
                     {"skip", Value(bytes(rng, DataType::Uint8, {1, 8, 8, 8}))}};
  const Kernels k = expect_bit_identical(original, m, inputs);
  expect_kernel(k, "QLinearConcat", {"cpu-simd"});
  expect_kernel(k, "QLinearAveragePool", {"cpu-simd"});
  expect_bit_identical(original, m, inputs, {"cpu-int8", "onednn-int8", "cpu-simd"});
}

TEST(NhwcInt8Layout, LeavesOtherGraphsAlone) {
  auto original = load_model(small_cnn());  // float convolutions: the nchwc pass's
  apply(*original, cpu::nhwc_int8_layout, false);
}

// ToNhwc and FromNhwc themselves (every CPU: they need no VNNI): on random
// shapes of rank 3 to 5 whose channels and pixels are and are not multiples
// of the register blocks (16 bytes, 4 elements) and tiles (128 or 64), for
// elements of 1, 2, 4 and 8 bytes, ToNhwc is the reference's Transpose to
// channels last, bit for bit, and FromNhwc gives X back; at 1 and 2 threads,
// on the cpu-simd kernels and on the plain ones.
TEST(NhwcReorder, IsTheTransposeToChannelsLastAndBack) {
  Rng rng(7);
  const DataType types[] = {DataType::Uint8, DataType::Float16, DataType::Float, DataType::Int64};
  for (int i = 0; i < 32; ++i) {
    const DataType t = types[i % 4];
    Shape xs{pick(rng, 1, 2), i % 3 == 0 ? 16 * pick(rng, 1, 10) : pick(rng, 1, 150)};
    const int64_t spatial = i % 5 == 0 ? 1 : i % 5 == 4 ? 3 : 2;
    for (int64_t d = 0; d < spatial; ++d) xs.push_back(spatial == 3 ? pick(rng, 1, 9) : pick(rng, 1, 70));
    std::vector<int64_t> perm{0};
    for (int64_t d = 0; d < spatial; ++d) perm.push_back(d + 2);
    perm.push_back(1);
    Tensor xt = Tensor::zeros(t, xs);  // random bits (NaN payloads included: they are moved, not read)
    for (uint64_t e = 0; e < xt.byte_size(); ++e) xt.mutable_raw()[e] = static_cast<std::byte>(pick(rng, 0, 255));
    const std::vector<DimSpec> dims(xs.begin(), xs.end());

    ModelBuilder want_b(17);
    want_b.input("x", t, dims).output_untyped("y");
    attr_ints(want_b.node("Transpose", {"x"}, {"y"}), "perm", perm);
    const NamedValues in{{"x", Value(xt)}};
    const auto want = make_reference_engine()->prepare(load_model(want_b))->run(in);

    ModelBuilder b(17);
    b.opset(cpu::kCpuDomain, 1);
    b.input("x", t, dims).output_untyped("y").output_untyped("z");
    b.node(cpu::kToNhwc, {"x"}, {"y"}, "to", cpu::kCpuDomain);
    b.node(cpu::kFromNhwc, {"y"}, {"z"}, "from", cpu::kCpuDomain);
    const auto m = load_model(b);
    for (const int threads : {1, 2})
      for (const bool plain : {false, true}) {
        CpuOptions o;
        o.opt_level = 0;
        o.threads = threads;
        if (plain) o.disabled_kernels = {"cpu-simd"};
        Kernels k;
        RunOptions ro;
        ro.observer = &k;
        const auto got = make_cpu_engine(o)->prepare(m)->run(in, ro);
        const std::string what = std::string(dtype_name(t)) + " " + shape_to_string(xs) + (plain ? " plain" : "") +
                                 " threads " + std::to_string(threads);
        ASSERT_EQ(got.size(), 2u) << what;
        const Tensor& y = got[0].second.tensor();
        const Tensor& z = got[1].second.tensor();
        const Tensor& w = want[0].second.tensor();
        ASSERT_EQ(y.shape(), w.shape()) << what;
        ASSERT_EQ(z.shape(), xs) << what;
        EXPECT_EQ(std::memcmp(y.raw(), w.raw(), w.byte_size()), 0) << what << ": ToNhwc is not the Transpose";
        EXPECT_EQ(std::memcmp(z.raw(), xt.raw(), xt.byte_size()), 0) << what << ": FromNhwc does not give X back";
        expect_kernel(k, cpu::kToNhwc, {plain ? "fused-reference" : "cpu-simd"});
      }
  }
}

// Random QLinearConv problems (1-D to 3-D, groups and depthwise, strides,
// dilations, pads, uint8 and int8 in and out, per-channel weight zero points
// and scales, bias), each followed by an 8-bit MaxPool on 2-D images: bit for
// bit against the reference, on the fast kernels and on the plain ones.
TEST(NhwcInt8Layout, RandomProblemsBitForBit) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  Rng rng(41);
  for (int i = 0; i < 36; ++i) {
    const DataType tx = i % 2 ? DataType::Uint8 : DataType::Int8, ty = (i / 2) % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t spatial_rank = i % 6 == 0 ? 1 : (i % 9 == 4 ? 3 : 2);
    const bool depthwise = i % 5 == 2;
    const int64_t group = depthwise ? 0 : (i % 7 == 3 ? pick(rng, 2, 3) : 1);
    const int64_t cg = depthwise ? 1 : pick(rng, 1, 20);
    const int64_t C = depthwise ? pick(rng, 1, 40) : cg * group, G = depthwise ? C : group;
    const int64_t M = G * pick(rng, 1, depthwise ? 2 : 24);
    Shape xs{pick(rng, 1, 2), C}, ws{M, C / G};
    std::vector<int64_t> strides, dilations, pads;
    for (int64_t d = 0; d < spatial_rank; ++d) {
      const int64_t k = pick(rng, 1, 3);
      ws.push_back(k);
      strides.push_back(pick(rng, 1, 2));
      dilations.push_back(pick(rng, 1, 2));
      xs.push_back(pick(rng, (k - 1) * dilations.back() + 1, spatial_rank == 3 ? 6 : 13));
    }
    for (int64_t d = 0; d < 2 * spatial_rank; ++d) pads.push_back(pick(rng, 0, 1));
    SCOPED_TRACE("case " + std::to_string(i) + ": " + shape_to_string(xs) + " * " + shape_to_string(ws) + " group " +
                 std::to_string(G));
    QConv q{tx, ty, xs, ws, G, strides, dilations, pads};
    q.per_channel = i % 3 == 0;
    q.y_scale = i % 4 == 1 ? 0.02f : 0.3f;  // some saturate
    q.bias = i % 4 != 2 ? 20000 : 0;
    auto [b, inputs] = qconv_model(rng, q);
    std::string y = "c";
    if (spatial_rank == 2) {
      auto& p = b.node("MaxPool", {"c"}, {"p"}, "pool");
      int64_t out[2];  // the convolution's output size
      for (size_t d = 0; d < 2; ++d)
        out[d] = (xs[d + 2] + pads[d] + pads[d + 2] - ((ws[d + 2] - 1) * dilations[d] + 1)) / strides[d] + 1;
      const int64_t k = pick(rng, 1, std::min<int64_t>(3, out[0])), k2 = std::min(out[1], std::max<int64_t>(1, k - (i % 2)));
      attr_ints(p, "kernel_shape", {k, k2});
      attr_ints(p, "strides", {pick(rng, 1, 2), pick(rng, 1, 2)});
      attr_ints(p, "pads", {k > 1 ? pick(rng, 0, 1) : 0, 0, 0, k2 > 1 ? pick(rng, 0, 1) : 0});
      attr_int(p, "ceil_mode", i % 4 == 3 ? 1 : 0);
      y = "p";
    }
    b.output_untyped(y);
    auto original = load_model(b);
    auto m = apply(*original, cpu::nhwc_int8_layout, true);
    const Kernels k = expect_bit_identical(original, m, inputs);
    // A padded 3-D convolution is the reference's: oneDNN 2.6's int8 kernel
    // put the input zero point wrongly in the padding (conv_integer.cpp;
    // 720 cases here found four, 36 none).
    const bool padded_3d = spatial_rank == 3 && std::any_of(pads.begin(), pads.end(), [](int64_t v) { return v != 0; });
    expect_kernel(k, "NhwcQLinearConv",
                  padded_3d ? std::set<std::string>{"fused-reference", "cpu-int8", "cpu-int8-vbmi"}
                            : std::set<std::string>{"onednn-int8", "cpu-int8", "cpu-int8-vbmi"});
    if (spatial_rank == 2) expect_kernel(k, "NhwcMaxPool", {"cpu-simd"});
    const Kernels plain = expect_bit_identical(original, m, inputs, {"cpu-int8", "onednn-int8", "cpu-simd"});
    expect_kernel(plain, "NhwcQLinearConv", {"fused-reference"});
  }
}

// 1x1 convolutions on the own VNNI kernel (kernels/quantization/qlinear_conv_1x1.cpp):
// channel counts on and off multiples of 4 and 16, strides 1 and 2, 1-D to
// 3-D, uint8 and int8 in and out, per-channel weight zero points, bias or
// none, maps small and large enough for several work items; bit for bit.
TEST(NhwcInt8Layout, PointwiseConvolutionsBitForBit) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  if (!ONNXSCOPE_CPU_AVX512("avx512vnni")) GTEST_SKIP() << "no AVX-512 VNNI: the 1x1 kernel declines";
  Rng rng(43);
  for (int i = 0; i < 30; ++i) {
    const DataType tx = i % 2 ? DataType::Uint8 : DataType::Int8, ty = (i / 2) % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t spatial_rank = i % 7 == 0 ? 1 : (i % 11 == 5 ? 3 : 2);
    const int64_t C = i % 5 == 0 ? pick(rng, 1, 7) : pick(rng, 8, 90), M = i % 4 == 0 ? pick(rng, 1, 20) : pick(rng, 20, 150);
    Shape xs{pick(rng, 1, 2), C}, ws{M, C};
    std::vector<int64_t> strides;
    for (int64_t d = 0; d < spatial_rank; ++d) {
      ws.push_back(1);
      xs.push_back(pick(rng, 1, spatial_rank == 3 ? 6 : (i % 3 == 0 ? 40 : 12)));
      strides.push_back(i % 6 == 1 ? 2 : 1);
    }
    SCOPED_TRACE("case " + std::to_string(i) + ": " + shape_to_string(xs) + " * " + shape_to_string(ws));
    // y_scale 0 in some: infinite multipliers, and with every input at its
    // zero point and no bias sums of 0, NaN products (the zero point, as the reference's).
    const bool infinite = i % 10 == 6;
    QConv q{tx, ty, xs, ws, 1, strides, {}, {}};
    q.per_channel = i % 3 != 2;
    q.wide_weights = true;
    q.y_scale = infinite ? 0.0f : (i % 4 == 1 ? 0.02f : 0.3f);
    q.bias = i % 4 != 2 ? 20000 : 0;
    auto [b, inputs] = qconv_model(rng, q);
    b.output_untyped("c");
    auto original = load_model(b);
    auto m = apply(*original, cpu::nhwc_int8_layout, true);
    expect_kernel(expect_bit_identical(original, m, inputs), "NhwcQLinearConv", {"cpu-int8"});
  }
}

// Depthwise convolutions on the own VNNI kernel
// (kernels/quantization/qlinear_conv_depthwise.cpp): channel counts on and
// off multiples of 16, windows 1x1 to 5x5 (some not square), strides,
// dilations, padding (taps there read the zero point), uint8 and int8 in
// and out, per-channel weight zero points, y_scale 0; bit for bit.
TEST(NhwcInt8Layout, DepthwiseConvolutionsBitForBit) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  if (!ONNXSCOPE_CPU_AVX512("avx512vnni")) GTEST_SKIP() << "no AVX-512 VNNI: the depthwise kernel declines";
  Rng rng(47);
  for (int i = 0; i < 30; ++i) {
    const DataType tx = i % 2 ? DataType::Uint8 : DataType::Int8, ty = (i / 2) % 2 ? DataType::Uint8 : DataType::Int8;
    const int64_t C = i % 3 == 0 ? pick(rng, 2, 15) : pick(rng, 16, 90);
    const int64_t kh = pick(rng, 1, 5), kw = i % 4 == 3 ? pick(rng, 1, 5) : kh;
    const int64_t dh = i % 5 == 4 ? 2 : 1, dw = dh, sh = pick(rng, 1, 2), sw = sh;
    const Shape xs{pick(rng, 1, 2), C, pick(rng, (kh - 1) * dh + 1, 14), pick(rng, (kw - 1) * dw + 1, 14)};
    const Shape ws{C, 1, kh, kw};
    std::vector<int64_t> pads{pick(rng, 0, kh / 2), pick(rng, 0, kw / 2), pick(rng, 0, kh / 2), pick(rng, 0, kw / 2)};
    SCOPED_TRACE("case " + std::to_string(i) + ": " + shape_to_string(xs) + " * " + shape_to_string(ws));
    const bool infinite = i % 10 == 6;
    QConv q{tx, ty, xs, ws, C, {sh, sw}, {dh, dw}, pads};
    q.per_channel = i % 3 != 2;
    q.wide_weights = true;
    q.w_scale_max = 40;
    q.y_scale = infinite ? 0.0f : (i % 4 == 1 ? 0.01f : 0.1f);
    q.bias = i % 4 != 2 ? 5000 : 0;
    auto [b, inputs] = qconv_model(rng, q);
    b.output_untyped("c");
    auto original = load_model(b);
    auto m = apply(*original, cpu::nhwc_int8_layout, true);
    expect_kernel(expect_bit_identical(original, m, inputs), "NhwcQLinearConv", {depthwise_int8_kernel()});
    // A tap to a lane, where four to a lane ran above.
    expect_kernel(expect_bit_identical(original, m, inputs, {"cpu-int8-vbmi"}), "NhwcQLinearConv", {"cpu-int8"});
  }
}

// The float requantization near a half (requantize_avx512.h, round16_float)
// in the depthwise kernel and after oneDNN's sums (a full convolution):
// x_scale 5810859 * 2^-18 with w_scale and y_scale 1 makes a sum of 3 the
// product 66.5000038, which float rounds onto the tie 66.5 (the exact result
// 67). A 3x3 window whose centre tap is 1 for the channel itself, inputs 0 to 6.
TEST(NhwcInt8Layout, ConvolutionsRequantizeNearAHalfExactly) {
  if (!cpu::int8_convolutions_channels_last()) GTEST_SKIP() << "no VNNI: the pass does nothing";
  const int64_t C = 16;
  for (const bool depthwise : {true, false}) {
    SCOPED_TRACE(depthwise ? "depthwise" : "full");
    ModelBuilder b(17);
    b.input("x", DataType::Uint8, {int64_t{1}, C, int64_t{4}, int64_t{7}});
    b.initializer(make_float_tensor("xs", {}, {static_cast<float>(5810859.0 / 262144.0)}));
    b.initializer(raw("xz", Tensor::zeros(DataType::Uint8, {})));
    const int64_t per = depthwise ? 1 : C;  // input channels per output channel
    Tensor w = Tensor::zeros(DataType::Int8, {C, per, 3, 3});
    for (int64_t c = 0; c < C; ++c) w.mutable_data<int8_t>()[(c * per + (depthwise ? 0 : c)) * 9 + 4] = 1;
    b.initializer(raw("w", w));
    b.initializer(make_float_tensor("ws", {}, {1.0f}));
    b.initializer(raw("wz", Tensor::zeros(DataType::Int8, {})));
    b.initializer(make_float_tensor("ys", {}, {1.0f}));
    b.initializer(raw("yz", Tensor::zeros(DataType::Uint8, {})));
    auto& n = b.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "conv");
    attr_int(n, "group", depthwise ? C : 1);
    attr_ints(n, "pads", {1, 1, 1, 1});
    b.output("y", DataType::Uint8, {int64_t{1}, C, int64_t{4}, int64_t{7}});
    auto original = load_model(b);
    auto m = apply(*original, cpu::nhwc_int8_layout, true);
    Tensor x = Tensor::zeros(DataType::Uint8, {1, C, 4, 7});
    for (uint64_t e = 0; e < x.element_count(); ++e) x.mutable_data<uint8_t>()[e] = static_cast<uint8_t>(e % 7);
    const NamedValues inputs{{"x", Value(x)}};
    expect_kernel(expect_bit_identical(original, m, inputs), "NhwcQLinearConv",
                  {depthwise ? depthwise_int8_kernel() : "onednn-int8"});
    if (depthwise)
      expect_kernel(expect_bit_identical(original, m, inputs, {"cpu-int8-vbmi"}), "NhwcQLinearConv", {"cpu-int8"});
    auto got = make_cpu_engine()->prepare(original)->run(inputs);
    EXPECT_EQ(got[0].second.tensor().data<uint8_t>()[3], 67);  // x = 3 there
  }
}

}  // namespace
