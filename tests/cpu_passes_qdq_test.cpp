// The fuse-qdq pass (passes/fuse_qdq.cpp): which DequantizeLinear -> op ->
// QuantizeLinear groups become 8-bit operators, which stay, and the CPU
// engine (every pass) on QDQ models against the reference on the same
// models: within one step of the output's quantization for the operators
// that requantize, bit for bit for those that move bytes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "pass_test_util.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

using namespace onnxscope::test::passes;

// Scale `name`_s (a scalar, or one per channel) and zero point `name`_z of type t.
void quant(ModelBuilder& b, Rng& rng, const std::string& name, DataType t, std::vector<float> scales, bool zero = false) {
  const std::vector<int64_t> dims = scales.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(scales.size())};
  b.initializer(make_float_tensor(name + "_s", dims, scales));
  b.initializer(raw(name + "_z", zero ? Tensor::zeros(t, Shape(dims.begin(), dims.end())) : bytes(rng, t, Shape(dims.begin(), dims.end()), 110, 145)));
}

onnx::NodeProto& dq(ModelBuilder& b, const std::string& x, const std::string& q, const std::string& y) {
  return b.node("DequantizeLinear", {x, q + "_s", q + "_z"}, {y}, y + "_dq");
}

onnx::NodeProto& qz(ModelBuilder& b, const std::string& x, const std::string& q, const std::string& y) {
  return b.node("QuantizeLinear", {x, q + "_s", q + "_z"}, {y}, y + "_q");
}

// An int32 bias `name` of M values and its DequantizeLinear with scale
// xs * ws[m] (`other_scale`: twice that), zero point 0.
void int32_bias(ModelBuilder& b, Rng& rng, const std::string& name, float xs, const std::vector<float>& ws, int64_t M,
                const std::string& out, bool other_scale = false) {
  Tensor t = Tensor::zeros(DataType::Int32, {M});
  for (int64_t m = 0; m < M; ++m) t.mutable_data<int32_t>()[m] = static_cast<int32_t>(pick(rng, -3000, 3000));
  b.initializer(raw(name, t));
  std::vector<float> s;
  for (float w : ws) s.push_back(xs * w * (other_scale ? 2.0f : 1.0f));
  b.initializer(make_float_tensor(name + "_s", ws.size() == 1 ? std::vector<int64_t>{} : std::vector<int64_t>{M}, s));
  attr_int(b.node("DequantizeLinear", {name, name + "_s"}, {out}, out + "_dq"), "axis", 0);
}

std::vector<float> scales(Rng& rng, size_t n, float step) {
  std::vector<float> v(n);
  for (auto& s : v) s = step * static_cast<float>(pick(rng, 1, 20));
  return v;
}

// The CPU engine with every pass on `m` against the reference on it: each
// 8-bit output within `max_steps` of the reference's, at most `max_share` of
// them off at all; float outputs within `float_tol` of the largest value.
void expect_close(const std::shared_ptr<Model>& m, const NamedValues& inputs, int max_steps, double max_share,
                  double float_tol = 0) {
  auto want = make_reference_engine()->prepare(m)->run(inputs);
  auto got = make_cpu_engine()->prepare(m)->run(inputs);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& a = want[i].second.tensor();
    const Tensor& b = got[i].second.tensor();
    ASSERT_EQ(a.dtype(), b.dtype()) << want[i].first;
    ASSERT_EQ(a.shape(), b.shape()) << want[i].first;
    double biggest = 0;
    for (uint64_t e = 0; e < a.element_count(); ++e) biggest = std::max(biggest, std::abs(a.element_as_double(e)));
    const double tol = a.dtype() == DataType::Float ? float_tol * biggest : max_steps;
    size_t off = 0;
    for (uint64_t e = 0; e < a.element_count(); ++e) {
      const double d = std::abs(a.element_as_double(e) - b.element_as_double(e));
      if (d > 0) ++off;
      if (d > tol) {
        ADD_FAILURE() << want[i].first << "[" << e << "]: reference " << a.element_as_double(e) << ", cpu " << b.element_as_double(e);
        return;
      }
    }
    if (a.dtype() != DataType::Float) {
      EXPECT_LE(static_cast<double>(off), max_share * static_cast<double>(a.element_count()) + 1)
          << want[i].first << ": " << off << " of " << a.element_count() << " values differ";
    }
  }
}

