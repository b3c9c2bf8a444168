// The interpreter core: observers see every node with the kernel that ran it,
// operators without a kernel expand the spec's function body, values are
// freed after their last use, cancellation stops a run.
#include <gtest/gtest.h>

#include <cmath>

#include "model_builder.h"
#include "onnxscope/cpu.h"
#include "onnxscope/reference.h"
#include "reference/interpreter.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

std::shared_ptr<const Model> load(const ModelBuilder& b) {
  auto r = b.load();
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

Tensor floats(Shape shape, std::vector<float> v) {
  Tensor t = Tensor::zeros(DataType::Float, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

struct Recorder : Observer {
  std::vector<std::string> seen;
  int stop_after = -1;
  void on_node(const NodeEvent& e) override {
    seen.push_back(std::string(e.graph_path) + ":" + e.node->op_type + ":" + std::string(e.kernel));
  }
  bool should_stop() override { return stop_after >= 0 && static_cast<int>(seen.size()) >= stop_after; }
};

std::vector<std::unique_ptr<Engine>> reference_and_cpu() {
  std::vector<std::unique_ptr<Engine>> engines;
  engines.push_back(make_reference_engine());
  engines.push_back(make_cpu_engine(CpuOptions{.threads = 1}));
  return engines;
}

ModelBuilder mish_model() {
  ModelBuilder b(22, 10);
  b.input("x", DataType::Float, {int64_t{4}});
  b.node("Mish", {"x"}, {"m"}, "mish");
  b.node("Neg", {"m"}, {"y"}, "neg");
  b.output("y", DataType::Float, {int64_t{4}});
  return b;
}

}  // namespace

TEST(Interpreter, ObserverSeesEveryNodeAndItsKernel) {
  auto engine = make_reference_engine();
  auto prepared = engine->prepare(load(mish_model()));
  Recorder rec;
  RunOptions opts;
  opts.observer = &rec;
  auto out = prepared->run({{"x", floats({4}, {-2, -0.5f, 0, 3})}}, opts);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(rec.seen, (std::vector<std::string>{"main:Mish:reference", "main:Neg:reference"}));
  EXPECT_NEAR(out[0].second.tensor().data<float>()[3], -3.0 * std::tanh(std::log1p(std::exp(3.0))), 1e-6);
}

TEST(Interpreter, OperatorWithoutKernelExpandsTheSpecFunctionBody) {
  // A registry with Neg but not Mish: Mish must run through its function body.
  KernelRegistry partial;
  for (const auto& k : reference_kernels().all())
    if (k.op_type != "Mish") partial.add(k);
  auto model = load(mish_model());
  ref::Interpreter without(model, partial, uint64_t{1} << 30);
  ref::Interpreter with(model, reference_kernels(), uint64_t{1} << 30);
  Recorder rec;
  RunOptions opts;
  opts.observer = &rec;
  opts.observe_subgraphs = false;
  NamedValues in{{"x", floats({4}, {-2, -0.5f, 0, 3})}};
  auto expanded = without.run(in, opts);
  auto direct = with.run(in, {});
  EXPECT_EQ(rec.seen.front(), "main:Mish:schema-function");
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(expanded[0].second.tensor().data<float>()[i], direct[0].second.tensor().data<float>()[i], 1e-6) << i;
  auto support = without.supports();
  EXPECT_EQ(support[0].detail, "schema-function");
  EXPECT_TRUE(support[0].supported);
}

TEST(Interpreter, MissingKernelIsALocatedError) {
  ModelBuilder b;
  b.opset("com.example", 1);
  b.input("x", DataType::Float, {int64_t{2}});
  b.node("Mystery", {"x"}, {"y"}, "the_node", "com.example");
  b.output_untyped("y");
  auto prepared = make_reference_engine()->prepare(load(b));
  try {
    prepared->run({{"x", floats({2}, {1, 2})}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "no-kernel");
    EXPECT_EQ(e.diagnostic().where.node, "the_node");
  }
  auto support = make_reference_engine()->supports(*load(b));
  EXPECT_FALSE(support[0].supported);
}

TEST(Interpreter, BadInputsAreRejectedByName) {
  auto prepared = make_reference_engine()->prepare(load(mish_model()));
  EXPECT_THROW(prepared->run({}), Error);                                          // missing input
  try {
    prepared->run({{"x", floats({4}, {1, 2, 3, 4})}, {"x2", floats({1}, {0})}});
    FAIL() << "an unknown input name must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x2"), std::string::npos);
  }
}

TEST(Interpreter, KernelErrorsNameTheNode) {
  ModelBuilder b;
  b.input("a", DataType::Float, {int64_t{2}});
  b.input("b", DataType::Float, {int64_t{3}});
  b.node("Add", {"a", "b"}, {"y"}, "bad_add");
  b.output_untyped("y");
  auto prepared = make_reference_engine()->prepare(load(b));
  try {
    prepared->run({{"a", floats({2}, {1, 2})}, {"b", floats({3}, {1, 2, 3})}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().where.node, "bad_add");
    EXPECT_NE(e.diagnostic().message.find("cannot be broadcast"), std::string::npos) << e.what();
  }
}

TEST(Interpreter, CancelStopsBetweenNodes) {
  auto prepared = make_reference_engine()->prepare(load(mish_model()));
  Recorder rec;
  rec.stop_after = 1;
  RunOptions opts;
  opts.observer = &rec;
  try {
    prepared->run({{"x", floats({4}, {1, 2, 3, 4})}}, opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().code, "cancelled");
  }
  EXPECT_EQ(rec.seen.size(), 1u);
}

TEST(Interpreter, HugeOutputIsRefusedNotAllocated) {
  ModelBuilder b;
  b.input("shape", DataType::Int64, {int64_t{2}});
  b.node("ConstantOfShape", {"shape"}, {"y"}, "big");
  b.output_untyped("y");
  auto prepared = make_reference_engine()->prepare(load(b));
  Tensor shape = Tensor::zeros(DataType::Int64, {2});
  shape.mutable_data<int64_t>()[0] = int64_t{1} << 30;
  shape.mutable_data<int64_t>()[1] = int64_t{1} << 30;  // 4 EiB of floats
  try {
    prepared->run({{"shape", shape}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.diagnostic().where.node, "big");
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
  }
}

// The main graph's initializers are read from a frame made once per
// prepared model: an input with an initializer default takes the default
// when not given and the caller's value when given, run after run in any
// order, and an If branch reads a main-graph initializer through its scope.
TEST(Interpreter, InitializerDefaultsAndOverridesRunAfterRun) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{2}});
  b.input("k", DataType::Float, {int64_t{2}});
  b.initializer(make_float_tensor("k", {2}, {10.f, 20.f}));  // the default of input k
  b.initializer(make_float_tensor("w", {2}, {1.f, 2.f}));
  b.initializer(make_float_tensor("zero", {}, {0.f}));
  onnx::GraphProto then_g, else_g;
  for (auto* g : {&then_g, &else_g}) {
    auto* n = g->add_node();
    n->set_op_type(g == &then_g ? "Add" : "Sub");
    n->add_input("xk");
    n->add_input("w");  // the enclosing graph's initializer
    n->add_output(g == &then_g ? "t" : "e");
    auto* o = g->add_output();
    o->set_name(g == &then_g ? "t" : "e");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    g->set_name(g == &then_g ? "then" : "else");
  }
  b.node("Add", {"x", "k"}, {"xk"}, "add_k");
  b.node("ReduceSum", {"xk"}, {"s"}, "sum");
  b.node("Greater", {"s", "zero"}, {"c"}, "positive");
  auto& n = b.node("If", {"c"}, {"y"}, "branch");
  auto* a1 = n.add_attribute();
  a1->set_name("then_branch");
  a1->set_type(onnx::AttributeProto::GRAPH);
  *a1->mutable_g() = then_g;
  auto* a2 = n.add_attribute();
  a2->set_name("else_branch");
  a2->set_type(onnx::AttributeProto::GRAPH);
  *a2->mutable_g() = else_g;
  b.output_untyped("y");
  auto m = load(b);
  for (const auto& engine : reference_and_cpu()) {
    SCOPED_TRACE(std::string(engine->name()));
    auto prepared = engine->prepare(m);
    auto y = [&](const NamedValues& in) {
      const Tensor t = prepared->run(in).at(0).second.tensor();
      return std::vector<float>(t.data<float>(), t.data<float>() + 2);
    };
    const Tensor x = floats({2}, {1, 2});
    for (int round = 0; round < 2; ++round) {
      EXPECT_EQ(y({{"x", x}}), (std::vector<float>{12.f, 24.f}));                            // k = 10, 20; then
      EXPECT_EQ(y({{"x", x}, {"k", floats({2}, {-5, -5})}}), (std::vector<float>{-5.f, -5.f}));  // xk = -4, -3; else
      EXPECT_EQ(y({{"x", x}}), (std::vector<float>{12.f, 24.f}));
    }
  }
}


