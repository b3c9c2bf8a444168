// The fuse-rmsnorm and fuse-rotary passes (cpu/passes/fuse_rmsnorm.cpp,
// fuse_rotary.cpp): the forms Llama-style exports write become one
// RMSNormalization / RotaryHalf node. Checked: each written form fires, with
// the node it makes (domain by opset, inputs, attributes, provenance), the
// forms that must not (shared intermediates, other constants, other slices),
// and the fused node's kernels against the unfused graph on the reference:
// RotaryHalf bit for bit (it rounds as the Muls and the Add do), on random
// shapes and broadcasts, through its fast kernel and its reference form.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>

#include "compare_outputs.h"
#include "cpu/fused_ops.h"
#include "cpu/optimizer.h"
#include "cpu/passes/passes.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

using PassFn = bool (*)(Model&, cpu::PassContext&);

std::shared_ptr<Model> apply(const Model& original, PassFn pass, bool expect_change) {
  auto m = std::make_shared<Model>(original);
  Diagnostics log;
  cpu::PassContext ctx{&log};
  EXPECT_EQ(pass(*m, ctx), expect_change);
  return m;
}

onnx::TensorProto floats(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.5f, 1.5f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(gen);
  return make_float_tensor(name, dims, v);
}

struct Observed : Observer {
  std::vector<std::pair<std::string, std::string>> ran;  // (op, kernel)
  void on_node(const NodeEvent& e) override { ran.emplace_back(e.node->op_type, std::string(e.kernel)); }
};

// The CPU engine without rewrites on `rewritten` against the reference on
// `original`, the same inputs; the kernel that ran `op` is returned.
std::string expect_same(const std::shared_ptr<Model>& original, const std::shared_ptr<Model>& rewritten, double tol,
                        const std::string& op, const std::set<std::string>& disabled = {}, uint64_t seed = 3) {
  InputSpec spec;
  spec.seed = seed;
  spec.dims["batch"] = 2;
  spec.dims["seq"] = 5;
  const NamedValues in = make_inputs(*original, spec);
  CpuOptions co;
  co.opt_level = 0;
  co.disabled_kernels = disabled;
  Observed seen;
  RunOptions ro;
  ro.observer = &seen;
  ro.capture_original = false;
  const NamedValues got = make_cpu_engine(co)->prepare(rewritten)->run(in, ro);
  expect_float_outputs(make_reference_engine()->prepare(original)->run(in), got, tol);
  for (const auto& [o, k] : seen.ran)
    if (o == op) return k;
  return "";
}

// --- fuse-rmsnorm --------------------------------------------------------------

struct RmsForm {
  int64_t opset = 18;
  int reciprocal = 0;       // 0 Reciprocal + Mul, 1 Div(x, s), 2 Div(1, s) + Mul
  bool square_by_mul = false;
  bool weight_first = true;  // Mul(weight, n) as transformers' export writes it
  std::vector<int64_t> weight_dims = {16};
  float exponent = 2.f;
  bool shared_mean = false;
  bool eps_input = false;    // eps a graph input: not a constant
  int64_t cast_to = 0;       // a Cast between the normalized value and the weight (TorchScript's .to(dtype))
};

ModelBuilder rms_model(const RmsForm& f) {
  ModelBuilder b(f.opset);
  const std::vector<DimSpec> shape = {std::string("batch"), std::string("seq"), int64_t{16}};
  b.input("x", DataType::Float, shape);
  b.initializer(floats("w", f.weight_dims, 5));
  b.initializer(make_float_tensor("two", {}, {f.exponent}));
  b.initializer(make_float_tensor("one", {}, {1.f}));
  if (f.eps_input) b.input("eps", DataType::Float, {});
  else b.initializer(make_float_tensor("eps", {}, {1e-6f}));
  if (f.square_by_mul) b.node("Mul", {"x", "x"}, {"p"}, "square");
  else b.node("Pow", {"x", "two"}, {"p"}, "pow");
  if (f.opset >= 18) {
    b.initializer(make_int64_tensor("axes", {1}, {-1}));
    b.node("ReduceMean", {"p", "axes"}, {"m"}, "mean");
  } else {
    attr_ints(b.node("ReduceMean", {"p"}, {"m"}, "mean"), "axes", {2});
  }
  b.node("Add", {"m", "eps"}, {"a"}, "add_eps");
  b.node("Sqrt", {"a"}, {"s"}, "sqrt");
  if (f.reciprocal == 0) {
    b.node("Reciprocal", {"s"}, {"r"}, "rsqrt");
    b.node("Mul", {"x", "r"}, {"n"}, "normalize");
  } else if (f.reciprocal == 1) {
    b.node("Div", {"x", "s"}, {"n"}, "normalize");
  } else {
    b.node("Div", {"one", "s"}, {"r"}, "rsqrt");
    b.node("Mul", {"r", "x"}, {"n"}, "normalize");
  }
  if (f.cast_to) attr_int(b.node("Cast", {"n"}, {"nc"}, "cast"), "to", f.cast_to);
  const std::string n = f.cast_to ? "nc" : "n";
  b.node("Mul", f.weight_first ? std::vector<std::string>{"w", n} : std::vector<std::string>{n, "w"}, {"y"}, "scale");
  b.output("y", DataType::Float, shape);
  if (f.shared_mean) {
    b.node("Neg", {"m"}, {"nm"}, "second_reader");
    b.output_untyped("nm");
  }
  return b;
}

