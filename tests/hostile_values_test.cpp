// Values from a model's data that reached memory unchecked (an audit of every
// engine's kernels, after a bit-flipped mask crashed constant folding): each
// now gives the same answer on the reference, cpu and cuda-sim engines, a
// result where the spec defines one and a clear error where it does not,
// never an out-of-bounds access or an allocation without bound. Run under
// ASan + UBSan too (docs/hardening.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "model_builder.h"
#include "onnxscope/engines.h"
#include "onnxscope/loader.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

const char* kEngines[] = {"reference", "cpu", "cuda-sim"};

struct Outcome {
  bool ok = false;
  std::string error;
  NamedValues outputs;
};

Outcome run(const char* engine, const ModelBuilder& b, const NamedValues& inputs, uint64_t max_tensor = uint64_t{256} << 20) {
  Outcome o;
  EngineSettings s;
  s.threads = 1;
  s.limits.max_tensor_bytes = max_tensor;
  try {
    LoadResult r = b.load();
    if (!r.ok()) throw std::runtime_error("does not load: " + dump(r));
    std::shared_ptr<const Model> m(std::move(r.model));
    o.outputs = make_engine(engine, s)->prepare(m)->run(inputs);
    o.ok = true;
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}

Tensor floats(Shape s, float fill) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(s));
  for (uint64_t i = 0; i < t.element_count(); ++i) t.mutable_data<float>()[i] = fill;
  return t;
}

Tensor iota(int64_t n) {
  Tensor t = Tensor::zeros(DataType::Float, {n});
  for (int64_t i = 0; i < n; ++i) t.mutable_data<float>()[i] = static_cast<float>(i);
  return t;
}

std::vector<float> values(const Value& v) {
  const Tensor& t = v.tensor();
  return std::vector<float>(t.data<float>(), t.data<float>() + t.element_count());
}

// Every engine refuses with an error containing `part` (one of them each).
void expect_error_everywhere(const ModelBuilder& b, const NamedValues& in, const std::vector<std::string>& parts,
                             uint64_t max_tensor = uint64_t{256} << 20) {
  for (const char* e : kEngines) {
    Outcome o = run(e, b, in, max_tensor);
    EXPECT_FALSE(o.ok) << e << " ran it";
    bool found = false;
    for (const auto& p : parts) found = found || o.error.find(p) != std::string::npos;
    EXPECT_TRUE(found) << e << ": " << o.error;
  }
}

}  // namespace