// The scopes a Loop body's nodes read from (reference/interpreter.h: slots,
// the plan's constants, enclosing scopes by name): its own initializer, the
// loop-carried value and its iteration number (its inputs), a main-graph
// initializer and a main-graph input (by name), and a value of its own
// named like a main-graph value, which hides that one inside the body.
// Values die and are freed in each iteration; the run is repeated.
TEST(Interpreter, LoopBodyReadsItsOwnOuterAndCarriedValues) {
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{2}});
  b.initializer(make_float_tensor("w", {2}, {10.f, 20.f}));
  b.initializer(make_int64_tensor("trips", {}, {3}));
  b.node("Neg", {"x"}, {"shadowed"}, "neg");  // -x outside the body
  auto& loop = b.node("Loop", {"trips", "", "x"}, {"acc_out"}, "loop");
  onnx::GraphProto& body = *attr_graph(loop, "body");
  body.set_name("body");
  *body.add_input() = make_value("i", DataType::Int64, {});
  *body.add_input() = make_value("cond", DataType::Bool, {});
  *body.add_input() = make_value("acc", DataType::Float, {int64_t{2}});
  *body.add_initializer() = make_float_tensor("step", {2}, {1.f, 2.f});  // the body's own
  add_node(body, "Identity", {"cond"}, {"cond_out"});
  add_node(body, "Cast", {"i"}, {"fi"}).add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("to");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(onnx::TensorProto::FLOAT);
    return a;
  }());
  add_node(body, "Mul", {"step", "x"}, {"sx"});         // own initializer * outer input
  add_node(body, "Add", {"sx", "w"}, {"shadowed"});     // + outer initializer; hides the outer 'shadowed'
  add_node(body, "Mul", {"shadowed", "fi"}, {"scaled"});  // * iteration number
  add_node(body, "Add", {"acc", "scaled"}, {"acc_next"});
  *body.add_output() = make_value("cond_out", DataType::Bool, {});
  *body.add_output() = make_value("acc_next", DataType::Float, {int64_t{2}});
  b.node("Add", {"acc_out", "shadowed"}, {"y"}, "add_outer");  // the outer 'shadowed': -x
  b.output_untyped("y");
  auto m = load(b);
  for (const auto& engine : reference_and_cpu()) {
    SCOPED_TRACE(std::string(engine->name()));
    auto prepared = engine->prepare(m);
    for (int round = 0; round < 3; ++round) {
      const float x0 = 1.f + static_cast<float>(round), x1 = 2.f;
      const Tensor t = prepared->run({{"x", floats({2}, {x0, x1})}}).at(0).second.tensor();
      // acc = x + (0 + 1 + 2) * (step * x + w), then - x
      EXPECT_EQ(std::vector<float>(t.data<float>(), t.data<float>() + 2),
                (std::vector<float>{3.f * (1.f * x0 + 10.f), 3.f * (2.f * x1 + 20.f)}));
    }
  }
}

