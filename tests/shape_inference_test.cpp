// Shape inference: element types from schemas, per-op shape rules, folding of
// small shape computations, subgraphs and conflicts with declared types.
#include <gtest/gtest.h>

#include <limits>

#include "model_builder.h"
#include "onnxscope/ir.h"
#include "onnxscope/shape_inference.h"

namespace onnxscope::test {
namespace {

using D = DataType;

// Zero-filled float initializer of the given shape.
onnx::TensorProto zeros(const std::string& name, const std::vector<int64_t>& dims, D t = D::Float) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  size_t bytes = static_cast<size_t>(n) * (t == D::Float ? 4 : t == D::Int64 ? 8 : 1);
  return make_tensor_raw(name, t, dims, std::string(bytes, '\0'));
}

onnx::TensorProto ints(const std::string& name, const std::vector<int64_t>& values) {
  return make_int64_tensor(name, {static_cast<int64_t>(values.size())}, values);
}

onnx::TensorProto scalar(const std::string& name, int64_t v) { return make_int64_tensor(name, {}, {v}); }

onnx::TensorProto floats(const std::string& name, const std::vector<float>& values) {
  return make_float_tensor(name, {static_cast<int64_t>(values.size())}, values);
}

// Loads the model and returns it; fails the test on load errors.
class Loaded {
 public:
  explicit Loaded(const ModelBuilder& b) : r_(b.load()) {
    EXPECT_TRUE(r_.ok()) << dump(r_);
  }
  std::string type(const std::string& name) const { return type_in(r_.model ? &r_.model->graph : nullptr, name); }
  static std::string type_in(const Graph* g, const std::string& name) {
    if (!g) return "<no model>";
    const TypeInfo* t = g->type_of(name);
    return t ? t->to_string() : "<none>";
  }
  const LoadResult& result() const { return r_; }
  const Graph& graph() const { return r_.model->graph; }