// Pad whose begin is -2^63 on a row of 1000, end 2^63 - 999: one output
// element. Constant mode: the CUDA engine negated the begin, kept the whole
// row and wrote 1000 elements into a 1-element output; the element is the
// constant. The other modes crop first and pad from what is left (as
// onnxruntime does), and a begin of -2^63 leaves nothing: a clear error on
// every engine, no overflow on the way.
TEST(HostileValues, PadOfMinusTwoToTheSixtyThree) {
  for (const char* mode : {"constant", "edge", "wrap", "reflect"}) {
    ModelBuilder b(19, 9);
    b.input("x", DataType::Float, {int64_t{1000}});
    b.initializer(make_int64_tensor("pads", {2}, {kMin, kMax - 998}));
    attr_string(b.node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", mode);
    b.output("y", DataType::Float, {int64_t{1}});
    if (std::string(mode) != "constant") {
      SCOPED_TRACE(mode);
      expect_error_everywhere(b, {{"x", Value(iota(1000))}}, {"remove all 1000"});
      continue;
    }
    for (const char* e : kEngines) {
      Outcome o = run(e, b, {{"x", Value(iota(1000))}});
      ASSERT_TRUE(o.ok) << e << " " << mode << ": " << o.error;
      EXPECT_EQ(values(o.outputs[0].second), std::vector<float>{0.f}) << e;
    }
  }
}

// Wrap and reflect with a negative pad at one end and a positive one at the
// other: the part left after the crop is what is wrapped or reflected (as
// onnxruntime and PyTorch's circular pad do). [0 1 2 3 4] with pads [-1, 2]:
// wrap [1 2 3 4 1 2] (not [1 2 3 4 0 1]), reflect [1 2 3 4 3 2].
TEST(HostileValues, PadCropsBeforeWrappingOrReflecting) {
  for (const char* mode : {"wrap", "reflect", "edge"}) {
    ModelBuilder b(19, 9);
    b.input("x", DataType::Float, {int64_t{5}});
    b.initializer(make_int64_tensor("pads", {2}, {-1, 2}));
    attr_string(b.node("Pad", {"x", "pads"}, {"y"}, "pad"), "mode", mode);
    b.output("y", DataType::Float, {int64_t{6}});
    const std::string m = mode;
    const std::vector<float> want = m == "wrap" ? std::vector<float>{1, 2, 3, 4, 1, 2}
                                    : m == "reflect" ? std::vector<float>{1, 2, 3, 4, 3, 2}
                                                     : std::vector<float>{1, 2, 3, 4, 4, 4};
    for (const char* e : kEngines) {
      Outcome o = run(e, b, {{"x", Value(iota(5))}});
      ASSERT_TRUE(o.ok) << e << " " << mode << ": " << o.error;
      EXPECT_EQ(values(o.outputs[0].second), want) << e << " " << mode;
    }
  }
}

// A reduction with no axes and noop_with_empty_axes reduces nothing but
// keeps its elementwise part (the spec: ReduceSumSquare acts as a Square).
// The CUDA engine returned X for every operator: ReduceSumSquare gave x, not
// x^2 (found by a differential run of random reductions on the three engines).
TEST(HostileValues, ReduceWithNoAxesAndNoopKeepsItsElementwisePart) {
  const std::vector<float> x{-2.0f, 0.5f, 3.0f};
  const std::pair<const char*, std::vector<float>> ops[] = {
      {"ReduceSumSquare", {4.0f, 0.25f, 9.0f}}, {"ReduceL1", {2.0f, 0.5f, 3.0f}},  {"ReduceL2", {2.0f, 0.5f, 3.0f}},
      {"ReduceLogSumExp", {-2.0f, 0.5f, 3.0f}}, {"ReduceSum", {-2.0f, 0.5f, 3.0f}}, {"ReduceMax", {-2.0f, 0.5f, 3.0f}}};
  for (const auto& [op, want] : ops) {
    ModelBuilder b(18, 9);
    b.input("x", DataType::Float, {int64_t{3}});
    b.initializer(make_int64_tensor("axes", {0}, {}));
    attr_int(b.node(op, {"x", "axes"}, {"y"}, "r"), "noop_with_empty_axes", 1);
    b.output("y", DataType::Float, {int64_t{3}});
    Tensor t = Tensor::zeros(DataType::Float, {3});
    std::copy(x.begin(), x.end(), t.mutable_data<float>());
    for (const char* e : kEngines) {
      Outcome o = run(e, b, {{"x", Value(t)}});
      ASSERT_TRUE(o.ok) << e << " " << op << ": " << o.error;
      const std::vector<float> got = values(o.outputs[0].second);
      ASSERT_EQ(got.size(), want.size()) << e << " " << op;
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << e << " " << op << " at " << i;
    }
  }
}

// LayerNormalization's Scale and B broadcast to the normalized dims, as the
// spec's Mul and Add do: [1, 3, 1] on [2, 3, 2] normalized from axis 0. The
// CUDA engine took only one element or the dims in full, and refused this
// (found by a differential run of random layer normalizations).
TEST(HostileValues, LayerNormScaleAndBiasBroadcastToTheNormalizedDims) {
  ModelBuilder b(17, 9);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{2}});
  b.initializer(make_float_tensor("scale", {1, 3, 1}, {1.0f, 2.0f, -1.0f}));
  b.initializer(make_float_tensor("bias", {3, 1}, {0.0f, 10.0f, 20.0f}));
  attr_int(b.node("LayerNormalization", {"x", "scale", "bias"}, {"y"}, "ln"), "axis", 0);
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}, int64_t{2}});
  Tensor x = Tensor::zeros(DataType::Float, {2, 3, 2});
  for (int i = 0; i < 12; ++i) x.mutable_data<float>()[i] = static_cast<float>(i % 2 ? i : -i);
  // Mean and spread over all 12 values, in double.
  double mean = 0, var = 0;
  for (int i = 0; i < 12; ++i) mean += x.data<float>()[i] / 12.0;
  for (int i = 0; i < 12; ++i) var += (x.data<float>()[i] - mean) * (x.data<float>()[i] - mean) / 12.0;
  const float sc[3] = {1, 2, -1}, bi[3] = {0, 10, 20};
  for (const char* e : kEngines) {
    Outcome o = run(e, b, {{"x", Value(x)}});
    ASSERT_TRUE(o.ok) << e << ": " << o.error;
    const std::vector<float> got = values(o.outputs[0].second);
    ASSERT_EQ(got.size(), 12u) << e;
    for (int i = 0; i < 12; ++i) {
      const int c = (i / 2) % 3;
      const double want = (x.data<float>()[i] - mean) / std::sqrt(var + 1e-5) * sc[c] + bi[c];
      EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-4) << e << " at " << i;
    }
  }
}

// A Reshape whose target's element count wraps to the input's: [2^62+1, 4]
// of 4 elements. The CUDA engine made a view of 2^64+4 elements on 16 bytes.
TEST(HostileValues, ReshapeWhoseTargetOverflows) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{4}});
  b.initializer(make_int64_tensor("shape", {2}, {(int64_t{1} << 62) + 1, 4}));
  b.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.output_untyped("y");
  expect_error_everywhere(b, {{"x", Value(iota(4))}}, {"overflow", "more elements than fit", "too large", "elements"});
}

// Split sizes whose sum wraps to the dim: [2^63-1, 2^63-1, 2, 4] of 4. The
// third output started 2 elements before x.
TEST(HostileValues, SplitSizesWhoseSumWraps) {
  ModelBuilder b(18, 8);
  b.input("x", DataType::Float, {int64_t{4}});
  b.initializer(make_int64_tensor("split", {4}, {kMax, kMax, 2, 4}));
  b.node("Split", {"x", "split"}, {"", "", "a", "b"}, "split");
  b.output_untyped("a");
  b.output_untyped("b");
  expect_error_everywhere(b, {{"x", Value(iota(4))}}, {"add up to more than"});
}