// Applies fuse-qdq then drops what it left unread.
std::shared_ptr<Model> fused(const Model& original, bool expect_change = true) {
  auto m = apply(original, cpu::fuse_qdq, expect_change);
  Diagnostics log;
  PassContext ctx{&log};
  cpu::eliminate_dead_nodes(*m, ctx);  // a DequantizeLinear read by two fused ops
  return m;
}

// Quantize -> stem Conv (per-channel weights, int32 bias) -> MaxPool ->
// depthwise Conv -> Add with the pool's output -> Flatten -> Gemm (transB,
// int32 C, float logits): onnxruntime's QDQ format, each op between
// DequantizeLinear and QuantizeLinear.
ModelBuilder small_qdq_cnn(Rng& rng) {
  ModelBuilder b(17);
  b.input("image", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{9}, int64_t{8}});
  quant(b, rng, "a0", DataType::Uint8, {0.02f});
  qz(b, "image", "a0", "q0");
  dq(b, "q0", "a0", "d0");
  const std::vector<float> ws0 = scales(rng, 8, 0.002f);
  b.initializer(raw("w0", bytes(rng, DataType::Int8, {8, 3, 3, 3})));
  quant(b, rng, "w0q", DataType::Int8, ws0, true);
  attr_int(dq(b, "w0", "w0q", "w0d"), "axis", 0);
  int32_bias(b, rng, "b0", 0.02f, ws0, 8, "b0d");
  attr_ints(b.node("Conv", {"d0", "w0d", "b0d"}, {"c0"}, "stem"), "pads", {1, 1, 1, 1});
  quant(b, rng, "a1", DataType::Uint8, {0.05f});
  qz(b, "c0", "a1", "q1");
  dq(b, "q1", "a1", "d1");
  auto& pool = b.node("MaxPool", {"d1"}, {"p1"}, "pool");
  attr_ints(pool, "kernel_shape", {2, 2});
  attr_ints(pool, "strides", {2, 2});
  qz(b, "p1", "a1", "q2");
  dq(b, "q2", "a1", "d2");  // read by the depthwise Conv and the Add
  b.initializer(raw("w1", bytes(rng, DataType::Int8, {8, 1, 3, 3})));
  quant(b, rng, "w1q", DataType::Int8, {0.01f});
  dq(b, "w1", "w1q", "w1d");
  auto& dw = b.node("Conv", {"d2", "w1d"}, {"c1"}, "dw");
  attr_int(dw, "group", 8);
  attr_ints(dw, "pads", {1, 1, 1, 1});
  quant(b, rng, "a2", DataType::Uint8, {0.08f});
  qz(b, "c1", "a2", "q3");
  dq(b, "q3", "a2", "d3");
  b.node("Add", {"d3", "d2"}, {"s"}, "residual");
  quant(b, rng, "a3", DataType::Uint8, {0.1f});
  qz(b, "s", "a3", "q4");
  dq(b, "q4", "a3", "d4");
  b.node("Flatten", {"d4"}, {"f"}, "flatten");
  qz(b, "f", "a3", "q5");
  dq(b, "q5", "a3", "d5");
  const std::vector<float> wg = scales(rng, 1, 0.003f);
  b.initializer(raw("wg", bytes(rng, DataType::Int8, {5, 128})));
  quant(b, rng, "wgq", DataType::Int8, wg, true);
  dq(b, "wg", "wgq", "wgd");
  int32_bias(b, rng, "bg", 0.1f, wg, 5, "bgd");
  attr_int(b.node("Gemm", {"d5", "wgd", "bgd"}, {"logits"}, "fc"), "transB", 1);
  b.output("logits", DataType::Float, {int64_t{2}, int64_t{5}});
  b.output("q4", DataType::Uint8, {int64_t{2}, int64_t{8}, int64_t{4}, int64_t{4}});
  return b;
}