TEST(FuseRmsNorm, EveryWrittenFormBecomesOneNode) {
  for (int rec : {0, 1, 2})
    for (bool by_mul : {false, true})
      for (bool weight_first : {false, true}) {
        RmsForm f;
        f.reciprocal = rec;
        f.square_by_mul = by_mul;
        f.weight_first = weight_first;
        SCOPED_TRACE(std::to_string(rec) + (by_mul ? " Mul(x, x)" : " Pow") + (weight_first ? " weight first" : ""));
        auto original = load_model(rms_model(f));
        auto m = apply(*original, cpu::fuse_rmsnorm, true);
        ASSERT_EQ(op_types(*m), (std::vector<std::string>{"RMSNormalization"}));
        const Node& n = m->graph.nodes[0];
        EXPECT_EQ(n.domain, cpu::kCpuDomain);  // opset 18: the engine's own
        EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w"}));
        EXPECT_EQ(n.outputs, (std::vector<std::string>{"y"}));
        EXPECT_EQ(n.attribute("axis")->i, -1);
        EXPECT_FLOAT_EQ(n.attribute("epsilon")->f, 1e-6f);
        EXPECT_EQ(cpu::fused_from(n).size(), rec == 1 ? 6u : 7u);
        EXPECT_EQ(expect_same(original, m, 2e-6, "RMSNormalization"), "cpu-eigen");
        // Its reference form (the cpu kernel left out) agrees too.
        EXPECT_EQ(expect_same(original, m, 2e-6, "RMSNormalization", {"cpu-eigen"}), "fused-reference");
      }
}

TEST(FuseRmsNorm, FromOpset23TheOnnxOperatorAndBelow18TheAxesAttribute) {
  for (int64_t opset : {13, 23}) {
    SCOPED_TRACE(opset);
    RmsForm f;
    f.opset = opset;
    auto original = load_model(rms_model(f));
    auto m = apply(*original, cpu::fuse_rmsnorm, true);
    ASSERT_EQ(op_types(*m), (std::vector<std::string>{"RMSNormalization"}));
    EXPECT_EQ(m->graph.nodes[0].domain, opset >= 23 ? "" : cpu::kCpuDomain);
    EXPECT_EQ(expect_same(original, m, 2e-6, "RMSNormalization"), "cpu-eigen");
  }
}

// The TorchScript exporter's form: Div(1, s), and a Cast to float32 before the weight.
TEST(FuseRmsNorm, TheTorchScriptFormWithItsNoOpCast) {
  RmsForm f;
  f.opset = 14;
  f.reciprocal = 2;
  f.cast_to = 1;
  auto original = load_model(rms_model(f));
  auto m = apply(*original, cpu::fuse_rmsnorm, true);
  ASSERT_EQ(op_types(*m), (std::vector<std::string>{"RMSNormalization"}));
  EXPECT_EQ(cpu::fused_from(m->graph.nodes[0]).size(), 8u);
  EXPECT_EQ(expect_same(original, m, 2e-6, "RMSNormalization"), "cpu-eigen");
  f.cast_to = 10;  // to float16: not the same value
  apply(*load_model(rms_model(f)), cpu::fuse_rmsnorm, false);
}

TEST(FuseRmsNorm, NotForOtherGraphs) {
  RmsForm f;
  f.shared_mean = true;
  apply(*load_model(rms_model(f)), cpu::fuse_rmsnorm, false);
  f = {};
  f.exponent = 3.f;
  apply(*load_model(rms_model(f)), cpu::fuse_rmsnorm, false);
  f = {};
  f.eps_input = true;
  apply(*load_model(rms_model(f)), cpu::fuse_rmsnorm, false);
  f = {};
  f.weight_dims = {2, 1, 16};  // grows the output beyond x
  apply(*load_model(rms_model(f)), cpu::fuse_rmsnorm, false);
}