// Reductions over axis 0 of a scalar indexed an empty vector.
TEST(HostileValues, ReduceOverAnAxisOfAScalar) {
  ModelBuilder b(18, 8);
  b.input("x", DataType::Float, {});
  b.initializer(make_int64_tensor("axes", {1}, {0}));
  b.node("ReduceSum", {"x", "axes"}, {"y"}, "sum");
  b.output_untyped("y");
  expect_error_everywhere(b, {{"x", Value(floats({}, 2.f))}}, {"out of range", "outside"});
  ModelBuilder m(18, 8);
  m.input("x", DataType::Float, {});
  m.node("MeanVarianceNormalization", {"x"}, {"y"}, "mvn");
  m.output_untyped("y");
  expect_error_everywhere(m, {{"x", Value(floats({}, 2.f))}}, {"out of range", "outside"});
}

// A linear Resize of [1, 4096] to [4194304, 1]: 16 MB of output, but the
// first of its one-axis passes made [4194304, 4096] doubles (128 GiB).
TEST(HostileValues, ResizeWhoseIntermediateIsHuge) {
  ModelBuilder b(18, 8);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{4096}});
  b.initializer(make_float_tensor("roi", {0}, {}));
  b.initializer(make_float_tensor("scales", {0}, {}));
  b.initializer(make_int64_tensor("sizes", {2}, {4194304, 1}));
  attr_string(b.node("Resize", {"x", "roi", "scales", "sizes"}, {"y"}, "resize"), "mode", "linear");
  b.output_untyped("y");
  for (const char* e : kEngines) {
    Outcome o = run(e, b, {{"x", Value(floats({1, 4096}, 1.f))}}, uint64_t{256} << 20);
    // The reference refuses the intermediate; the others resize in another order or run it in bounds.
    if (!o.ok) {
      EXPECT_NE(o.error.find("limit"), std::string::npos) << e << ": " << o.error;
    } else {
      EXPECT_EQ(o.outputs[0].second.tensor().shape(), (Shape{4194304, 1})) << e;
    }
  }
  EXPECT_FALSE(run("reference", b, {{"x", Value(floats({1, 4096}, 1.f))}}).ok);
}

// STFT with frame_step 1 and a long frame: 2^33 doubles of result before
// the output's size was checked.
TEST(HostileValues, StftWhoseOutputIsHuge) {
  ModelBuilder b(17, 8);
  b.input("signal", DataType::Float, {int64_t{1}, int64_t{1} << 18, int64_t{1}});
  b.initializer(make_int64_tensor("step", {}, {1}));
  b.initializer(make_int64_tensor("length", {}, {int64_t{1} << 17}));
  b.node("STFT", {"signal", "step", "", "length"}, {"y"}, "stft");
  b.output_untyped("y");
  expect_error_everywhere(b, {{"signal", Value(floats({1, int64_t{1} << 18, 1}, 0.5f))}}, {"limit", "too large"},
                          uint64_t{64} << 20);
}

// A 1 MiB string expanded to 100,000 copies: 100 GB of text, while the
// output's size check counted one empty std::string per element.
TEST(HostileValues, StringsCopiedPastTheLimit) {
  ModelBuilder b(17, 8);
  onnx::TensorProto big;
  big.set_name("s");
  big.set_data_type(static_cast<int32_t>(DataType::String));
  big.add_string_data(std::string(1 << 20, 'x'));
  b.initializer(big);
  b.input("unused", DataType::Float, {int64_t{1}});
  b.initializer(make_int64_tensor("shape", {1}, {100000}));
  b.node("Expand", {"s", "shape"}, {"y"}, "expand");
  b.output_untyped("y");
  for (const char* e : kEngines) {
    Outcome o = run(e, b, {{"unused", Value(floats({1}, 0))}}, uint64_t{64} << 20);
    EXPECT_FALSE(o.ok) << e;
    EXPECT_NE(o.error.find("bytes of text"), std::string::npos) << e << ": " << o.error;
  }
}

// DFT and MelWeightMatrix sized by data: the CUDA engine built a twiddle
// table or edge list of that length on the host before any size check.
TEST(HostileValues, SignalSizesFromData) {
  ModelBuilder b(20, 9);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{8}, int64_t{1}});
  b.initializer(make_int64_tensor("len", {}, {int64_t{1} << 40}));
  b.node("DFT", {"x", "len"}, {"y"}, "dft");
  b.output_untyped("y");
  expect_error_everywhere(b, {{"x", Value(floats({1, 8, 1}, 1.f))}}, {"limit", "too large", "exceed"});

  ModelBuilder m(17, 8);
  m.input("unused", DataType::Float, {int64_t{1}});
  m.initializer(make_int64_tensor("bins", {}, {int64_t{1} << 40}));
  m.initializer(make_int64_tensor("dft", {}, {64}));
  m.initializer(make_int64_tensor("rate", {}, {16000}));
  m.initializer(make_float_tensor("lo", {}, {0.f}));
  m.initializer(make_float_tensor("hi", {}, {8000.f}));
  m.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"w"}, "mel");
  m.output_untyped("w");
  expect_error_everywhere(m, {{"unused", Value(floats({1}, 0))}}, {"limit", "too large", "exceed"});
  // NaN hertz made int64 from NaN; now the edges fall outside and say so.
  ModelBuilder n(17, 8);
  n.input("unused", DataType::Float, {int64_t{1}});
  n.initializer(make_int64_tensor("bins", {}, {8}));
  n.initializer(make_int64_tensor("dft", {}, {64}));
  n.initializer(make_int64_tensor("rate", {}, {16000}));
  n.initializer(make_float_tensor("lo", {}, {NAN}));
  n.initializer(make_float_tensor("hi", {}, {8000.f}));
  n.node("MelWeightMatrix", {"bins", "dft", "rate", "lo", "hi"}, {"w"}, "mel");
  n.output_untyped("w");
  expect_error_everywhere(n, {{"unused", Value(floats({1}, 0))}}, {"outside"});
}