TEST(FuseQdq, AQdqCnnBecomesItsEightBitOperators) {
  Rng rng(11);
  auto original = load_model(small_qdq_cnn(rng));
  auto m = fused(*original);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"QuantizeLinear", "QLinearConv", "MaxPool", "QLinearConv", "QLinearAdd",
                                               "Flatten", "QGemm"}));
  const Node& stem = m->graph.nodes[1];
  EXPECT_EQ(stem.inputs, (std::vector<std::string>{"q0", "a0_s", "a0_z", "w0", "w0q_s", "w0q_z", "a1_s", "a1_z", "b0"}));
  EXPECT_EQ(stem.outputs[0], "q1");
  EXPECT_EQ(m->graph.nodes[2].inputs[0], "q1");  // MaxPool on the bytes
  EXPECT_EQ(m->graph.nodes[2].outputs[0], "q2");
  EXPECT_EQ(m->graph.nodes[4].domain, "com.microsoft");
  EXPECT_EQ(m->graph.nodes[4].outputs[0], "q4");
  EXPECT_EQ(m->graph.nodes[6].inputs, (std::vector<std::string>{"q5", "a3_s", "a3_z", "wg", "wgq_s", "wgq_z", "bg"}));
  EXPECT_EQ(m->graph.nodes[6].outputs[0], "logits");  // no QuantizeLinear after it: float Y
  EXPECT_EQ(provenance(stem), (std::vector<std::string>{"d0_dq", "w0d_dq", "b0d_dq", "stem", "q1_q"}));
  EXPECT_GT(m->opset_version("com.microsoft"), 0);
  InputSpec spec;
  spec.seed = 5;
  const NamedValues inputs = make_inputs(*original, spec);
  // One step at the Add's output; the logits within 2% of the largest.
  expect_close(original, inputs, 1, 0.05, 0.02);
}

// The float forms of the data-movement ops between the same quantization give the bytes.
TEST(FuseQdq, DataMovementBetweenOneQuantizationIsExact) {
  Rng rng(3);
  ModelBuilder b(17);
  b.input("x", DataType::Uint8, {int64_t{2}, int64_t{6}, int64_t{7}, int64_t{5}});
  quant(b, rng, "a", DataType::Uint8, {0.037f});
  dq(b, "x", "a", "d");
  auto& mp = b.node("MaxPool", {"d"}, {"p"}, "pool");
  attr_ints(mp, "kernel_shape", {3, 3});
  attr_ints(mp, "pads", {1, 1, 1, 1});
  qz(b, "p", "a", "q");
  dq(b, "q", "a", "d2");
  attr_ints(b.node("Transpose", {"d2"}, {"t"}, "transpose"), "perm", {0, 2, 3, 1});
  qz(b, "t", "a", "y");
  b.output("y", DataType::Uint8, {int64_t{2}, int64_t{7}, int64_t{5}, int64_t{6}});
  auto original = load_model(b);
  EXPECT_EQ(op_types(*fused(*original)), (std::vector<std::string>{"MaxPool", "Transpose"}));
  InputSpec spec;
  spec.seed = 9;
  expect_close(original, make_inputs(*original, spec), 0, 0);
}

// Slice between one quantization is exact too; a Concat of inputs with their
// own quantizations is QLinearConcat (each requantized as DequantizeLinear
// and QuantizeLinear compute it).
TEST(FuseQdq, SliceAndConcat) {
  Rng rng(8);
  ModelBuilder b(17);
  b.opset("com.microsoft", 1);
  b.input("x", DataType::Uint8, {int64_t{1}, int64_t{10}, int64_t{6}, int64_t{6}});
  b.input("x2", DataType::Uint8, {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{6}});
  quant(b, rng, "a", DataType::Uint8, {0.037f});
  quant(b, rng, "a2", DataType::Uint8, {0.05f});
  quant(b, rng, "y", DataType::Uint8, {0.06f});
  b.initializer(make_int64_tensor("starts", {1}, {2}));
  b.initializer(make_int64_tensor("ends", {1}, {7}));
  b.initializer(make_int64_tensor("axes", {1}, {1}));
  dq(b, "x", "a", "d");
  b.node("Slice", {"d", "starts", "ends", "axes"}, {"s"}, "slice");
  qz(b, "s", "a", "sq");
  dq(b, "sq", "a", "ds");
  dq(b, "x2", "a2", "d2");
  attr_int(b.node("Concat", {"ds", "d2"}, {"c"}, "concat"), "axis", 1);
  qz(b, "c", "y", "yq");
  b.output("yq", DataType::Uint8, {int64_t{1}, int64_t{8}, int64_t{6}, int64_t{6}});
  auto original = load_model(b);
  EXPECT_EQ(op_types(*fused(*original)), (std::vector<std::string>{"Slice", "QLinearConcat"}));
  InputSpec spec;
  spec.seed = 4;
  expect_close(original, make_inputs(*original, spec), 1, 0.02);
}