// --- fuse-rotary -----------------------------------------------------------------

struct RotaryForm {
  bool split = false;          // Split(x) in two instead of two Slices
  bool split_input = true;     // Split's sizes as an input (else equal halves, num_outputs)
  int64_t axis = -1;           // or 3
  std::vector<DimSpec> cos_dims = {int64_t{1}, int64_t{1}, std::string("seq"), int64_t{8}};
  bool swap_products = false;  // Mul(cos, x), Mul(sin, r), Add(second, first)
  int64_t second_start = 4;    // the second half's start (4: half of 8)
  bool concat_swapped = false; // Concat(x1, Neg(x2)): not rotate_half
  bool shared_concat = false;
};

ModelBuilder rotary_model(const RotaryForm& f) {
  ModelBuilder b(18);
  const std::vector<DimSpec> shape = {std::string("batch"), int64_t{3}, std::string("seq"), int64_t{8}};
  b.input("x", DataType::Float, shape);
  b.input("cos", DataType::Float, f.cos_dims);
  b.input("sin", DataType::Float, f.cos_dims);
  if (f.split) {
    if (f.split_input) {
      b.initializer(make_int64_tensor("sizes", {2}, {4, 4}));
      attr_int(b.node("Split", {"x", "sizes"}, {"x1", "x2"}, "split"), "axis", f.axis);
    } else {
      auto& s = b.node("Split", {"x"}, {"x1", "x2"}, "split");
      attr_int(s, "axis", f.axis);
      attr_int(s, "num_outputs", 2);
    }
  } else {
    b.initializer(make_int64_tensor("zero", {1}, {0}));
    b.initializer(make_int64_tensor("half", {1}, {4}));
    b.initializer(make_int64_tensor("start2", {1}, {f.second_start}));
    b.initializer(make_int64_tensor("end", {1}, {std::numeric_limits<int64_t>::max()}));
    b.initializer(make_int64_tensor("axis", {1}, {f.axis}));
    b.initializer(make_int64_tensor("step", {1}, {1}));
    b.node("Slice", {"x", "zero", "half", "axis", "step"}, {"x1"}, "slice1");
    b.node("Slice", {"x", "start2", "end", "axis", "step"}, {"x2"}, "slice2");
  }
  b.node("Neg", {"x2"}, {"nx2"}, "neg");
  attr_int(b.node("Concat", f.concat_swapped ? std::vector<std::string>{"x1", "nx2"} : std::vector<std::string>{"nx2", "x1"},
                  {"r"}, "cat"),
           "axis", f.axis);
  if (f.swap_products) {
    b.node("Mul", {"cos", "x"}, {"a"}, "mul_cos");
    b.node("Mul", {"sin", "r"}, {"c"}, "mul_sin");
    b.node("Add", {"c", "a"}, {"y"}, "add");
  } else {
    b.node("Mul", {"x", "cos"}, {"a"}, "mul_cos");
    b.node("Mul", {"r", "sin"}, {"c"}, "mul_sin");
    b.node("Add", {"a", "c"}, {"y"}, "add");
  }
  b.output_untyped("y");
  if (f.shared_concat) b.output_untyped("r");
  return b;
}

TEST(FuseRotary, SlicesOrSplitBecomeOneNodeWithTheUnfusedBits) {
  for (bool split : {false, true})
    for (int64_t axis : {int64_t{-1}, int64_t{3}})
      for (bool swap : {false, true}) {
        RotaryForm f;
        f.split = split;
        f.axis = axis;
        f.swap_products = swap;
        SCOPED_TRACE(std::string(split ? "Split" : "Slices") + " axis " + std::to_string(axis) + (swap ? " swapped" : ""));
        auto original = load_model(rotary_model(f));
        auto m = apply(*original, cpu::fuse_rotary, true);
        ASSERT_EQ(op_types(*m), (std::vector<std::string>{"RotaryHalf"}));
        const Node& n = m->graph.nodes[0];
        EXPECT_EQ(n.domain, cpu::kCpuDomain);
        EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "cos", "sin"}));
        EXPECT_EQ(n.attribute("split")->i, 4);
        EXPECT_EQ(cpu::fused_from(n).size(), split ? 6u : 7u);
        EXPECT_EQ(expect_same(original, m, 0, "RotaryHalf"), "cpu-simd");
        EXPECT_EQ(expect_same(original, m, 0, "RotaryHalf", {"cpu-simd"}), "fused-reference");
      }
  RotaryForm f;
  f.split = true;
  f.split_input = false;  // num_outputs 2 of a known, even last dim
  auto original = load_model(rotary_model(f));
  auto m = apply(*original, cpu::fuse_rotary, true);
  EXPECT_EQ(expect_same(original, m, 0, "RotaryHalf"), "cpu-simd");
}