// Offsets and grids from data that are NaN or infinite: no float-to-int
// conversion out of range (UBSan), the same answer on every engine.
TEST(HostileValues, NonFiniteCoordinates) {
  ModelBuilder g(20, 9);
  g.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  g.input("grid", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{3}, int64_t{2}});
  attr_string(g.node("GridSample", {"x", "grid"}, {"y"}, "gs"), "padding_mode", "reflection");
  g.output_untyped("y");
  Tensor grid = Tensor::zeros(DataType::Float, {1, 1, 3, 2});
  const float gv[] = {INFINITY, 0.f, -3e38f, 0.5f, 0.25f, -INFINITY};
  std::memcpy(grid.mutable_raw(), gv, sizeof gv);
  std::vector<std::vector<float>> got;
  for (const char* e : kEngines) {
    Outcome o = run(e, g, {{"x", Value(floats({1, 1, 2, 2}, 1.5f))}, {"grid", Value(grid)}});
    ASSERT_TRUE(o.ok) << e << ": " << o.error;
    got.push_back(values(o.outputs[0].second));
  }
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[0], got[2]);

  ModelBuilder d(19, 9);
  d.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{3}, int64_t{3}});
  d.initializer(make_float_tensor("w", {1, 1, 1, 1}, {1.f}));
  d.input("offset", DataType::Float, {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{3}});
  d.node("DeformConv", {"x", "w", "offset"}, {"y"}, "deform");
  d.output_untyped("y");
  Tensor offset = floats({1, 2, 3, 3}, 0.f);
  offset.mutable_data<float>()[0] = NAN;
  offset.mutable_data<float>()[1] = INFINITY;
  offset.mutable_data<float>()[2] = 3e38f;
  for (const char* e : kEngines) {
    Outcome o = run(e, d, {{"x", Value(floats({1, 1, 3, 3}, 1.f))}, {"offset", Value(offset)}});
    ASSERT_TRUE(o.ok) << e << ": " << o.error;
    const auto y = values(o.outputs[0].second);
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1])) << e;
    EXPECT_EQ(y[2], 0.f) << e;  // far outside: every tap reads 0
    EXPECT_EQ(y[3], 1.f) << e;
  }
}

// Index inputs whose value is not the type the model declares (fed directly,
// past make_inputs' check): the CUDA kernels read them by the declared type.
TEST(HostileValues, IndexInputsOfAnotherTypeThanDeclared) {
  ModelBuilder b(23, 10);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{4}});
  b.input("pos", DataType::Int64, {int64_t{1}, int64_t{2}});
  b.initializer(make_float_tensor("cos", {4, 2}, std::vector<float>(8, 1.f)));
  b.initializer(make_float_tensor("sin", {4, 2}, std::vector<float>(8, 0.f)));
  b.node("RotaryEmbedding", {"x", "cos", "sin", "pos"}, {"y"}, "rope");
  b.output_untyped("y");
  Tensor pos32 = Tensor::zeros(DataType::Int32, {1, 2});
  for (const char* e : kEngines) {
    Outcome o = run(e, b, {{"x", Value(floats({1, 1, 2, 4}, 1.f))}, {"pos", Value(pos32)}});
    if (!o.ok) {
      EXPECT_FALSE(o.error.empty()) << e;  // refused with a reason, or read as what it is
    }
  }
  Outcome cuda = run("cuda-sim", b, {{"x", Value(floats({1, 1, 2, 4}, 1.f))}, {"pos", Value(pos32)}});
  EXPECT_FALSE(cuda.ok);
}

// Padding from attributes makes an output far larger than the input: the
// reference's working buffer in double was made before the output's size
// check (found by fuzz_model from a real-model seed: a 256 GB vector).
TEST(HostileValues, ConvAndPoolWhosePaddingIsHuge) {
  ModelBuilder c(17, 8);
  c.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  c.initializer(make_float_tensor("w", {1, 1, 1, 1}, {1.f}));
  attr_ints(c.node("Conv", {"x", "w"}, {"y"}, "conv"), "pads", {0, 0, 100000, 100000});
  c.output_untyped("y");
  expect_error_everywhere(c, {{"x", Value(floats({1, 1, 4, 4}, 1.f))}}, {"limit"});
  ModelBuilder p(17, 8);
  p.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
  auto& n = p.node("AveragePool", {"x"}, {"y"}, "pool");
  attr_ints(n, "kernel_shape", {1, 1});
  attr_ints(n, "pads", {0, 0, 100000, 100000});
  p.output_untyped("y");
  expect_error_everywhere(p, {{"x", Value(floats({1, 1, 4, 4}, 1.f))}}, {"limit"});
  // The 8-bit convolutions: the reference's int64 sums were made before any
  // size check (the mutation sweep found it: a QOperator MobileNetV3 whose
  // pads were changed, an out-of-memory abort under ASan).
  const Tensor x8 = Tensor::zeros(DataType::Uint8, {1, 1, 4, 4});
  for (const bool qlinear : {true, false}) {
    SCOPED_TRACE(qlinear ? "QLinearConv" : "ConvInteger");
    ModelBuilder q(17, 8);
    q.input("x", DataType::Uint8, {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}});
    q.initializer(make_tensor_raw("w", DataType::Uint8, {1, 1, 1, 1}, std::string(1, '\x02')));
    q.initializer(make_float_tensor("s", {}, {0.5f}));
    q.initializer(make_tensor_raw("z", DataType::Uint8, {}, std::string(1, '\0')));
    auto& conv = qlinear ? q.node("QLinearConv", {"x", "s", "z", "w", "s", "z", "s", "z"}, {"y"}, "conv")
                         : q.node("ConvInteger", {"x", "w", "z", "z"}, {"y"}, "conv");
    attr_ints(conv, "pads", {0, 0, 100000, 100000});
    q.output_untyped("y");
    expect_error_everywhere(q, {{"x", Value(x8)}}, {"limit"});
  }
}