// fuse-quantized-lookup on what QDQ transformers leave between a
// DequantizeLinear and a QuantizeLinear: GELU's Div by a constant then Erf,
// a Mul with the constant first, a constant divided by the value: one table
// each; an Add of a constant that is not a scalar stays.
TEST(FuseQdq, MathChainsBetweenDequantizeAndQuantizeBecomeLookups) {
  Rng rng(12);
  ModelBuilder b(17);
  b.input("x", DataType::Int8, {int64_t{4}, int64_t{256}});
  quant(b, rng, "a", DataType::Int8, {0.04f});
  quant(b, rng, "y", DataType::Int8, {0.01f});
  b.initializer(make_float_tensor("sqrt2", {}, {1.4142135f}));
  b.initializer(make_float_tensor("half", {}, {0.5f}));
  b.initializer(make_float_tensor("two", {}, {2.0f}));
  b.initializer(weights("row", {256}, 3));  // as many values as a table: must not pass for one
  dq(b, "x", "a", "d1");
  b.node("Div", {"d1", "sqrt2"}, {"t1"}, "div");
  b.node("Erf", {"t1"}, {"e1"}, "erf");
  qz(b, "e1", "y", "y1");
  dq(b, "x", "a", "d2");
  b.node("Mul", {"half", "d2"}, {"t2"}, "mul");
  qz(b, "t2", "y", "y2");
  dq(b, "x", "a", "d3");
  b.node("Div", {"two", "d3"}, {"t3"}, "div3");  // 2 / x: infinities at 0 saturate
  qz(b, "t3", "y", "y3");
  dq(b, "x", "a", "d4");
  b.node("Add", {"d4", "row"}, {"t4"}, "add_row");  // one value per column: not a function of the byte
  qz(b, "t4", "y", "y4");
  for (const char* o : {"y1", "y2", "y3", "y4"}) b.output_untyped(o);
  auto original = load_model(b);
  auto m = apply(*original, cpu::fuse_quantized_lookup, true);
  EXPECT_EQ(op_types(*m), (std::vector<std::string>{"QuantizedLookup", "QuantizedLookup", "QuantizedLookup", "DequantizeLinear",
                                               "Add", "QuantizeLinear"}));
  Tensor x = Tensor::zeros(DataType::Int8, {4, 256});
  for (uint64_t e = 0; e < x.element_count(); ++e) reinterpret_cast<uint8_t*>(x.mutable_raw())[e] = static_cast<uint8_t>(e);
  expect_close(original, NamedValues{{"x", Value(x)}}, 1, 0.02);  // the tables: the reference's bits; the Add: float
}