// Cos and Sin of every broadcast: [S, D], [B, 1, S, D], a scalar head dim of
// 1 for D (the reference form), a Cos that grows the output beyond X (the
// reference form too): always the unfused graph's bits.
TEST(FuseRotary, EveryBroadcastOfCosAndSin) {
  const std::vector<std::vector<DimSpec>> dims = {
      {std::string("seq"), int64_t{8}},
      {std::string("batch"), int64_t{1}, std::string("seq"), int64_t{8}},
      {int64_t{1}, int64_t{3}, int64_t{1}, int64_t{8}},
      {int64_t{1}, int64_t{1}, std::string("seq"), int64_t{1}},
      {int64_t{4}, int64_t{1}, int64_t{1}, std::string("seq"), int64_t{8}},
  };
  for (size_t i = 0; i < dims.size(); ++i) {
    SCOPED_TRACE(i);
    RotaryForm f;
    f.cos_dims = dims[i];
    auto original = load_model(rotary_model(f));
    auto m = apply(*original, cpu::fuse_rotary, true);
    EXPECT_EQ(expect_same(original, m, 0, "RotaryHalf", {}, 10 + i), i < 3 ? "cpu-simd" : "fused-reference");
  }
}

TEST(FuseRotary, NotForOtherGraphs) {
  RotaryForm f;
  f.second_start = 3;  // overlapping halves
  apply(*load_model(rotary_model(f)), cpu::fuse_rotary, false);
  f = {};
  f.concat_swapped = true;
  apply(*load_model(rotary_model(f)), cpu::fuse_rotary, false);
  f = {};
  f.shared_concat = true;
  apply(*load_model(rotary_model(f)), cpu::fuse_rotary, false);
  f = {};
  f.axis = 2;  // halves of another axis
  apply(*load_model(rotary_model(f)), cpu::fuse_rotary, false);
}

// RotaryHalf's fast kernel against its reference form on random shapes, head
// dims (odd ones and a split past the end included) and broadcasts, with NaN
// and infinities in X.
TEST(RotaryHalfKernel, MatchesItsReferenceFormOnRandomShapes) {
  std::mt19937 gen(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(gen); };
  for (int t = 0; t < 40; ++t) {
    const int64_t D = pick(1, 70), rank = pick(1, 4);
    std::vector<DimSpec> xd;
    for (int64_t d = 0; d + 1 < rank; ++d) xd.push_back(int64_t{pick(1, 5)});
    xd.push_back(D);
    std::vector<DimSpec> cd;  // each leading dim 1 or X's, maybe fewer of them
    const int64_t crank = pick(1, static_cast<int>(rank));
    for (int64_t d = rank - crank; d + 1 < rank; ++d) cd.push_back(pick(0, 1) ? xd[static_cast<size_t>(d)] : DimSpec(int64_t{1}));
    cd.push_back(D);
    const int64_t split = pick(1, static_cast<int>(D) + 2);
    SCOPED_TRACE("D " + std::to_string(D) + " split " + std::to_string(split) + " rank " + std::to_string(rank) + "/" +
                 std::to_string(crank));
    ModelBuilder b(18);
    b.opset("onnxscope.cpu", 1);
    b.input("x", DataType::Float, xd);
    b.input("cos", DataType::Float, cd);
    b.input("sin", DataType::Float, cd);
    attr_int(b.node("RotaryHalf", {"x", "cos", "sin"}, {"y"}, "rot", "onnxscope.cpu"), "split", split);
    b.output_untyped("y");
    auto m = load_model(b);
    InputSpec spec;
    spec.seed = static_cast<uint64_t>(t);
    NamedValues in = make_inputs(*m, spec);
    float* x = in[0].second.tensor().mutable_data<float>();
    if (t % 4 == 3 && in[0].second.tensor().element_count() > 2) {
      x[0] = std::numeric_limits<float>::quiet_NaN();
      x[1] = std::numeric_limits<float>::infinity();
    }
    CpuOptions fast, plain;
    fast.opt_level = plain.opt_level = 0;
    plain.disabled_kernels = {"cpu-simd"};
    Observed seen;
    RunOptions ro;
    ro.observer = &seen;
    ro.capture_original = false;
    const NamedValues got = make_cpu_engine(fast)->prepare(m)->run(in, ro);
    ASSERT_EQ(seen.ran.size(), 1u);
    EXPECT_EQ(seen.ran[0].second, "cpu-simd");
    expect_float_outputs(make_cpu_engine(plain)->prepare(m)->run(in), got, 0);
  }
}

}  // namespace