// A value_info that lies about a tensor's channels: the cpu engine planned
// its blocked (NCHWc) layout from the declaration, and the reference form of
// the blocked Conv read past the tensor it got (the mutation sweep found it:
// a ResNet whose Relu input was rewired; the values came out as 9e18).
TEST(HostileValues, BlockedConvOnATensorThatIsNotWhatWasDeclared) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  b.initializer(make_float_tensor("w1", {16, 16, 3, 3}, std::vector<float>(16 * 16 * 9, 0.01f)));
  b.initializer(make_float_tensor("w2", {64, 32, 3, 3}, std::vector<float>(64 * 32 * 9, 0.01f)));
  attr_ints(b.node("Conv", {"x", "w1"}, {"a"}, "conv_a"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"a"}, {"r"}, "relu");
  attr_ints(b.node("Conv", {"r", "w2"}, {"y"}, "conv_b"), "pads", {1, 1, 1, 1});
  for (const char* v : {"a", "r"}) *b.graph().add_value_info() = make_value(v, DataType::Float, {int64_t{1}, int64_t{32}, int64_t{8}, int64_t{8}});
  b.output("y", DataType::Float, {int64_t{1}, int64_t{64}, int64_t{8}, int64_t{8}});
  expect_error_everywhere(b, {{"x", Value(floats({1, 16, 8, 8}, 1.f))}}, {"does not hold", "channel", "C "});
}

// Window attributes near 2^63: the CUDA engine's window arithmetic overflowed
// (found by fuzz_model: 7 * (2^63 - 1) in a dilated pool).
TEST(HostileValues, WindowAttributesNearTwoToTheSixtyThree) {
  for (const std::vector<int64_t>& dil : {std::vector<int64_t>{kMax, 1}, std::vector<int64_t>{int64_t{1} << 40, 1}}) {
    ModelBuilder p(17, 8);
    p.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{8}, int64_t{8}});
    auto& n = p.node("MaxPool", {"x"}, {"y"}, "pool");
    attr_ints(n, "kernel_shape", {8, 1});
    attr_ints(n, "dilations", dil);
    p.output_untyped("y");
    expect_error_everywhere(p, {{"x", Value(floats({1, 1, 8, 8}, 1.f))}}, {"dilation", "window", "does not fit", "larger"});
  }
}

// Attributes that leave a type's range: Shrink on integers with a bias of
// -1e30 converted a double past int32 to int32 (undefined; now saturated),
// and a Conv's group of -2^63 overflowed in the cpu engine's layout pass
// (found by fuzz_model and by the ASan + UBSan sweep).
TEST(HostileValues, AttributesOutsideTheirTypesRange) {
  ModelBuilder s(17, 8);
  s.input("x", DataType::Int32, {int64_t{3}});
  auto& n = s.node("Shrink", {"x"}, {"y"}, "shrink");
  attr_float(n, "bias", -1e30f);
  attr_float(n, "lambd", 1.f);
  s.output("y", DataType::Int32, {int64_t{3}});
  Tensor x = Tensor::zeros(DataType::Int32, {3});
  const int32_t xv[] = {5, 0, -5};
  std::memcpy(x.mutable_raw(), xv, sizeof xv);
  for (const char* e : kEngines) {
    Outcome o = run(e, s, {{"x", Value(x)}});
    ASSERT_TRUE(o.ok) << e << ": " << o.error;
    const int32_t* y = o.outputs[0].second.tensor().data<int32_t>();
    EXPECT_EQ(y[0], std::numeric_limits<int32_t>::max()) << e;  // 5 - (-1e30), saturated
    EXPECT_EQ(y[1], 0) << e;
    EXPECT_EQ(y[2], std::numeric_limits<int32_t>::min()) << e;
  }
  ModelBuilder c(17, 8);
  c.input("x", DataType::Float, {int64_t{1}, int64_t{16}, int64_t{4}, int64_t{4}});
  c.initializer(make_float_tensor("w", {16, 16, 1, 1}, std::vector<float>(256, 0.5f)));
  attr_int(c.node("Conv", {"x", "w"}, {"y"}, "conv"), "group", kMin);
  c.output_untyped("y");
  expect_error_everywhere(c, {{"x", Value(floats({1, 16, 4, 4}, 1.f))}}, {"group"});
}