// DenseNet's pre-activation between a DequantizeLinear and a QuantizeLinear:
// BatchNormalization, Relu, and a Mul by a per-channel constant: one table
// per channel ([C, 256], axis 1), then the convolution it feeds; on the
// engine (channels last where VNNI is: axis 3) bit for bit.
TEST(FuseQdq, PerChannelChainsBecomeATablePerChannel) {
  Rng rng(21);
  const int64_t C = 19;
  ModelBuilder b(17);
  b.input("image", DataType::Uint8, {int64_t{2}, int64_t{4}, int64_t{5}, int64_t{7}});
  quant(b, rng, "i", DataType::Uint8, {0.03f});
  quant(b, rng, "a", DataType::Uint8, {0.03f});
  quant(b, rng, "y", DataType::Uint8, {0.02f});
  // A convolution first, so that where it runs channels last so does the table.
  dq(b, "image", "i", "di");
  b.initializer(raw("w0", bytes(rng, DataType::Int8, {C, 4, 1, 1})));
  quant(b, rng, "w0q", DataType::Int8, {0.01f}, true);
  dq(b, "w0", "w0q", "w0d");
  b.node("Conv", {"di", "w0d"}, {"c0"}, "conv0");
  qz(b, "c0", "a", "x");
  b.initializer(weights("gamma", {C}, 1, 0.5f, 1.5f));
  b.initializer(weights("beta", {C}, 2));
  b.initializer(weights("mean", {C}, 3));
  b.initializer(weights("var", {C}, 4, 0.2f, 2.0f));
  b.initializer(weights("k", {C, 1, 1}, 5));
  dq(b, "x", "a", "d");
  b.node("BatchNormalization", {"d", "gamma", "beta", "mean", "var"}, {"n"}, "bn");
  b.node("Relu", {"n"}, {"r"}, "relu");
  b.node("Mul", {"r", "k"}, {"m"}, "scale");
  qz(b, "m", "y", "q");
  dq(b, "q", "y", "dq2");
  b.initializer(raw("w", bytes(rng, DataType::Int8, {8, C, 1, 1})));
  quant(b, rng, "wq", DataType::Int8, {0.01f}, true);
  dq(b, "w", "wq", "wd");
  b.node("Conv", {"dq2", "wd"}, {"c"}, "conv");
  quant(b, rng, "o", DataType::Uint8, {0.05f});
  qz(b, "c", "o", "out");
  b.output("out", DataType::Uint8, {int64_t{2}, int64_t{8}, int64_t{5}, int64_t{7}});
  b.output("q", DataType::Uint8, {int64_t{2}, C, int64_t{5}, int64_t{7}});
  auto original = load_model(b);
  auto m = apply(*original, cpu::fuse_quantized_lookup, true);
  const auto types = op_types(*m);
  const auto at = std::find(types.begin(), types.end(), "QuantizedLookup");
  ASSERT_NE(at, types.end());
  const Node& lookup = m->graph.nodes[static_cast<size_t>(at - types.begin())];
  ASSERT_TRUE(lookup.attribute("axis"));
  EXPECT_EQ(lookup.attribute("axis")->i, 1);
  EXPECT_EQ(cpu::constant_tensor(*m, lookup.inputs[1])->shape(), (Shape{C, 256}));
  EXPECT_EQ(provenance(lookup), (std::vector<std::string>{"d_dq", "bn", "relu", "scale", "q_q"}));
  // The convolutions: one step; the tables (q) the reference's bits, on the
  // fused convolution's output (the reference on the rewritten model).
  const NamedValues inputs{{"image", Value(bytes(rng, DataType::Uint8, {2, 4, 5, 7}))}};
  expect_close(original, inputs, 1, 0.05);
  auto fq = fused(*original);
  auto want = make_reference_engine()->prepare(fq)->run(inputs);
  auto got = make_cpu_engine()->prepare(original)->run(inputs);
  ASSERT_EQ(want[1].first, "q");
  EXPECT_EQ(std::memcmp(want[1].second.tensor().raw(), got[1].second.tensor().raw(), want[1].second.tensor().byte_size()), 0);
  // And the plain layout (no further passes: the table along axis 1, plane
  // by plane), on the kernel and on its plain (fused-reference) form.
  auto both = apply(*fq, cpu::fuse_quantized_lookup, true);
  for (const std::set<std::string>& off : {std::set<std::string>{}, std::set<std::string>{"cpu-simd"}}) {
    CpuOptions o;
    o.opt_level = 0;
    o.disabled_kernels = off;
    auto plain = make_cpu_engine(o)->prepare(both)->run(inputs);
    ASSERT_EQ(plain.size(), want.size());
    for (size_t i = 0; i < plain.size(); ++i)
      EXPECT_EQ(std::memcmp(want[i].second.tensor().raw(), plain[i].second.tensor().raw(), plain[i].second.tensor().byte_size()), 0)
          << plain[i].first << (off.empty() ? "" : " (fused-reference)");
  }
}

