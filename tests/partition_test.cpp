// Splitting a graph between a device and the host (core/partition.h), with a
// made-up device: it runs Relu, Add, Mul, Reshape, Gather, Unsqueeze and
// Concat on float32 and int64, and reads Reshape's shape argument on the
// host. Checked: where each node runs and why, which copies happen and when
// (per run, once at prepare, at the end), and that shape arithmetic, a
// one-operator model and control flow land where they should.
#include <gtest/gtest.h>

#include <set>

#include "core/partition.h"
#include "model_builder.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

PlacementRules made_up_device() {
  PlacementRules r;
  r.refuse = [](const Graph& g, const Node& n, int64_t) -> std::optional<std::string> {
    static const std::set<std::string> ops{"Relu", "Add", "Mul", "Reshape", "Gather", "Unsqueeze", "Concat"};
    if (!ops.count(n.op_type)) return "no device kernel for " + n.op_type;
    for (const auto& in : n.inputs)
      if (const TypeInfo* t = in.empty() ? nullptr : g.type_of(in); t && t->elem == DataType::Double)
        return std::string("float64");
    return std::nullopt;
  };
  r.reads_on_host = [](const Node& n, size_t i) { return n.op_type == "Reshape" && i == 1; };
  return r;
}

std::vector<Side> sides(const PartitionPlan& p) {
  std::vector<Side> out;
  for (const auto& n : p.nodes) out.push_back(n.side);
  return out;
}

std::string copies(const PartitionPlan& p) {
  std::string out;
  for (const Copy& c : p.copies)
    out += c.value + (c.to == Side::Device ? ">dev" : ">host") + (c.at_prepare ? "@prepare" : "@" + std::to_string(c.before)) + " ";
  return out;
}

constexpr Side D = Side::Device, H = Side::Host;

}  // namespace

TEST(Partition, ANodeWithoutADeviceKernelFallsBackWithItsCopies) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{8}});
  b.initializer(make_int64_tensor("k", {1}, {3}));
  b.initializer(make_float_tensor("bias", {3}, {1, 2, 3}));
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("TopK", {"r", "k"}, {"v", "i"}, "topk");
  b.node("Add", {"v", "bias"}, {"y"}, "add");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{3}});
  b.output("i", DataType::Int64, {int64_t{2}, int64_t{3}});
  auto m = load_model(b);
  const PartitionPlan p = partition(m->graph, made_up_device(), m->opset_version(""));
  EXPECT_EQ(sides(p), (std::vector<Side>{D, H, D}));
  EXPECT_EQ(p.nodes[1].reason, "no device kernel for TopK");
  // The bias goes up once; x up, r down and v up each run; y comes down at
  // the end; i is made on the host and k never leaves it.
  EXPECT_EQ(copies(p), "bias>dev@prepare x>dev@0 r>host@1 v>dev@2 y>host@3 ");
  ASSERT_EQ(p.segments.size(), 3u);
  EXPECT_EQ(p.segments[1].begin, 1u);
  EXPECT_EQ(p.segments[1].end, 2u);
  const std::string text = describe(m->graph, p);
  EXPECT_NE(text.find("upload  'bias' once, when the model is prepared"), std::string::npos) << text;
  EXPECT_NE(text.find("host    topk (TopK): no device kernel for TopK"), std::string::npos) << text;
}

// x -> Relu -> Reshape(to [batch, -1]) where the target shape is computed from
// Shape(x): the shape chain runs on the host though the device could run each
// of its nodes, and no copy of it happens in either direction.
TEST(Partition, ShapeArithmeticStaysOnTheHost) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {"batch", int64_t{4}, int64_t{4}});
  b.initializer(make_int64_tensor("zero", {}, {0}));
  b.initializer(make_int64_tensor("axes", {1}, {0}));
  b.initializer(make_int64_tensor("minus_one", {1}, {-1}));
  b.node("Relu", {"x"}, {"r"}, "relu");
  b.node("Shape", {"r"}, {"s"}, "shape");
  b.node("Gather", {"s", "zero"}, {"n"}, "gather");
  b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsqueeze");
  attr_int(b.node("Concat", {"n1", "minus_one"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"r", "target"}, {"y"}, "reshape");
  b.output("y", DataType::Float, {"batch", int64_t{16}});
  auto m = load_model(b);
  const PartitionPlan p = partition(m->graph, made_up_device(), m->opset_version(""));
  EXPECT_EQ(sides(p), (std::vector<Side>{D, H, H, H, H, D}));
  EXPECT_EQ(p.nodes[2].reason, "shape arithmetic: its results are read on the host only");
  EXPECT_EQ(copies(p), "x>dev@0 y>host@6 ");
}

// Upstream's backend tests are one-operator models: their operator must run
// on the device even though everything it reads and writes is on the host.
TEST(Partition, AOneOperatorModelRunsOnTheDevice) {
  ModelBuilder b(17);
  b.input("a", DataType::Float, {int64_t{3}});
  b.input("b", DataType::Float, {int64_t{3}});
  b.node("Add", {"a", "b"}, {"y"}, "add");
  b.output("y", DataType::Float, {int64_t{3}});
  auto m = load_model(b);
  const PartitionPlan p = partition(m->graph, made_up_device(), m->opset_version(""));
  EXPECT_EQ(sides(p), (std::vector<Side>{D}));
  EXPECT_EQ(copies(p), "a>dev@0 b>dev@0 y>host@1 ");
}

// An If runs on the host; the device value its branch captures comes down
// once, although two host nodes read it.
TEST(Partition, ControlFlowRunsOnTheHostWithWhatItCaptures) {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{4}});
  b.input("c", DataType::Bool, {});
  b.input("d", DataType::Double, {int64_t{4}});
  b.node("Relu", {"x"}, {"r"}, "relu");
  auto& if_node = b.node("If", {"c"}, {"z"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    onnx::GraphProto* g = attr_graph(if_node, branch);
    g->set_name(branch);
    add_node(*g, "Identity", {"r"}, {std::string(branch) + "_out"});
    *g->add_output() = make_value(std::string(branch) + "_out", DataType::Float, {int64_t{4}});
  }
  b.node("TopK", {"r", "k"}, {"v", "i"}, "topk");
  b.initializer(make_int64_tensor("k", {1}, {2}));
  b.node("Add", {"d", "d"}, {"dd"}, "add_double");
  b.output("z", DataType::Float, {int64_t{4}});
  b.output("v", DataType::Float, {int64_t{2}});
  b.output("dd", DataType::Double, {int64_t{4}});
  auto m = load_model(b);
  const PartitionPlan p = partition(m->graph, made_up_device(), m->opset_version(""));
  EXPECT_EQ(sides(p), (std::vector<Side>{D, H, H, H}));
  EXPECT_EQ(p.nodes[1].reason, "it has a subgraph (control flow runs on the CPU engine)");
  EXPECT_EQ(p.nodes[3].reason, "float64");
  EXPECT_EQ(copies(p), "x>dev@0 r>host@1 ");
  EXPECT_EQ(p.segments.size(), 2u);
}