// An SVM's polynomial degree is a float in kernel_params: -inf was converted to
// int64 (undefined; found by fuzz_model). It is refused, naming it.
TEST(HostileValues, SvmDegreeThatIsNoNumber) {
  for (float degree : {-INFINITY, NAN, 1e30f}) {
    ModelBuilder b(17, 8);
    b.opset("ai.onnx.ml", 3);
    b.input("x", DataType::Float, {int64_t{1}, int64_t{2}});
    auto& n = b.node("SVMRegressor", {"x"}, {"y"}, "svm");
    n.set_domain("ai.onnx.ml");
    attr_string(n, "kernel_type", "POLY");
    attr_floats(n, "kernel_params", {1.f, 0.f, degree});
    attr_int(n, "n_supports", 1);
    attr_floats(n, "support_vectors", {1.f, 2.f});
    attr_floats(n, "coefficients", {1.f});
    attr_floats(n, "rho", {0.f});
    b.output_untyped("y");
    expect_error_everywhere(b, {{"x", Value(floats({1, 2}, 1.f))}}, {"degree"});
  }
}

// QLinearMatMul / QLinearConv whose scales make a NaN multiplier (0 * s / 0):
// the NaN was converted to int8 (undefined; found by fuzz_model). Every
// element is the zero point, as QuantizeLinear gives NaN, on every engine.
TEST(HostileValues, RequantizingByANaNMultiplier) {
  for (bool conv : {false, true}) {
    ModelBuilder b(13, 8);
    const Shape xs = conv ? Shape{1, 2, 3, 3} : Shape{2, 3};
    b.input("x", DataType::Int8, std::vector<DimSpec>(xs.begin(), xs.end()));
    b.initializer(make_float_tensor("xs", {}, {0.f}));
    b.initializer(make_tensor_raw("xz", DataType::Int8, {}, std::string(1, '\0')));
    const Shape ws = conv ? Shape{2, 2, 1, 1} : Shape{3, 2};
    b.initializer(make_tensor_raw("w", DataType::Int8, ws, std::string(conv ? 4 : 6, '\x03')));
    b.initializer(make_float_tensor("ws", {}, {1.f}));
    b.initializer(make_tensor_raw("wz", DataType::Int8, {}, std::string(1, '\0')));
    b.initializer(make_float_tensor("ys", {}, {0.f}));
    b.initializer(make_tensor_raw("yz", DataType::Int8, {}, std::string(1, '\x07')));
    if (conv) b.node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "q");
    else b.node("QLinearMatMul", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "q");
    b.output_untyped("y");
    Tensor x = Tensor::zeros(DataType::Int8, xs);
    for (uint64_t i = 0; i < x.element_count(); ++i) x.mutable_data<int8_t>()[i] = static_cast<int8_t>(i + 1);
    for (const char* e : kEngines) {
      Outcome o = run(e, b, {{"x", Value(x)}});
      ASSERT_TRUE(o.ok) << e << ": " << o.error;
      const Tensor& y = o.outputs[0].second.tensor();
      for (uint64_t i = 0; i < y.element_count(); ++i) EXPECT_EQ(y.data<int8_t>()[i], 7) << e << (conv ? " conv" : " matmul");
    }
  }
}

// A MaxPool of uint32 whose pads leave some windows with nothing but padding:
// the maximum there, -inf in double, was converted to uint32 (undefined; found
// by fuzz_model). It is the type's lowest value; a Pad-2 value of 1e30 on
// int32 saturates the same way.
TEST(HostileValues, MaxOverPaddingOnlyAndHugePadValuesOnIntegers) {
  ModelBuilder b(12, 8);
  b.input("x", DataType::Uint32, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  auto& n = b.node("MaxPool", {"x"}, {"y"}, "pool");
  attr_ints(n, "kernel_shape", {1, 1});
  attr_ints(n, "pads", {2, 0, 0, 0});
  b.output_untyped("y");
  Tensor x = Tensor::zeros(DataType::Uint32, {1, 1, 2, 2});
  for (uint32_t i = 0; i < 4; ++i) x.mutable_data<uint32_t>()[i] = 7 + i;
  Outcome o = run("reference", b, {{"x", Value(x)}});
  ASSERT_TRUE(o.ok) << o.error;
  const Tensor& y = o.outputs[0].second.tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 1, 4, 2}));
  const uint32_t want[] = {0, 0, 0, 0, 7, 8, 9, 10};  // two rows of padding only, then the input
  for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(y.data<uint32_t>()[i], want[i]) << i;

  ModelBuilder p(2, 3);
  p.input("x", DataType::Int32, {int64_t{2}});
  auto& pn = p.node("Pad", {"x"}, {"y"}, "pad");
  attr_ints(pn, "pads", {1, 1});
  attr_float(pn, "value", 1e30f);
  p.output_untyped("y");
  Tensor xi = Tensor::zeros(DataType::Int32, {2});
  Outcome po = run("reference", p, {{"x", Value(xi)}});
  ASSERT_TRUE(po.ok) << po.error;
  EXPECT_EQ(po.outputs[0].second.tensor().data<int32_t>()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(po.outputs[0].second.tensor().data<int32_t>()[3], std::numeric_limits<int32_t>::max());
}