// Where X's shape is unknown but for its rank (a QOperator model's
// QLinearConcat output), the BatchNormalization tells the channels: the same
// per-channel table, bit for bit on the engine.
TEST(FuseQdq, PerChannelTableFromTheBatchNormalization) {
  Rng rng(23);
  const int64_t C = 5;
  ModelBuilder b(17);
  b.input("x", DataType::Uint8, {DimSpec(std::string("N")), C, DimSpec(std::string("H")), DimSpec(std::string("W"))});
  quant(b, rng, "a", DataType::Uint8, {0.03f});
  quant(b, rng, "y", DataType::Uint8, {0.02f});
  b.initializer(weights("gamma", {C}, 1, 0.5f, 1.5f));
  b.initializer(weights("beta", {C}, 2));
  b.initializer(weights("mean", {C}, 3));
  b.initializer(weights("var", {C}, 4, 0.2f, 2.0f));
  b.initializer(weights("k", {C, 1, 1}, 5));
  dq(b, "x", "a", "d");
  b.node("BatchNormalization", {"d", "gamma", "beta", "mean", "var"}, {"n"}, "bn");
  b.node("Mul", {"n", "k"}, {"m"}, "scale");
  qz(b, "m", "y", "q");
  b.output_untyped("q");
  auto original = load_model(b);
  auto m = apply(*original, cpu::fuse_quantized_lookup, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"QuantizedLookup"}));
  EXPECT_EQ(m->graph.nodes[0].attribute("axis")->i, 1);
  Tensor x = Tensor::zeros(DataType::Uint8, {2, C, 3, 9});
  for (uint64_t e = 0; e < x.element_count(); ++e) x.mutable_data<uint8_t>()[e] = static_cast<uint8_t>(e * 5);
  expect_close(original, NamedValues{{"x", Value(x)}}, 0, 0);
}

// A bias DequantizeLinear of another scale than x_scale * w_scale (one bias
// tensor shared by convolutions of different weight scales, as TorchScript's
// constant deduplication leaves it): requantized to the sums' scale, a new
// int32 initializer, within one output step of the float graph.
TEST(FuseQdq, ABiasOfAnotherScaleIsRequantized) {
  Rng rng(31);
  ModelBuilder b(17);
  b.input("x", DataType::Uint8, {int64_t{1}, int64_t{6}, int64_t{7}, int64_t{7}});
  quant(b, rng, "a", DataType::Uint8, {0.02f});
  quant(b, rng, "y", DataType::Uint8, {0.05f});
  dq(b, "x", "a", "d");
  b.initializer(raw("w", bytes(rng, DataType::Int8, {5, 6, 3, 3})));
  const std::vector<float> ws{0.004f};
  quant(b, rng, "wq", DataType::Int8, ws, true);
  dq(b, "w", "wq", "wd");
  int32_bias(b, rng, "bias", 0.02f, ws, 5, "bd", /*other_scale=*/true);  // scale 2 x_scale w_scale
  attr_ints(b.node("Conv", {"d", "wd", "bd"}, {"c"}, "conv"), "pads", {1, 1, 1, 1});
  qz(b, "c", "y", "yq");
  b.output("yq", DataType::Uint8, {int64_t{1}, int64_t{5}, int64_t{7}, int64_t{7}});
  auto original = load_model(b);
  auto m = fused(*original);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"QLinearConv"}));
  const Tensor* q = cpu::constant_tensor(*m, m->graph.nodes[0].inputs[8]);
  const Tensor* given = cpu::constant_tensor(*original, "bias");
  ASSERT_TRUE(q && given);
  for (int64_t c = 0; c < 5; ++c) EXPECT_EQ(q->data<int32_t>()[c], 2 * given->data<int32_t>()[c]);
  InputSpec spec;
  spec.seed = 6;
  expect_close(original, make_inputs(*original, spec), 1, 0.05);
}