 private:
  LoadResult r_;
};

TEST(ShapeInference, UnaryOpsKeepShapeAndType) {
  ModelBuilder b;
  b.input("x", D::Float, {"N", 3, 224, 224}).input("m", D::Bool, {"N", 5});
  b.node("Relu", {"x"}, {"a"});
  b.node("Sigmoid", {"a"}, {"b"});
  b.node("Erf", {"b"}, {"c"});
  b.node("Sqrt", {"c"}, {"d"});
  auto& clip = b.node("LeakyRelu", {"d"}, {"e"});
  attr_float(clip, "alpha", 0.2f);
  b.node("Not", {"m"}, {"f"});
  b.node("Clip", {"e", "", ""}, {"g"});
  b.output_untyped("g").output_untyped("f");
  Loaded l(b);
  EXPECT_EQ(l.type("a"), "float[N,3,224,224]");
  EXPECT_EQ(l.type("e"), "float[N,3,224,224]");
  EXPECT_EQ(l.type("g"), "float[N,3,224,224]");
  EXPECT_EQ(l.type("f"), "bool[N,5]");
}

TEST(ShapeInference, BroadcastingWithSymbolicDims) {
  ModelBuilder b;
  b.input("a", D::Float, {"N", 1, 5})
      .input("b", D::Float, {4, 1})
      .input("p", D::Float, {"A"})
      .input("q", D::Float, {"B"})
      .input("r", D::Float, {"A"})
      .input("c", D::Bool, {1, 5})
      .input("i", D::Uint8, {3, 1});
  b.node("Add", {"a", "b"}, {"add"});
  b.node("Mul", {"p", "q"}, {"pq"});
  b.node("Sub", {"p", "r"}, {"pr"});
  b.node("Equal", {"a", "b"}, {"eq"});
  b.node("Where", {"c", "b", "a"}, {"w"});
  b.node("Sum", {"a", "b", "p"}, {"sum"});
  attr_string(b.node("BitShift", {"i", "i"}, {"bs"}), "direction", "LEFT");
  for (auto o : {"add", "pq", "pr", "eq", "w", "sum", "bs"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("add"), "float[N,4,5]");
  EXPECT_EQ(l.type("pq"), "float[?]");  // A vs B: one may be 1, unknown
  EXPECT_EQ(l.type("pr"), "float[A]");
  EXPECT_EQ(l.type("eq"), "bool[N,4,5]");
  EXPECT_EQ(l.type("w"), "float[N,4,5]");
  EXPECT_EQ(l.type("sum"), "float[N,4,5]");
  EXPECT_EQ(l.type("bs"), "uint8[3,1]");
}

TEST(ShapeInference, ResNetStemWithSymbolicBatch) {
  ModelBuilder b(13);
  b.input("x", D::Float, {"N", 3, 224, 224});
  b.initializer(zeros("w1", {64, 3, 7, 7})).initializer(zeros("w2", {64, 64, 3, 3}));
  for (auto n : {"s", "bias", "mean", "var"}) b.initializer(zeros(n, {64}));
  b.initializer(zeros("fc_w", {1000, 64})).initializer(zeros("fc_b", {1000}));
  auto& c1 = b.node("Conv", {"x", "w1"}, {"c1"}, "conv1");
  attr_ints(c1, "kernel_shape", {7, 7});
  attr_ints(c1, "strides", {2, 2});
  attr_ints(c1, "pads", {3, 3, 3, 3});
  b.node("BatchNormalization", {"c1", "s", "bias", "mean", "var"}, {"bn1"});
  b.node("Relu", {"bn1"}, {"r1"});
  auto& mp = b.node("MaxPool", {"r1"}, {"p1"});
  attr_ints(mp, "kernel_shape", {3, 3});
  attr_ints(mp, "strides", {2, 2});
  attr_ints(mp, "pads", {1, 1, 1, 1});
  auto& c2 = b.node("Conv", {"p1", "w2"}, {"c2"});
  attr_ints(c2, "pads", {1, 1, 1, 1});
  b.node("Add", {"c2", "p1"}, {"res"});
  b.node("GlobalAveragePool", {"res"}, {"gap"});
  b.node("Flatten", {"gap"}, {"flat"});
  auto& fc = b.node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"});
  attr_int(fc, "transB", 1);
  b.output("logits", D::Float, {"N", 1000});
  Loaded l(b);
  EXPECT_EQ(l.type("c1"), "float[N,64,112,112]");
  EXPECT_EQ(l.type("bn1"), "float[N,64,112,112]");
  EXPECT_EQ(l.type("p1"), "float[N,64,56,56]");
  EXPECT_EQ(l.type("c2"), "float[N,64,56,56]");
  EXPECT_EQ(l.type("res"), "float[N,64,56,56]");
  EXPECT_EQ(l.type("gap"), "float[N,64,1,1]");
  EXPECT_EQ(l.type("flat"), "float[N,64]");
  EXPECT_EQ(l.type("logits"), "float[N,1000]");
  EXPECT_FALSE(has_code(l.result(), "shape-conflict", Severity::Warning)) << dump(l.result());
}

TEST(ShapeInference, ConvAutoPadDilationsAndSymbolicSpatial) {
  ModelBuilder b;
  b.input("x", D::Float, {1, 8, 7, 9}).input("y", D::Float, {"N", 8, "H", "W"});
  b.initializer(zeros("w", {16, 8, 3, 3})).initializer(zeros("wg", {16, 2, 3, 3}));
  auto& same = b.node("Conv", {"x", "w"}, {"same"});
  attr_string(same, "auto_pad", "SAME_UPPER");
  attr_ints(same, "strides", {2, 2});
  auto& valid = b.node("Conv", {"x", "w"}, {"valid"});
  attr_string(valid, "auto_pad", "VALID");
  auto& dil = b.node("Conv", {"x", "w"}, {"dil"});
  attr_ints(dil, "dilations", {2, 3});
  auto& grp = b.node("Conv", {"x", "wg"}, {"grp"});
  attr_int(grp, "group", 4);
  attr_ints(grp, "pads", {1, 1, 1, 1});
  auto& sym = b.node("Conv", {"y", "w"}, {"sym"});
  attr_ints(sym, "pads", {1, 1, 1, 1});
  b.node("Conv", {"y", "w"}, {"sym_nopad"});
  for (auto o : {"same", "valid", "dil", "grp", "sym", "sym_nopad"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("same"), "float[1,16,4,5]");
  EXPECT_EQ(l.type("valid"), "float[1,16,5,7]");
  EXPECT_EQ(l.type("dil"), "float[1,16,3,3]");
  EXPECT_EQ(l.type("grp"), "float[1,16,7,9]");
  EXPECT_EQ(l.type("sym"), "float[N,16,H,W]");
  EXPECT_EQ(l.type("sym_nopad"), "float[N,16,?,?]");
}

TEST(ShapeInference, ConvTranspose) {
  ModelBuilder b;
  b.input("x", D::Float, {"N", 8, 10, 10});
  b.initializer(zeros("w", {8, 4, 3, 3}));
  auto& up = b.node("ConvTranspose", {"x", "w"}, {"up"});
  attr_ints(up, "strides", {2, 2});
  attr_ints(up, "pads", {1, 1, 1, 1});
  attr_ints(up, "output_padding", {1, 1});
  auto& grp = b.node("ConvTranspose", {"x", "w"}, {"grp"});
  attr_int(grp, "group", 2);
  auto& os = b.node("ConvTranspose", {"x", "w"}, {"os"});
  attr_ints(os, "strides", {2, 2});
  attr_ints(os, "output_shape", {21, 22});
  auto& same = b.node("ConvTranspose", {"x", "w"}, {"same"});
  attr_ints(same, "strides", {3, 3});
  attr_string(same, "auto_pad", "SAME_UPPER");
  for (auto o : {"up", "grp", "os", "same"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("up"), "float[N,4,20,20]");
  EXPECT_EQ(l.type("grp"), "float[N,8,12,12]");
  EXPECT_EQ(l.type("os"), "float[N,4,21,22]");
  EXPECT_EQ(l.type("same"), "float[N,4,30,30]");
}

TEST(ShapeInference, PoolingCeilModeAndGlobalPools) {
  ModelBuilder b(19);
  b.input("x", D::Float, {1, 4, 6, 7});
  auto& fl = b.node("MaxPool", {"x"}, {"floor", "idx"});
  attr_ints(fl, "kernel_shape", {3, 3});
  attr_ints(fl, "strides", {2, 2});
  auto& ce = b.node("MaxPool", {"x"}, {"ceil"});
  attr_ints(ce, "kernel_shape", {3, 3});
  attr_ints(ce, "strides", {2, 2});
  attr_int(ce, "ceil_mode", 1);
  // ceil_mode with padding: the last window would start in the end padding and is dropped.
  auto& cp = b.node("AveragePool", {"x"}, {"ceil_pad"});
  attr_ints(cp, "kernel_shape", {2, 2});
  attr_ints(cp, "strides", {2, 2});
  attr_ints(cp, "pads", {1, 1, 1, 1});
  attr_int(cp, "ceil_mode", 1);
  auto& lp = b.node("LpPool", {"x"}, {"lp"});
  attr_ints(lp, "kernel_shape", {2, 2});
  attr_string(lp, "auto_pad", "SAME_LOWER");
  attr_ints(lp, "strides", {4, 4});
  b.node("GlobalMaxPool", {"x"}, {"gmp"});
  for (auto o : {"floor", "idx", "ceil", "ceil_pad", "lp", "gmp"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("floor"), "float[1,4,2,3]");
  EXPECT_EQ(l.type("idx"), "int64[1,4,2,3]");
  EXPECT_EQ(l.type("ceil"), "float[1,4,3,3]");
  EXPECT_EQ(l.type("ceil_pad"), "float[1,4,4,4]");
  EXPECT_EQ(l.type("lp"), "float[1,4,2,2]");
  EXPECT_EQ(l.type("gmp"), "float[1,4,1,1]");
}

TEST(ShapeInference, Normalizations) {
  ModelBuilder b(17);
  b.input("x", D::Float16, {"N", "S", 64}).input("img", D::Float, {2, 8, 5, 5});
  b.initializer(zeros("g", {64})).initializer(zeros("s8", {8}));
  b.proto().mutable_graph()->mutable_initializer(0)->set_data_type(static_cast<int32_t>(D::Float16));
  b.proto().mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(128, '\0'));
  b.node("LayerNormalization", {"x", "g"}, {"ln", "mean", "inv"});
  b.node("InstanceNormalization", {"img", "s8", "s8"}, {"in"});
  auto& bn = b.node("BatchNormalization", {"img", "s8", "s8", "s8", "s8"}, {"bn", "rm", "rv"});
  attr_int(bn, "training_mode", 1);
  for (auto o : {"ln", "mean", "inv", "in", "bn", "rm", "rv"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("ln"), "float16[N,S,64]");
  EXPECT_EQ(l.type("mean"), "float[N,S,1]");
  EXPECT_EQ(l.type("inv"), "float[N,S,1]");
  EXPECT_EQ(l.type("in"), "float[2,8,5,5]");
  EXPECT_EQ(l.type("bn"), "float[2,8,5,5]");
  EXPECT_EQ(l.type("rm"), "float[8]");
}

TEST(ShapeInference, GemmAndMatMul) {
  ModelBuilder b;
  b.input("a", D::Float, {"K", "M"})
      .input("b", D::Float, {"K", 7})
      .input("x", D::Float, {"N", "S", 64})
      .input("w", D::Float, {64, 32})
      .input("v", D::Float, {3})
      .input("m", D::Float, {3, 4})
      .input("b4", D::Float, {2, 1, 3, 4})
      .input("b3", D::Float, {5, 4, 6});
  auto& g = b.node("Gemm", {"a", "b"}, {"gemm"});
  attr_int(g, "transA", 1);
  b.node("MatMul", {"x", "w"}, {"mm"});
  b.node("MatMul", {"v", "m"}, {"vm"});
  b.node("MatMul", {"v", "v"}, {"dot"});
  b.node("MatMul", {"b4", "b3"}, {"batched"});
  b.node("MatMul", {"m", "v"}, {"bad"});  // inner dims 4 vs 3
  for (auto o : {"gemm", "mm", "vm", "dot", "batched", "bad"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("gemm"), "float[M,7]");
  EXPECT_EQ(l.type("mm"), "float[N,S,32]");
  EXPECT_EQ(l.type("vm"), "float[4]");
  EXPECT_EQ(l.type("dot"), "float[]");
  EXPECT_EQ(l.type("batched"), "float[2,5,3,6]");
  EXPECT_EQ(l.type("bad"), "float[...]");
  EXPECT_TRUE(has_code(l.result(), "shape-inference", Severity::Info)) << dump(l.result());
}

TEST(ShapeInference, FlattenAndTranspose) {
  ModelBuilder b;
  b.input("x", D::Float, {"N", 3, 4, 5});
  auto& f2 = b.node("Flatten", {"x"}, {"f2"});
  attr_int(f2, "axis", 2);
  auto& f0 = b.node("Flatten", {"x"}, {"f0"});
  attr_int(f0, "axis", 0);
  auto& fn = b.node("Flatten", {"x"}, {"fneg"});
  attr_int(fn, "axis", -1);
  auto& t = b.node("Transpose", {"x"}, {"t"});
  attr_ints(t, "perm", {0, 2, 3, 1});
  b.node("Transpose", {"x"}, {"rev"});
  for (auto o : {"f2", "f0", "fneg", "t", "rev"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("f2"), "float[?,20]");
  EXPECT_EQ(l.type("f0"), "float[1,?]");
  EXPECT_EQ(l.type("fneg"), "float[?,5]");
  EXPECT_EQ(l.type("t"), "float[N,4,5,3]");
  EXPECT_EQ(l.type("rev"), "float[5,4,3,N]");
}

TEST(ShapeInference, ReshapeWithConstantShape) {
  ModelBuilder b(14);
  b.input("x", D::Float, {2, 3, 4}).input("y", D::Float, {"N", 3, 4}).input("z", D::Float, {0, 3});
  b.initializer(ints("s1", {0, -1})).initializer(ints("s2", {-1, 4})).initializer(ints("s3", {3, 0}));
  b.initializer(ints("s4", {0, 12}));
  b.node("Reshape", {"x", "s1"}, {"r1"});
  b.node("Reshape", {"y", "s2"}, {"r2"});
  b.node("Reshape", {"y", "s4"}, {"r4"});
  auto& az = b.node("Reshape", {"z", "s3"}, {"r3"});
  attr_int(az, "allowzero", 1);
  for (auto o : {"r1", "r2", "r3", "r4"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("r1"), "float[2,12]");
  EXPECT_EQ(l.type("r2"), "float[?,4]");
  EXPECT_EQ(l.type("r3"), "float[3,0]");
  EXPECT_EQ(l.type("r4"), "float[N,12]");
}

// The exported-model pattern: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
TEST(ShapeInference, FoldsShapeGatherConcatReshape) {
  ModelBuilder b(13);
  b.input("x", D::Float, {"N", 3, 4});
  b.initializer(scalar("zero", 0)).initializer(ints("axes0", {0})).initializer(ints("minus1", {-1}));
  b.node("Shape", {"x"}, {"shape"});
  b.node("Gather", {"shape", "zero"}, {"batch"});
  b.node("Unsqueeze", {"batch", "axes0"}, {"batch1"});
  auto& cat = b.node("Concat", {"batch1", "minus1"}, {"target"});
  attr_int(cat, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"});
  b.output_untyped("y");
  Loaded l(b);
  EXPECT_EQ(l.type("shape"), "int64[3]");
  EXPECT_EQ(l.type("batch"), "int64[]");
  EXPECT_EQ(l.type("batch1"), "int64[1]");
  EXPECT_EQ(l.type("target"), "int64[2]");
  EXPECT_EQ(l.type("y"), "float[N,12]");
}

TEST(ShapeInference, FoldsSliceCastArithmeticAndConstantOfShape) {
  ModelBuilder b(13);
  b.input("x", D::Float, {"N", 64, 7, 7});
  b.initializer(ints("st", {0})).initializer(ints("en", {2})).initializer(ints("minus1", {-1}));
  b.initializer(ints("two", {2})).initializer(ints("axis0", {0}));
  b.node("Shape", {"x"}, {"s"});
  b.node("Slice", {"s", "st", "en"}, {"nc"});
  auto& cat = b.node("Concat", {"nc", "minus1"}, {"target"});
  attr_int(cat, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"flat"});
  // Shape arithmetic: [N,64,7,7] * 2 -> ConstantOfShape
  b.node("Mul", {"s", "two"}, {"s2"});
  auto& cast = b.node("Cast", {"s2"}, {"s2i"});
  attr_int(cast, "to", static_cast<int64_t>(D::Int32));
  auto& cast_back = b.node("Cast", {"s2i"}, {"s2l"});
  attr_int(cast_back, "to", static_cast<int64_t>(D::Int64));
  b.node("ConstantOfShape", {"s2l"}, {"filled"});
  b.node("ConstantOfShape", {"s"}, {"same"});
  b.node("ReduceProd", {"s"}, {"numel"});
  for (auto o : {"flat", "filled", "same", "numel"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("nc"), "int64[2]");
  EXPECT_EQ(l.type("flat"), "float[N,64,49]");
  EXPECT_EQ(l.type("s2i"), "int32[4]");
  EXPECT_EQ(l.type("filled"), "float[?,128,14,14]");
  EXPECT_EQ(l.type("same"), "float[N,64,7,7]");
  EXPECT_EQ(l.type("numel"), "int64[1]");
}

// torch's x.expand_as pattern: Where(Equal(shape, -1), 1, shape) -> Expand.
TEST(ShapeInference, FoldsEqualWhereExpandPattern) {
  ModelBuilder b(13);
  b.input("x", D::Float, {1, 1, 4}).input("y", D::Float, {"N", 3, 4});
  b.initializer(scalar("m1", -1));
  b.node("Shape", {"y"}, {"ys"});
  b.node("Shape", {"ys"}, {"yss"});
  auto& ones = b.node("ConstantOfShape", {"yss"}, {"ones"});
  attr_tensor(ones, "value", make_int64_tensor("", {1}, {1}));
  b.node("Mul", {"ones", "m1"}, {"neg"});
  b.node("Equal", {"ys", "neg"}, {"eq"});
  b.node("Where", {"eq", "ones", "ys"}, {"target"});
  b.node("Expand", {"x", "target"}, {"out"});
  b.output_untyped("out");
  Loaded l(b);
  EXPECT_EQ(l.type("ones"), "int64[3]");
  EXPECT_EQ(l.type("eq"), "bool[3]");
  EXPECT_EQ(l.type("target"), "int64[3]");
  EXPECT_EQ(l.type("out"), "float[N,3,4]");
}

TEST(ShapeInference, UnknownShapeInputsLeaveDimsUnknown) {
  ModelBuilder b(13);
  b.input("x", D::Float, {20, 10, 5}).input("starts", D::Int64, {2}).input("ends", D::Int64, {2});
  b.input("xs", D::Float, {1, 1, 2, 2}).input("idx", D::Int64, {1, 1, 2, 2}).input("os", D::Int64, {4});
  b.input("target", D::Int64, {3});
  b.node("Slice", {"x", "starts", "ends"}, {"sl"});
  auto& up = b.node("MaxUnpool", {"xs", "idx", "os"}, {"unpooled"});
  attr_ints(up, "kernel_shape", {2, 2});
  attr_ints(up, "strides", {2, 2});
  b.node("Reshape", {"x", "target"}, {"r"});
  b.node("ConstantOfShape", {"target"}, {"c"});
  for (auto o : {"sl", "unpooled", "r", "c"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("sl"), "float[?,?,5]");
  EXPECT_EQ(l.type("unpooled"), "float[?,?,?,?]");
  EXPECT_EQ(l.type("r"), "float[?,?,?]");
  EXPECT_EQ(l.type("c"), "float[?,?,?]");
}

TEST(ShapeInference, SequencesLossesAndUnique) {
  ModelBuilder b(17);
  b.input("a", D::Float, {2, 3}).input("c", D::Float, {2, 3}).input("pos", D::Int64, {});
  b.input("scores", D::Float, {"N", 5}).input("labels", D::Int64, {"N"});
  b.node("SequenceConstruct", {"a", "c"}, {"seq"});
  b.node("SequenceAt", {"seq", "pos"}, {"at"});
  b.node("SequenceLength", {"seq"}, {"len"});
  attr_int(b.node("ConcatFromSequence", {"seq"}, {"cat"}), "axis", 0);
  attr_string(b.node("NegativeLogLikelihoodLoss", {"scores", "labels"}, {"nll"}), "reduction", "none");
  b.node("SoftmaxCrossEntropyLoss", {"scores", "labels"}, {"sce", "logp"});
  b.node("Unique", {"a"}, {"u", "ui", "uinv", "ucount"});
  for (auto o : {"seq", "at", "len", "cat", "nll", "sce", "logp", "u", "ui", "uinv", "ucount"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("seq"), "seq(float[2,3])");
  EXPECT_EQ(l.type("at"), "float[2,3]");
  EXPECT_EQ(l.type("len"), "int64[]");
  EXPECT_EQ(l.type("cat"), "float[...]");
  EXPECT_EQ(l.type("nll"), "float[N]");
  EXPECT_EQ(l.type("sce"), "float[]");
  EXPECT_EQ(l.type("logp"), "float[N,5]");
  EXPECT_EQ(l.type("u"), "float[?]");
  EXPECT_EQ(l.type("ucount"), "int64[?]");
}

TEST(ShapeInference, ExpandTileRangeFromFoldedValues) {
  ModelBuilder b(13);
  b.input("x", D::Float, {3, 1}).input("y", D::Float, {"B", 1});
  b.initializer(ints("shape", {2, 1, 4})).initializer(ints("reps", {2, 3}));
  b.initializer(scalar("start", 0)).initializer(scalar("delta", 3)).initializer(scalar("one", 1));
  b.node("Expand", {"x", "shape"}, {"ex"});
  b.node("Tile", {"x", "reps"}, {"tile"});
  b.node("Shape", {"y"}, {"ys"});
  b.node("Expand", {"x", "ys"}, {"ex_sym"});
  attr_int(b.node("Constant", {}, {"limit"}), "value_int", 10);
  b.node("Range", {"start", "limit", "delta"}, {"range"});
  b.node("Range", {"start", "limit", "one"}, {"r10"});
  b.node("Shape", {"r10"}, {"r10s"});
  b.node("ConstantOfShape", {"r10s"}, {"cos"});
  for (auto o : {"ex", "tile", "ex_sym", "range", "cos"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("ex"), "float[2,3,4]");
  EXPECT_EQ(l.type("tile"), "float[6,3]");
  EXPECT_EQ(l.type("ex_sym"), "float[3,1]") << "B must be 3 or 1; only the known 3 is certain";
  EXPECT_EQ(l.type("limit"), "int64[]");
  EXPECT_EQ(l.type("range"), "int64[4]");
  EXPECT_EQ(l.type("cos"), "float[10]");
}

TEST(ShapeInference, ConcatAndSplit) {
  ModelBuilder b(13);
  b.input("a", D::Float, {"N", 2, 5}).input("c", D::Float, {"N", 3, 5}).input("d", D::Float, {"N", "K", 5});
  b.initializer(ints("sizes", {2, 3}));
  auto& cat = b.node("Concat", {"a", "c"}, {"cat"});
  attr_int(cat, "axis", 1);
  auto& cat2 = b.node("Concat", {"a", "d"}, {"cat_sym"});
  attr_int(cat2, "axis", -2);
  auto& sp = b.node("Split", {"cat", "sizes"}, {"p0", "p1"});
  attr_int(sp, "axis", 1);
  auto& even = b.node("Split", {"a"}, {"e0", "e1", "e2", "e3", "e4"});
  attr_int(even, "axis", 2);
  for (auto o : {"cat", "cat_sym", "p0", "p1", "e0", "e4"}) b.output_untyped(o);
  for (auto o : {"e1", "e2", "e3"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("cat"), "float[N,5,5]");
  EXPECT_EQ(l.type("cat_sym"), "float[N,?,5]");
  EXPECT_EQ(l.type("p0"), "float[N,2,5]");
  EXPECT_EQ(l.type("p1"), "float[N,3,5]");
  EXPECT_EQ(l.type("e4"), "float[N,2,1]");
}

TEST(ShapeInference, SplitOldAttrAndNumOutputs) {
  ModelBuilder old(11);
  old.input("x", D::Float, {6, 4});
  auto& s = old.node("Split", {"x"}, {"a", "b"});
  attr_ints(s, "split", {1, 5});
  old.output_untyped("a").output_untyped("b");
  Loaded l(old);
  EXPECT_EQ(l.type("a"), "float[1,4]");
  EXPECT_EQ(l.type("b"), "float[5,4]");

  ModelBuilder v18(18);
  v18.input("x", D::Float, {10});
  auto& n = v18.node("Split", {"x"}, {"a", "b", "c"});
  attr_int(n, "num_outputs", 3);
  v18.output_untyped("a").output_untyped("b").output_untyped("c");
  Loaded l18(v18);
  EXPECT_EQ(l18.type("a"), "float[4]");
  EXPECT_EQ(l18.type("c"), "float[2]");
}

TEST(ShapeInference, SqueezeUnsqueezeAttributeAndInputForms) {
  ModelBuilder old(11);
  old.input("x", D::Float, {"N", 1, 5, 1});
  auto& sq = old.node("Squeeze", {"x"}, {"sq"});
  attr_ints(sq, "axes", {1});
  auto& us = old.node("Unsqueeze", {"x"}, {"us"});
  attr_ints(us, "axes", {0, -1});
  old.node("Squeeze", {"x"}, {"sq_all"});  // N may be 1: rank unknown
  old.output_untyped("sq").output_untyped("us").output_untyped("sq_all");
  Loaded l(old);
  EXPECT_EQ(l.type("sq"), "float[N,5,1]");
  EXPECT_EQ(l.type("us"), "float[1,N,1,5,1,1]");
  EXPECT_EQ(l.type("sq_all"), "float[...]");

  ModelBuilder v13(13);
  v13.input("x", D::Float, {2, 1, 5, 1});
  v13.initializer(ints("axes", {-1, 1})).initializer(ints("uaxes", {1}));
  v13.node("Squeeze", {"x", "axes"}, {"sq"});
  v13.node("Squeeze", {"x"}, {"sq_all"});
  v13.node("Unsqueeze", {"sq", "uaxes"}, {"us"});
  v13.output_untyped("sq").output_untyped("sq_all").output_untyped("us");
  Loaded l13(v13);
  EXPECT_EQ(l13.type("sq"), "float[2,5]");
  EXPECT_EQ(l13.type("sq_all"), "float[2,5]");
  EXPECT_EQ(l13.type("us"), "float[2,1,5]");
}

TEST(ShapeInference, GatherFamily) {
  ModelBuilder b(13);
  b.input("data", D::Float, {"N", 10, 5}).input("idx", D::Int64, {3, 2}).input("el", D::Int64, {"N", 4, 5});
  b.input("nd", D::Int64, {"N", 2});
  auto& g = b.node("Gather", {"data", "idx"}, {"g"});
  attr_int(g, "axis", 1);
  auto& ge = b.node("GatherElements", {"data", "el"}, {"ge"});
  attr_int(ge, "axis", 1);
  b.node("GatherND", {"data", "nd"}, {"gnd"});
  auto& bad = b.node("Gather", {"data", "idx"}, {"bad"});
  attr_int(bad, "axis", 5);
  for (auto o : {"g", "ge", "gnd", "bad"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("g"), "float[N,3,2,5]");
  EXPECT_EQ(l.type("ge"), "float[N,4,5]");
  EXPECT_EQ(l.type("gnd"), "float[N,5]");
  EXPECT_EQ(l.type("bad"), "float[...]");
  EXPECT_TRUE(has_code(l.result(), "shape-inference", Severity::Info)) << dump(l.result());
}

TEST(ShapeInference, SliceInputsAndAttributes) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  ModelBuilder b(13);
  b.input("x", D::Float, {"N", 3, 10});
  b.initializer(ints("s1", {1})).initializer(ints("e1", {-1})).initializer(ints("a2", {2}));
  b.initializer(ints("s0", {0})).initializer(ints("emax", {kMax})).initializer(ints("a0", {0}));
  b.initializer(ints("sneg", {-1})).initializer(ints("emin", {std::numeric_limits<int64_t>::min()}));
  b.initializer(ints("stepneg", {-2})).initializer(ints("s_big", {1, 1})).initializer(ints("e_big", {100, 3}));
  b.initializer(ints("a12", {2, 1}));
  b.node("Slice", {"x", "s1", "e1", "a2"}, {"inner"});
  b.node("Slice", {"x", "s0", "emax", "a0"}, {"whole"});
  b.node("Slice", {"x", "sneg", "emin", "a2", "stepneg"}, {"rev"});
  b.node("Slice", {"x", "s_big", "e_big", "a12"}, {"clamped"});
  b.node("Slice", {"x", "s1", "e1", "a0"}, {"sym"});
  for (auto o : {"inner", "whole", "rev", "clamped", "sym"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("inner"), "float[N,3,8]");
  EXPECT_EQ(l.type("whole"), "float[N,3,10]");
  EXPECT_EQ(l.type("rev"), "float[N,3,5]");
  EXPECT_EQ(l.type("clamped"), "float[N,2,9]");
  EXPECT_EQ(l.type("sym"), "float[?,3,10]");

  ModelBuilder old(9);
  old.input("x", D::Float, {4, 6});
  auto& s = old.node("Slice", {"x"}, {"y"});
  attr_ints(s, "starts", {1, -3});
  attr_ints(s, "ends", {3, 1000});
  old.output_untyped("y");
  Loaded lo(old);
  EXPECT_EQ(lo.type("y"), "float[2,3]");
}

TEST(ShapeInference, ShapeAndSize) {
  ModelBuilder b(15);
  b.input("x", D::Float, {"N", 3, "H", "W"});
  auto& s = b.node("Shape", {"x"}, {"hw"});
  attr_int(s, "start", 2);
  auto& s2 = b.node("Shape", {"x"}, {"mid"});
  attr_int(s2, "start", 1);
  attr_int(s2, "end", -1);
  b.node("Size", {"x"}, {"size"});
  b.node("ConstantOfShape", {"hw"}, {"hw_map"});
  b.output_untyped("hw").output_untyped("mid").output_untyped("size").output_untyped("hw_map");
  Loaded l(b);
  EXPECT_EQ(l.type("hw"), "int64[2]");
  EXPECT_EQ(l.type("mid"), "int64[2]");
  EXPECT_EQ(l.type("size"), "int64[]");
  EXPECT_EQ(l.type("hw_map"), "float[H,W]");
}

TEST(ShapeInference, PadForms) {
  ModelBuilder b(18);
  b.input("x", D::Float, {1, 3, 4, "W"});
  b.initializer(ints("pads", {0, 0, 1, 2, 0, 0, 1, 2})).initializer(ints("p2", {2, -1})).initializer(ints("ax", {2}));
  b.node("Pad", {"x", "pads"}, {"p"});
  b.node("Pad", {"x", "p2", "", "ax"}, {"pa"});
  b.output_untyped("p").output_untyped("pa");
  Loaded l(b);
  EXPECT_EQ(l.type("p"), "float[1,3,6,?]");
  EXPECT_EQ(l.type("pa"), "float[1,3,5,W]");

  ModelBuilder old(7);
  old.input("x", D::Float, {2, 2});
  auto& p = old.node("Pad", {"x"}, {"y"});
  attr_ints(p, "pads", {1, 0, 1, 3});
  old.output_untyped("y");
  Loaded lo(old);
  EXPECT_EQ(lo.type("y"), "float[4,5]");
}

TEST(ShapeInference, ResizeAndUpsample) {
  ModelBuilder b(13);
  b.input("x", D::Float, {"N", 3, 8, 8});
  b.initializer(floats("scales", {1, 1, 2, 2.5f})).initializer(floats("empty", {}));
  b.initializer(ints("sizes", {1, 3, 5, 6}));
  b.node("Resize", {"x", "", "scales"}, {"up"});
  b.node("Resize", {"x", "", "empty", "sizes"}, {"sz"});
  b.output_untyped("up").output_untyped("sz");
  Loaded l(b);
  EXPECT_EQ(l.type("up"), "float[N,3,16,20]");
  EXPECT_EQ(l.type("sz"), "float[1,3,5,6]");

  ModelBuilder v18(18);
  v18.input("x", D::Float, {1, 3, 8, 4});
  v18.initializer(ints("sizes", {6, 6}));
  auto& r = v18.node("Resize", {"x", "", "", "sizes"}, {"keep"});
  attr_ints(r, "axes", {2, 3});
  attr_string(r, "keep_aspect_ratio_policy", "not_larger");
  v18.output_untyped("keep");
  Loaded l18(v18);
  EXPECT_EQ(l18.type("keep"), "float[1,3,6,3]");

  ModelBuilder v9(9);
  v9.input("x", D::Float, {1, 2, 3, 3});
  v9.initializer(floats("sc", {1, 1, 2, 2}));
  v9.node("Upsample", {"x", "sc"}, {"y"});
  v9.output_untyped("y");
  Loaded l9(v9);
  EXPECT_EQ(l9.type("y"), "float[1,2,6,6]");
}

TEST(ShapeInference, Reductions) {
  ModelBuilder b(18);
  b.input("x", D::Float, {"N", "S", 64});
  b.initializer(ints("last", {-1})).initializer(ints("none", {}));
  b.node("ReduceMean", {"x", "last"}, {"mean"});
  auto& s = b.node("ReduceSum", {"x", "last"}, {"sum"});
  attr_int(s, "keepdims", 0);
  b.node("ReduceMax", {"x"}, {"all"});
  auto& noop = b.node("ReduceMin", {"x", "none"}, {"noop"});
  attr_int(noop, "noop_with_empty_axes", 1);
  auto& am = b.node("ArgMax", {"x"}, {"argmax"});
  attr_int(am, "axis", 1);
  attr_int(am, "keepdims", 0);
  b.node("ArgMin", {"x"}, {"argmin"});
  for (auto o : {"mean", "sum", "all", "noop", "argmax", "argmin"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("mean"), "float[N,S,1]");
  EXPECT_EQ(l.type("sum"), "float[N,S]");
  EXPECT_EQ(l.type("all"), "float[1,1,1]");
  EXPECT_EQ(l.type("noop"), "float[N,S,64]");
  EXPECT_EQ(l.type("argmax"), "int64[N,64]");
  EXPECT_EQ(l.type("argmin"), "int64[1,S,64]");

  ModelBuilder old(11);
  old.input("x", D::Float, {2, 3, 4});
  auto& r = old.node("ReduceSum", {"x"}, {"y"});
  attr_ints(r, "axes", {0, 2});
  attr_int(r, "keepdims", 0);
  old.output_untyped("y");
  Loaded lo(old);
  EXPECT_EQ(lo.type("y"), "float[3]");
}

TEST(ShapeInference, SoftmaxTopKCastDropoutIdentity) {
  ModelBuilder b(15);
  b.input("x", D::Float, {"N", 100});
  b.initializer(ints("k", {5}));
  auto& sm = b.node("Softmax", {"x"}, {"sm"});
  attr_int(sm, "axis", -1);
  b.node("LogSoftmax", {"x"}, {"lsm"});
  b.node("Hardmax", {"x"}, {"hm"});
  b.node("TopK", {"x", "k"}, {"vals", "inds"});
  auto& c = b.node("Cast", {"x"}, {"half"});
  attr_int(c, "to", static_cast<int64_t>(D::Float16));
  b.node("CastLike", {"x", "k"}, {"like"});
  b.node("Dropout", {"x"}, {"drop", "mask"});
  b.node("Identity", {"half"}, {"id"});
  for (auto o : {"sm", "lsm", "hm", "vals", "inds", "half", "like", "drop", "mask", "id"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("sm"), "float[N,100]");
  EXPECT_EQ(l.type("hm"), "float[N,100]");
  EXPECT_EQ(l.type("vals"), "float[N,5]");
  EXPECT_EQ(l.type("inds"), "int64[N,5]");
  EXPECT_EQ(l.type("half"), "float16[N,100]");
  EXPECT_EQ(l.type("like"), "int64[N,100]");
  EXPECT_EQ(l.type("mask"), "bool[N,100]");
  EXPECT_EQ(l.type("id"), "float16[N,100]");
}

TEST(ShapeInference, ConstantsAndGeneratorTypes) {
  ModelBuilder b(17);
  b.input("x", D::Float, {2, 3}).input("q", D::Int8, {4});
  auto& c1 = b.node("Constant", {}, {"ci"});
  attr_ints(c1, "value_ints", {1, 2, 3});
  auto& c2 = b.node("Constant", {}, {"ct"});
  attr_tensor(c2, "value", make_float_tensor("", {2, 2}, {1, 2, 3, 4}));
  auto& c3 = b.node("Constant", {}, {"cf"});
  attr_float(c3, "value_float", 1.5f);
  b.initializer(ints("shape", {4, 5}));
  auto& cos = b.node("ConstantOfShape", {"shape"}, {"cos"});
  attr_tensor(cos, "value", make_int64_tensor("", {1}, {7}));
  auto& eye = b.node("EyeLike", {"x"}, {"eye"});
  attr_int(eye, "dtype", static_cast<int64_t>(D::Double));
  auto& rn = b.node("RandomNormal", {}, {"rn"});
  attr_ints(rn, "shape", {3, 4});
  b.initializer(make_float_tensor("scale", {}, {0.5f}));
  b.node("QuantizeLinear", {"x", "scale"}, {"qx"});
  b.node("DequantizeLinear", {"q", "scale"}, {"dq"});
  b.node("DynamicQuantizeLinear", {"x"}, {"dy", "dys", "dyz"});
  for (auto o : {"ci", "ct", "cf", "cos", "eye", "rn", "qx", "dq", "dy", "dys", "dyz"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("ci"), "int64[3]");
  EXPECT_EQ(l.type("ct"), "float[2,2]");
  EXPECT_EQ(l.type("cf"), "float[]");
  EXPECT_EQ(l.type("cos"), "int64[4,5]");
  EXPECT_EQ(l.type("eye"), "double[2,3]");
  EXPECT_EQ(l.type("rn"), "float[3,4]");
  EXPECT_EQ(l.type("qx"), "uint8[2,3]");
  EXPECT_EQ(l.type("dq"), "float[4]");
  EXPECT_EQ(l.type("dy"), "uint8[2,3]");
  EXPECT_EQ(l.type("dys"), "float[]");
}

TEST(ShapeInference, EinsumRnnAndSpaceOps) {
  ModelBuilder b(14);
  b.input("a", D::Float, {"B", 3, 4}).input("c", D::Float, {"B", 4, 5}).input("m", D::Float, {2, 3});
  b.input("seq", D::Float, {"T", "B", 16}).input("img", D::Float, {1, 8, 4, 4});
  b.initializer(zeros("W", {2, 4 * 32, 16})).initializer(zeros("R", {2, 4 * 32, 32}));
  auto& e = b.node("Einsum", {"a", "c"}, {"bmm"});
  attr_string(e, "equation", "bij,bjk->bik");
  auto& t = b.node("Einsum", {"m"}, {"tr"});
  attr_string(t, "equation", "ij");
  auto& el = b.node("Einsum", {"a"}, {"ell"});
  attr_string(el, "equation", "...ij->...ji");
  auto& lstm = b.node("LSTM", {"seq", "W", "R"}, {"Y", "Yh", "Yc"});
  attr_int(lstm, "hidden_size", 32);
  attr_string(lstm, "direction", "bidirectional");
  auto& d2s = b.node("DepthToSpace", {"img"}, {"d2s"});
  attr_int(d2s, "blocksize", 2);
  auto& s2d = b.node("SpaceToDepth", {"img"}, {"s2d"});
  attr_int(s2d, "blocksize", 2);
  for (auto o : {"bmm", "tr", "ell", "Y", "Yh", "Yc", "d2s", "s2d"}) b.output_untyped(o);
  Loaded l(b);
  EXPECT_EQ(l.type("bmm"), "float[B,3,5]");
  EXPECT_EQ(l.type("tr"), "float[2,3]");
  EXPECT_EQ(l.type("ell"), "float[B,4,3]");
  EXPECT_EQ(l.type("Y"), "float[T,2,B,32]");
  EXPECT_EQ(l.type("Yh"), "float[2,B,32]");
  EXPECT_EQ(l.type("Yc"), "float[2,B,32]");
  EXPECT_EQ(l.type("d2s"), "float[1,2,8,8]");
  EXPECT_EQ(l.type("s2d"), "float[1,32,2,2]");
}

TEST(ShapeInference, IfBranchesSeeOuterScope) {
  ModelBuilder b(13);
  b.input("x", D::Float, {"N", 4}).input("cond", D::Bool, {});
  b.initializer(zeros("w", {4, 8}));
  auto& node = b.node("If", {"cond"}, {"out", "out2"}, "branch");
  auto* then_g = attr_graph(node, "then_branch");
  add_node(*then_g, "MatMul", {"x", "w"}, {"t_mm"});
  add_node(*then_g, "Relu", {"x"}, {"t_relu"});
  then_g->add_output()->set_name("t_mm");
  then_g->add_output()->set_name("t_relu");
  auto* else_g = attr_graph(node, "else_branch");
  add_node(*else_g, "MatMul", {"x", "w"}, {"e_mm"});
  add_node(*else_g, "Transpose", {"x"}, {"e_t"});
  else_g->add_output()->set_name("e_mm");
  else_g->add_output()->set_name("e_t");
  b.node("Sigmoid", {"out"}, {"after"});
  b.output_untyped("after").output_untyped("out2");
  Loaded l(b);
  EXPECT_EQ(l.type("out"), "float[N,8]");
  EXPECT_EQ(l.type("out2"), "float[?,?]") << "branches disagree: [N,4] vs [4,N]";
  EXPECT_EQ(l.type("after"), "float[N,8]");
  const Attribute* then_attr = l.graph().nodes[0].attribute("then_branch");
  ASSERT_TRUE(then_attr && then_attr->g);
  EXPECT_EQ(Loaded::type_in(then_attr->g.get(), "t_mm"), "float[N,8]");
  EXPECT_EQ(Loaded::type_in(then_attr->g.get(), "t_relu"), "float[N,4]");
}

TEST(ShapeInference, LoopCarriedAndScanOutputs) {
  ModelBuilder b(13);
  b.input("x", D::Float, {2, 3});
  b.initializer(scalar("trip", 5));
  auto& loop = b.node("Loop", {"trip", "", "x"}, {"final", "stacked"});
  auto* body = attr_graph(loop, "body");
  *body->add_input() = make_value("i", D::Int64, {});
  *body->add_input() = make_value("c", D::Bool, {});
  *body->add_input() = make_value("acc", D::Float, {2, 3});
  add_node(*body, "Identity", {"c"}, {"c_out"});
  add_node(*body, "Add", {"acc", "x"}, {"acc_out"});
  add_node(*body, "Relu", {"x"}, {"scan_out"});
  body->add_output()->set_name("c_out");
  body->add_output()->set_name("acc_out");
  body->add_output()->set_name("scan_out");
  b.output_untyped("final").output_untyped("stacked");
  Loaded l(b);
  EXPECT_EQ(l.type("final"), "float[2,3]");
  EXPECT_EQ(l.type("stacked"), "float[?,2,3]");
}

TEST(ShapeInference, ScanBodyInputsComeFromTheNode) {
  ModelBuilder b(16);
  b.input("init", D::Float, {2}).input("xs", D::Float, {5, 2});
  auto& scan = b.node("Scan", {"init", "xs"}, {"final", "partial"});
  attr_int(scan, "num_scan_inputs", 1);
  auto* body = attr_graph(scan, "body");
  body->add_input()->set_name("acc");  // untyped: [2] from init
  body->add_input()->set_name("x");    // untyped: one [2] row of xs
  add_node(*body, "Add", {"acc", "x"}, {"acc_out"});
  add_node(*body, "Identity", {"acc_out"}, {"row"});
  body->add_output()->set_name("acc_out");
  body->add_output()->set_name("row");
  b.output_untyped("final").output_untyped("partial");
  Loaded l(b);
  EXPECT_EQ(l.type("final"), "float[2]");
  EXPECT_EQ(l.type("partial"), "float[5,2]");
}

TEST(ShapeInference, DeclaredTypesWinAndConflictsWarn) {
  ModelBuilder b;
  b.input("x", D::Float, {"N", 5});
  b.node("Relu", {"x"}, {"y"}, "relu");
  b.node("Sigmoid", {"y"}, {"z"});
  b.node("Tanh", {"x"}, {"t"});
  b.output("y", D::Float, {"N", 10});
  b.output("z", D::Float, {"N", 10});
  b.output("t", D::Float, {"batch", 0});
  Loaded l(b);
  EXPECT_EQ(l.type("y"), "float[N,10]");  // declared type kept
  EXPECT_EQ(l.type("z"), "float[N,10]") << "inference goes on from the declared type";
  ASSERT_TRUE(has_code(l.result(), "shape-conflict", Severity::Warning)) << dump(l.result());
  const Diagnostic* found = nullptr;
  for (const auto& d : l.result().diagnostics.items())
    if (d.code == "shape-conflict" && d.where.value == "y") found = &d;
  ASSERT_NE(found, nullptr) << dump(l.result());
  EXPECT_EQ(found->where.graph, "main");
  EXPECT_EQ(found->where.node, "relu");
  EXPECT_EQ(found->where.node_index, 0);
  EXPECT_EQ(found->where.op_type, "Relu");
  EXPECT_EQ(found->where.file, "test.onnx");
  size_t conflicts = 0;
  for (const auto& d : l.result().diagnostics.items()) conflicts += d.code == "shape-conflict";
  EXPECT_EQ(conflicts, 2u) << dump(l.result());  // y and t (0 vs 5); z agrees with declared y
}

TEST(ShapeInference, CustomOpsAndFunctionsStayUnknown) {
  ModelBuilder b;
  b.opset("com.example", 1);
  b.input("x", D::Float, {2});
  b.node("Mystery", {"x"}, {"m"}, "", "com.example");
  b.node("Relu", {"m"}, {"after"});
  b.node("Twice", {"x"}, {"f"}, "", "com.example");
  auto* fn = b.proto().add_functions();
  fn->set_name("Twice");
  fn->set_domain("com.example");
  const std::string a = "a", out = "b";  // std::string: avoids a GCC 12 -Wrestrict false positive
  fn->add_input(a);
  fn->add_output(out);
  auto* op = fn->add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* body = fn->add_node();
  body->set_op_type(std::string("Add"));
  body->add_input(a);
  body->add_input(a);
  body->add_output(out);
  b.output_untyped("after").output_untyped("f");
  Loaded l(b);
  EXPECT_EQ(l.type("m"), "<none>");
  EXPECT_EQ(l.type("after"), "<none>");
  EXPECT_EQ(l.type("f"), "<none>");
}

TEST(ShapeInference, InferenceCanBeSwitchedOffAndNeverAddsDuplicates) {
  ModelBuilder b;
  b.input("x", D::Float, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output_untyped("y");
  LoadOptions off;
  off.infer_shapes = false;
  auto r = b.load(off);
  ASSERT_TRUE(r.ok()) << dump(r);
  EXPECT_EQ(r.model->graph.type_of("y"), nullptr);
  Diagnostics d;
  infer_shapes(*r.model, d);
  infer_shapes(*r.model, d);  // a second run finds the first run's types declared
  EXPECT_EQ(r.model->graph.value_info.size(), 1u);
  EXPECT_EQ(r.model->graph.type_of("y")->to_string(), "float[2]");
  EXPECT_TRUE(d.items().empty());
}

}  // namespace
}  // namespace onnxscope::test