// A Slice whose step is INT64_MIN (or INT64_MAX) takes one element: the CUDA
// engine multiplied the step into the stride anyway (6368 * INT64_MIN,
// undefined; found by fuzz_model under cuda-sim). Every engine gives the
// reference's element.
TEST(HostileValues, SliceStepsAtTheEndsOfInt64) {
  for (int64_t step : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    ModelBuilder b(13, 8);
    b.input("x", DataType::Float, {int64_t{3}, int64_t{5}});
    const int64_t start = step < 0 ? -1 : 1;
    b.initializer(make_int64_tensor("s", {1}, {start}));
    b.initializer(make_int64_tensor("e", {1}, {step < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max()}));
    b.initializer(make_int64_tensor("a", {1}, {1}));
    b.initializer(make_int64_tensor("st", {1}, {step}));
    b.node("Slice", {"x", "s", "e", "a", "st"}, {"y"}, "slice");
    b.output_untyped("y");
    Tensor x = floats({3, 5}, 0.f);
    for (uint64_t i = 0; i < 15; ++i) x.mutable_data<float>()[i] = static_cast<float>(i);
    for (const char* e : kEngines) {
      Outcome o = run(e, b, {{"x", Value(x)}});
      ASSERT_TRUE(o.ok) << e << ": " << o.error;
      const Tensor& y = o.outputs[0].second.tensor();
      ASSERT_EQ(y.shape(), (Shape{3, 1})) << e;
      for (int64_t r = 0; r < 3; ++r) EXPECT_EQ(y.data<float>()[r], static_cast<float>(r * 5 + (step < 0 ? 4 : 1))) << e;
    }
  }
}

// An Expand whose target multiplies past int64: the CUDA engine's broadcast
// plan multiplied the dims into strides first (4 * 2^62, undefined; found by
// the ASan sweep on a mutated DistilBERT). Every engine refuses it.
TEST(HostileValues, ExpandPastInt64) {
  ModelBuilder b(13, 8);
  b.input("x", DataType::Float, {int64_t{4}, int64_t{1}});
  b.initializer(make_int64_tensor("shape", {2}, {1, int64_t{1} << 62}));
  b.node("Expand", {"x", "shape"}, {"y"}, "expand");
  b.output_untyped("y");
  expect_error_everywhere(b, {{"x", Value(floats({4, 1}, 1.f))}}, {"overflow", "more elements", "larger than the limit"});
}

// Pools whose kernel_shape is 2^31 - 1 over an input of 2 (mutated by
// fuzz_model): the reference listed every kernel position (24 GB), cuda-sim
// walked them for each output and oneDNN took seconds creating the primitive.
// Now the taps inside X are found by division, and every engine answers at
// once with the reference's values.
TEST(HostileValues, PoolWindowOfTwoToTheThirtyOneOverTwoValues) {
  const int64_t huge = (int64_t{1} << 31) - 1;
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) {
    for (int include_pad = 0; include_pad < 2; ++include_pad) {
      if (include_pad && std::string(op) != "AveragePool") continue;
      ModelBuilder b(18, 8);
      b.input("x", DataType::Float, {int64_t{1}, int64_t{1}, int64_t{2}});
      auto& n = b.node(op, {"x"}, {"y"}, "pool");
      attr_ints(n, "kernel_shape", {huge});
      attr_ints(n, "pads", {huge + 1, 0});
      if (include_pad) attr_int(n, "count_include_pad", 1);
      b.output_untyped("y");
      Tensor x = floats({1, 1, 2}, 1.f);
      x.mutable_data<float>()[1] = 2.f;
      std::vector<float> want;
      for (const char* e : kEngines) {
        Outcome o = run(e, b, {{"x", Value(x)}});
        ASSERT_TRUE(o.ok) << op << " on " << e << ": " << o.error;
        const std::vector<float> got = values(o.outputs[0].second);
        ASSERT_EQ(got.size(), 4u) << op << " on " << e;
        if (want.empty()) want = got;
        for (size_t i = 0; i < got.size(); ++i)
          EXPECT_TRUE(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))
              << op << " on " << e << " [" << i << "]: " << got[i] << " vs " << want[i];
      }
      // The last window covers both values; the first covers padding only.
      if (std::string(op) == "MaxPool") {
        EXPECT_EQ(want[3], 2.f);
      } else if (std::string(op) == "AveragePool" && !include_pad) {
        EXPECT_EQ(want[3], 1.5f);
      } else if (std::string(op) == "AveragePool") {
        EXPECT_NEAR(want[3], 3.0 / static_cast<double>(huge), 1e-15);
      }
    }
  }
}

// GatherElements with an index just past either end or at the ends of int64
// and int32: every engine refuses it (the cpu kernel checks each index as it
// reads it, reads inside the data whatever the index, and fails naming it).
TEST(HostileValues, GatherElementsIndicesOutOfRange) {
  // 4 columns: the scalar loop; 21: the cpu engine's 8-wide gathers, with the
  // bad index inside a vector (element 10) and in the tail (element 20).
  for (const int64_t cols : {int64_t{4}, int64_t{21}})
    for (const int64_t at : {int64_t{7}, int64_t{cols + 10}, int64_t{cols + 20}}) {
      if (at >= 3 * cols) continue;
      for (const int64_t bad : {int64_t{5}, int64_t{-6}, kMax, kMin, int64_t{INT32_MAX}, int64_t{INT32_MIN}}) {
        for (const bool wide : {true, false}) {
          if (!wide && (bad == kMax || bad == kMin)) continue;
          ModelBuilder b(13, 8);
          b.input("x", DataType::Float, {int64_t{3}, int64_t{5}});
          b.input("i", wide ? DataType::Int64 : DataType::Int32, {int64_t{3}, cols});
          attr_int(b.node("GatherElements", {"x", "i"}, {"y"}, "gather"), "axis", 1);
          b.output_untyped("y");
          Tensor i = Tensor::zeros(wide ? DataType::Int64 : DataType::Int32, {3, cols});
          for (int64_t e = 0; e < 3 * cols; ++e) {
            const int64_t v = e == at ? bad : e % 5;
            if (wide) i.mutable_data<int64_t>()[e] = v;
            else i.mutable_data<int32_t>()[e] = static_cast<int32_t>(v);
          }
          expect_error_everywhere(b, {{"x", Value(floats({3, 5}, 1.f))}, {"i", Value(i)}},
                                  {"out of range", "out of bounds", "index"});
        }
      }
    }
}