// What must stay as it is.
TEST(FuseQdq, LeavesWhatItCannotFuseExactly) {
  // 0 conv bias of another scale than x_scale * w_scale where a sum unit is
  // more than 1/64 of an output step, 1 the Conv's output also
  // a graph output, 2 weights per channel along axis 1, 3 a MaxPool
  // requantized to another scale, 4 Gemm with alpha 0.5, 5 Add of int8 and uint8.
  for (int c = 0; c < 6; ++c) {
    Rng rng(static_cast<uint32_t>(c));
    ModelBuilder b(17);
    b.input("x", DataType::Uint8, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
    quant(b, rng, "a", DataType::Uint8, {0.02f});
    dq(b, "x", "a", "d");
    quant(b, rng, "y", DataType::Uint8, {0.05f});
    std::string out = "c";
    if (c <= 2) {
      b.initializer(raw("w", bytes(rng, DataType::Int8, {4, 4, 1, 1})));
      // Case 0's weight scale makes a sum unit 4 output steps: its bias (another scale) cannot be requantized.
      const std::vector<float> ws = c == 2   ? std::vector<float>{0.01f, 0.02f, 0.03f, 0.04f}
                                    : c == 0 ? std::vector<float>{10.0f}
                                             : std::vector<float>{0.01f};
      quant(b, rng, "wq", DataType::Int8, ws, true);
      if (c == 2) attr_int(dq(b, "w", "wq", "wd"), "axis", 1);
      else dq(b, "w", "wq", "wd");
      std::vector<std::string> ins{"d", "wd"};
      if (c == 0) {
        int32_bias(b, rng, "bias", 0.02f, ws, 4, "bd", /*other_scale=*/true);
        ins.push_back("bd");
      }
      b.node("Conv", ins, {"c"}, "conv");
      if (c == 1) b.output("c", DataType::Float, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
    } else if (c == 3) {
      attr_ints(b.node("MaxPool", {"d"}, {"c"}, "pool"), "kernel_shape", {2, 2});
    } else if (c == 4) {
      b.node("Flatten", {"d"}, {"f"}, "flatten");
      b.initializer(raw("w", bytes(rng, DataType::Int8, {3, 100})));
      quant(b, rng, "wq", DataType::Int8, {0.01f}, true);
      dq(b, "w", "wq", "wd");
      attr_float(b.node("Gemm", {"f", "wd"}, {"c"}, "fc"), "alpha", 0.5f);
    } else {
      b.input("x2", DataType::Int8, {int64_t{1}, int64_t{4}, int64_t{5}, int64_t{5}});
      quant(b, rng, "a2", DataType::Int8, {0.02f});
      dq(b, "x2", "a2", "d2");
      b.node("Add", {"d", "d2"}, {"c"}, "add");
    }
    qz(b, out, "y", "yq");
    b.output_untyped("yq");
    auto original = load_model(b);
    fused(*original, /*expect_change=*/false);
  }
}

// Random Conv, MatMul, Gemm, Add and Mul problems in QDQ form: the pass takes
// each, and the engine's results are within one step of the reference's.
TEST(FuseQdq, RandomProblemsWithinOneStep) {
  Rng rng(2026);
  for (int t = 0; t < 40; ++t) {
    const int kind = t % 5;  // Conv, MatMul, Gemm, Add, Mul
    const DataType tx = pick(rng, 0, 1) ? DataType::Uint8 : DataType::Int8;
    ModelBuilder b(17);
    b.opset("com.microsoft", 1);
    std::string expect;
    Shape ys;
    const float xs = 0.01f * static_cast<float>(pick(rng, 1, 5));
    quant(b, rng, "a", tx, {xs});
    quant(b, rng, "y", tx, {0.02f * static_cast<float>(pick(rng, 1, 10))});
    if (kind == 0) {
      const int64_t C = pick(rng, 1, 24), H = pick(rng, 3, 12), W = pick(rng, 3, 12), k = pick(rng, 1, 3);
      const bool depthwise = pick(rng, 0, 3) == 0;
      const int64_t M = depthwise ? C : pick(rng, 1, 40), group = depthwise ? C : 1;
      const bool per_channel = pick(rng, 0, 1), bias = pick(rng, 0, 1);
      b.input("x", tx, {int64_t{1}, C, H, W});
      dq(b, "x", "a", "d");
      b.initializer(raw("w", bytes(rng, DataType::Int8, {M, C / group, k, k})));
      const std::vector<float> ws = scales(rng, per_channel ? static_cast<size_t>(M) : 1, 0.001f);
      quant(b, rng, "wq", DataType::Int8, ws, true);
      attr_int(dq(b, "w", "wq", "wd"), "axis", 0);
      std::vector<std::string> ins{"d", "wd"};
      if (bias) {
        int32_bias(b, rng, "bias", xs, ws, M, "bd");
        ins.push_back("bd");
      }
      auto& conv = b.node("Conv", ins, {"c"}, "conv");
      attr_int(conv, "group", group);
      const int64_t s = pick(rng, 1, 2), p = k / 2;
      attr_ints(conv, "strides", {s, s});
      attr_ints(conv, "pads", {p, p, p, p});
      ys = {1, M, (H + 2 * p - k) / s + 1, (W + 2 * p - k) / s + 1};
      expect = "QLinearConv";
    } else if (kind == 1) {
      const int64_t B = pick(rng, 1, 3), M = pick(rng, 1, 20), K = pick(rng, 1, 70), N = pick(rng, 1, 40);
      b.input("x", tx, {B, M, K});
      dq(b, "x", "a", "d");
      b.initializer(raw("w", bytes(rng, tx, {K, N})));
      quant(b, rng, "wq", tx, scales(rng, 1, 0.002f));
      dq(b, "w", "wq", "wd");
      b.node("MatMul", {"d", "wd"}, {"c"}, "matmul");
      ys = {B, M, N};
      expect = "QLinearMatMul";
    } else if (kind == 2) {
      const int64_t M = pick(rng, 1, 9), K = pick(rng, 1, 90), N = pick(rng, 1, 50);
      const bool trans_b = pick(rng, 0, 1);
      b.input("x", tx, {M, K});
      dq(b, "x", "a", "d");
      b.initializer(raw("w", bytes(rng, DataType::Int8, trans_b ? Shape{N, K} : Shape{K, N})));
      const std::vector<float> ws = scales(rng, pick(rng, 0, 1) ? static_cast<size_t>(N) : 1, 0.002f);
      quant(b, rng, "wq", DataType::Int8, ws, true);
      attr_int(dq(b, "w", "wq", "wd"), "axis", trans_b ? 0 : 1);
      int32_bias(b, rng, "bias", xs, ws, N, "bd");
      attr_int(b.node("Gemm", {"d", "wd", "bd"}, {"c"}, "gemm"), "transB", trans_b);
      ys = {M, N};
      expect = "QGemm";
    } else {
      const int64_t C = pick(rng, 1, 16), H = pick(rng, 1, 9), W = pick(rng, 1, 9);
      b.input("x", tx, {int64_t{2}, C, H, W});
      b.input("x2", tx, {int64_t{1}, C, int64_t{1}, pick(rng, 0, 1) ? W : int64_t{1}});
      quant(b, rng, "a2", tx, {0.03f});
      dq(b, "x", "a", "d");
      dq(b, "x2", "a2", "d2");
      b.node(kind == 3 ? "Add" : "Mul", {"d", "d2"}, {"c"}, "binary");
      ys = {2, C, H, W};
      expect = kind == 3 ? "QLinearAdd" : "QLinearMul";
    }
    qz(b, "c", "y", "yq");
    b.output("yq", tx, std::vector<DimSpec>(ys.begin(), ys.end()));
    auto original = load_model(b);
    const auto types = op_types(*fused(*original));
    EXPECT_EQ(types, (std::vector<std::string>{expect})) << "problem " << t;
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(t);
    SCOPED_TRACE("problem " + std::to_string(t) + " " + expect);
    expect_close(original, make_inputs(*original, spec), 1, 0.05);
  }
}

}  // namespace
