// A model run as a chain of segments (core/segment_model.h), each a model of
// its own handed the values the earlier ones made, gives the whole model's
// outputs bit for bit on the reference engine, for every way of cutting it
// in three; and on the CPU engine, within float tolerance. The model has a
// shape chain, a residual, and an If whose branches capture outer values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "core/segment_model.h"
#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/inputs.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

std::shared_ptr<const Model> model() {
  ModelBuilder b(17);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{5}, int64_t{5}});
  b.input("c", DataType::Bool, {});
  std::vector<float> w(4 * 4 * 9);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.05f * static_cast<float>(static_cast<int>(i % 11) - 5);
  b.initializer(make_float_tensor("w", {4, 4, 3, 3}, w));
  b.initializer(make_int64_tensor("zero", {}, {0}));
  b.initializer(make_int64_tensor("axes", {1}, {0}));
  b.initializer(make_int64_tensor("minus_one", {1}, {-1}));
  b.initializer(make_float_tensor("two", {}, {2.f}));
  attr_ints(b.node("Conv", {"x", "w"}, {"c1"}, "conv"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu");
  b.node("Add", {"r1", "x"}, {"s1"}, "residual");
  b.node("Shape", {"s1"}, {"shape"}, "shape");
  b.node("Gather", {"shape", "zero"}, {"n"}, "gather");
  b.node("Unsqueeze", {"n", "axes"}, {"n1"}, "unsqueeze");
  attr_int(b.node("Concat", {"n1", "minus_one"}, {"target"}, "concat"), "axis", 0);
  b.node("Reshape", {"s1", "target"}, {"flat"}, "reshape");
  auto& iff = b.node("If", {"c"}, {"z"}, "if");
  onnx::GraphProto* then_g = attr_graph(iff, "then_branch");
  then_g->set_name("then");
  add_node(*then_g, "Mul", {"flat", "two"}, {"t_out"});
  *then_g->add_output() = make_value("t_out", DataType::Float, {int64_t{2}, int64_t{100}});
  onnx::GraphProto* else_g = attr_graph(iff, "else_branch");
  else_g->set_name("else");
  add_node(*else_g, "Sub", {"flat", "two"}, {"e_out"});
  *else_g->add_output() = make_value("e_out", DataType::Float, {int64_t{2}, int64_t{100}});
  b.node("Sigmoid", {"z"}, {"y"}, "sigmoid");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{100}});
  b.output("r1", DataType::Float, {int64_t{2}, int64_t{4}, int64_t{5}, int64_t{5}});
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

NamedValues run_in_segments(Engine& e, const Model& m, const std::vector<size_t>& cuts, const NamedValues& in) {
  std::map<std::string, Value> have(in.begin(), in.end());
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    auto s = segment_model(m, cuts[k], cuts[k + 1], values_read_after(m, cuts[k], cuts[k + 1]));
    NamedValues feeds;
    for (const auto& i : s->graph.inputs) feeds.emplace_back(i.name, have.at(i.name));
    for (auto& [name, v] : e.prepare(s)->run(feeds)) have[name] = std::move(v);
  }
  NamedValues out;
  for (const auto& o : m.graph.outputs) out.emplace_back(o.name, have.at(o.name));
  return out;
}

bool bitwise_equal(const NamedValues& a, const NamedValues& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    const Tensor& x = a[k].second.tensor();
    const Tensor& y = b[k].second.tensor();
    if (a[k].first != b[k].first || x.shape() != y.shape() || std::memcmp(x.raw(), y.raw(), x.byte_size()) != 0) return false;
  }
  return true;
}

}  // namespace

TEST(SegmentModel, EveryThreeWayCutGivesTheWholeModelsOutputs) {
  auto m = model();
  ASSERT_TRUE(m);
  const size_t n = m->graph.nodes.size();
  auto ref = make_reference_engine();
  for (bool branch : {true, false}) {
    InputSpec spec;
    spec.seed = 3;
    NamedValues in = make_inputs(*m, spec);
    for (auto& [name, v] : in)
      if (name == "c") {
        Tensor t = Tensor::zeros(DataType::Bool, {});
        t.mutable_data<bool>()[0] = branch;
        v = Value(std::move(t));
      }
    const NamedValues whole = ref->prepare(m)->run(in);
    for (size_t i = 0; i <= n; ++i)
      for (size_t j = i; j <= n; ++j) {
        SCOPED_TRACE("cut at " + std::to_string(i) + " and " + std::to_string(j) + (branch ? ", then" : ", else"));
        EXPECT_TRUE(bitwise_equal(run_in_segments(*ref, *m, {0, i, j, n}, in), whole));
      }
  }
}

TEST(SegmentModel, ASegmentSaysWhatItReadsAndHandsOn) {
  auto m = model();
  ASSERT_TRUE(m);
  // Nodes 2..7: the residual Add to the Reshape.
  auto s = segment_model(*m, 2, 8, values_read_after(*m, 2, 8));
  std::vector<std::string> inputs, inits, outputs;
  for (const auto& i : s->graph.inputs) inputs.push_back(i.name + ":" + i.type.to_string());
  for (const auto& i : s->graph.initializers) inits.push_back(i.name);
  for (const auto& o : s->graph.outputs) outputs.push_back(o.name);
  EXPECT_EQ(inputs, (std::vector<std::string>{"r1:float[2,4,5,5]", "x:float[2,4,5,5]"}));
  EXPECT_EQ(inits, (std::vector<std::string>{"zero", "axes", "minus_one"}));
  EXPECT_EQ(outputs, (std::vector<std::string>{"flat"}));  // read by the If's branches only
  EXPECT_EQ(s->graph.initializers[0].value.raw(), m->graph.initializer("zero")->value.raw());  // shared, not copied
}

TEST(SegmentModel, CpuEngineSegmentsAgreeWithTheWholeModel) {
  auto m = model();
  ASSERT_TRUE(m);
  auto cpu = make_cpu_engine(CpuOptions{.threads = 1});
  InputSpec spec;
  spec.seed = 9;
  const NamedValues in = make_inputs(*m, spec);
  const NamedValues whole = cpu->prepare(m)->run(in);
  const NamedValues parts = run_in_segments(*cpu, *m, {0, 1, 3, 9, m->graph.nodes.size()}, in);
  ASSERT_EQ(parts.size(), whole.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    const Tensor& a = parts[k].second.tensor();
    const Tensor& b = whole[k].second.tensor();
    ASSERT_EQ(a.shape(), b.shape());
    for (uint64_t e = 0; e < a.element_count(); ++e)
      EXPECT_NEAR(a.data<float>()[e], b.data<float>()[e], 1e-5 + 1e-5 * std::abs(b.data<float>()[e]));
  }
}
