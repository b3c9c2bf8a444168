// The reference writes an elementwise result over an input's bytes where no
// later node reads that input (math/common.h's output_over_input): the
// results are the ones computed apart, a value read twice or read later is
// never overwritten, and an observer (shown each node's inputs after it ran)
// sees the inputs as they were.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "model_builder.h"
#include "onnxscope/reference.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// t = x + c; u = Relu(t) (t dies: written over); v = u * u (u read twice);
// w = v - t2 where t2 = Neg(x) is read again by the last node; out = w + t2.
std::shared_ptr<const Model> chain() {
  ModelBuilder mb(17);
  mb.input("x", DataType::Float, {2, 3});
  mb.initializer(make_float_tensor("c", {3}, {0.5f, -1.0f, 2.0f}));
  mb.node("Add", {"x", "c"}, {"t"}, "add");
  mb.node("Relu", {"t"}, {"u"}, "relu");
  mb.node("Mul", {"u", "u"}, {"v"}, "square");
  mb.node("Neg", {"x"}, {"t2"}, "neg");
  mb.node("Sub", {"v", "t2"}, {"w"}, "sub");
  mb.node("Add", {"w", "t2"}, {"out"}, "again");
  mb.output_untyped("out");
  auto r = mb.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

std::vector<float> expected(const std::vector<float>& x) {
  const float c[3] = {0.5f, -1.0f, 2.0f};
  std::vector<float> out;
  for (size_t i = 0; i < x.size(); ++i) {
    const float t = x[i] + c[i % 3], u = t > 0 ? t : 0.0f, v = u * u, t2 = -x[i];
    out.push_back((v - t2) + t2);
  }
  return out;
}

struct InputsAtRelu : Observer {
  std::vector<float> seen;
  void on_node(const NodeEvent& e) override {
    if (e.node->op_type != "Relu") return;
    const Tensor& t = e.inputs[0]->tensor();
    seen.assign(t.data<float>(), t.data<float>() + t.element_count());
  }
};

}  // namespace

TEST(ReferenceInPlace, ResultsAreTheOnesComputedApartAndObserversSeeTheInputs) {
  const std::vector<float> xs = {-1.0f, 0.25f, -3.0f, 2.0f, 1.5f, -0.75f};
  Tensor x = Tensor::zeros(DataType::Float, {2, 3});
  std::copy(xs.begin(), xs.end(), x.mutable_data<float>());
  auto prepared = make_reference_engine()->prepare(chain());
  for (bool observed : {false, true}) {
    SCOPED_TRACE(observed ? "with an observer" : "without");
    InputsAtRelu obs;
    RunOptions ro;
    if (observed) ro.observer = &obs;
    const Tensor out = prepared->run({{"x", Value(x)}}, ro).at(0).second.tensor();
    const std::vector<float> want = expected(xs);
    ASSERT_EQ(out.element_count(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(out.data<float>()[i], want[i]) << "at " << i;
    // The caller's input is untouched.
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(x.data<float>()[i], xs[i]);
    if (observed) {
      const float c[3] = {0.5f, -1.0f, 2.0f};
      ASSERT_EQ(obs.seen.size(), xs.size());
      for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(obs.seen[i], xs[i] + c[i % 3]) << "Relu's input at " << i;
    }
  }
}