// KernelContext::input_is_initializer: the interpreter answers from its plan
// what the by-name default answers, for a main-graph initializer, a graph
// input, an input that overrides an initializer (given or not), a node
// output and an omitted input, in the main graph and in a subgraph (whose
// own initializer counts, an enclosing graph's does not).
TEST(Interpreter, InputIsInitializerAnswersAsTheGraphSays) {
  static std::vector<std::string> seen;  // per Sum call: plan's answer / by-name answer per input
  seen.clear();
  KernelRegistry extra;
  extra.add(KernelDef{"", "Sum", 1, INT_MAX, "recorder", [](KernelContext& ctx) {
                        std::string s;
                        for (size_t i = 0; i < ctx.input_count(); ++i) {
                          const bool by_name = ctx.KernelContext::input_is_initializer(i);
                          s += std::to_string(ctx.input_is_initializer(i)) + std::to_string(by_name) + " ";
                        }
                        seen.push_back(s);
                        ctx.output(0) = Value(floats({2}, {0, 0}));
                      }});
  ModelBuilder b(17, 8);
  b.input("x", DataType::Float, {int64_t{2}});
  b.input("k", DataType::Float, {int64_t{2}});
  b.initializer(make_float_tensor("k", {2}, {10.f, 20.f}));
  b.initializer(make_float_tensor("w", {2}, {1.f, 2.f}));
  b.initializer(make_int64_tensor("trips", {}, {1}));
  b.node("Neg", {"x"}, {"nx"}, "neg");
  b.node("Sum", {"w", "x", "k", "nx"}, {"s"}, "sum_main");
  auto& loop = b.node("Loop", {"trips", "", "s"}, {"out"}, "loop");
  onnx::GraphProto& body = *attr_graph(loop, "body");
  body.set_name("body");
  *body.add_input() = make_value("i", DataType::Int64, {});
  *body.add_input() = make_value("cond", DataType::Bool, {});
  *body.add_input() = make_value("acc", DataType::Float, {int64_t{2}});
  *body.add_initializer() = make_float_tensor("own", {2}, {1.f, 1.f});
  add_node(body, "Identity", {"cond"}, {"cond_out"});
  add_node(body, "Sum", {"own", "w", "acc"}, {"acc_next"});
  *body.add_output() = make_value("cond_out", DataType::Bool, {});
  *body.add_output() = make_value("acc_next", DataType::Float, {int64_t{2}});
  b.output_untyped("out");
  auto m = load(b);
  ReferenceOptions o;
  o.extra_kernels = &extra;
  auto prepared = make_reference_engine(o)->prepare(m);
  prepared->run({{"x", floats({2}, {1, 2})}});
  prepared->run({{"x", floats({2}, {1, 2})}, {"k", floats({2}, {3, 4})}});
  // w, x, k (an initializer by name, given or not), nx; then own, w (the main graph's), acc.
  const std::vector<std::string> want{"11 00 11 00 ", "11 00 00 ", "11 00 11 00 ", "11 00 00 "};
  EXPECT_EQ(seen, want);
}