// A 1-D convolution whose padding is far wider than X, with more input
// channels than outputs: the cpu engine's own 1-D kernel copies X into a
// padded buffer (C x padded width), which must stay within the tensor limit
// like any tensor (here 1 MiB against a copy of 25 MiB, for an output of 0.4
// MiB): it leaves the node to the kernels behind it, which run it. An engine
// either gives the right output (the bias where every tap reads padding) or
// refuses naming the limit (cuda-sim's own padded buffer).
TEST(HostileValues, Conv1dPaddedFarPastXStaysWithinTheTensorLimit) {
  const int64_t pad = 100000;
  ModelBuilder b(13, 8);
  b.input("x", DataType::Float, {int64_t{1}, int64_t{64}, int64_t{1}});
  b.initializer(make_float_tensor("w", {1, 64, 1}, std::vector<float>(64, 0.5f)));
  b.initializer(make_float_tensor("b", {1}, {0.25f}));
  attr_ints(b.node("Conv", {"x", "w", "b"}, {"y"}, "conv"), "pads", {pad, 0});
  b.output_untyped("y");
  for (const char* e : kEngines) {
    Outcome o = run(e, b, {{"x", Value(floats({1, 64, 1}, 1.f))}}, uint64_t{1} << 20);
    if (!o.ok && std::string(e) != "cpu") {
      EXPECT_NE(o.error.find("--max-tensor-bytes"), std::string::npos) << e << ": " << o.error;
      continue;
    }
    ASSERT_TRUE(o.ok) << e << ": " << o.error;
    const std::vector<float> got = values(o.outputs[0].second);
    ASSERT_EQ(got.size(), static_cast<size_t>(pad + 1)) << e;
    EXPECT_EQ(got.front(), 0.25f) << e;        // the tap in the padding
    EXPECT_EQ(got.back(), 0.25f + 32.f) << e;  // the last reads X
  }
  // Which cpu kernel ran it: not the one whose padded copy passes the limit.
  struct KernelOf : Observer {
    std::string kernel;
    void on_node(const NodeEvent& ev) override { kernel = std::string(ev.kernel); }
  } k;
  LoadResult r = b.load();
  ASSERT_TRUE(r.ok());
  std::shared_ptr<const Model> m(std::move(r.model));
  EngineSettings es;
  es.limits.max_tensor_bytes = uint64_t{1} << 20;
  RunOptions ro;
  ro.observer = &k;
  make_engine("cpu", es)->prepare(m)->run({{"x", Value(floats({1, 64, 1}, 1.f))}}, ro);
  EXPECT_NE(k.kernel, "cpu-gemm");
  EXPECT_FALSE(k.kernel.empty());
}

// Split-18 whose num_outputs is 2^62 for a node of two outputs (mutated by
// fuzz_model): the CUDA engine listed 2^62 sizes before comparing (16 GB in
// 38 s under cuda-sim). Every engine refuses it at once, naming num_outputs.
TEST(HostileValues, SplitNumOutputsOfTwoToTheSixtyTwo) {
  ModelBuilder b(22, 9);
  b.input("x", DataType::Float, {int64_t{4}});
  auto& n = b.node("Split", {"x"}, {"y", "z"}, "split");
  attr_int(n, "axis", -1);
  attr_int(n, "num_outputs", int64_t{1} << 62);
  b.output_untyped("y");
  b.output_untyped("z");
  expect_error_everywhere(b, {{"x", Value(iota(4))}}, {"num_outputs"});
}

// Clip-6 with float bounds on int8: a max of 65504 was converted to int8
// (undefined; found by fuzz_model). It saturates, and a NaN bound bounds nothing.
TEST(HostileValues, ClipBoundsPastAnIntegerTypesRange) {
  ModelBuilder b(6, 3);
  b.input("x", DataType::Int8, {int64_t{3}});
  auto& n = b.node("Clip", {"x"}, {"y"}, "clip");
  attr_float(n, "max", 65504.f);
  attr_float(n, "min", NAN);
  b.output("y", DataType::Int8, {int64_t{3}});
  Tensor x = Tensor::zeros(DataType::Int8, {3});
  const int8_t xv[] = {-128, 5, 127};
  std::memcpy(x.mutable_raw(), xv, sizeof xv);
  Outcome o = run("reference", b, {{"x", Value(x)}});
  ASSERT_TRUE(o.ok) << o.error;
  const int8_t* y = o.outputs[0].second.tensor().data<int8_t>();
  EXPECT_EQ(y[0], -128);
  EXPECT_EQ(y[1], 5);
  EXPECT_EQ(y[2], 127);
}
