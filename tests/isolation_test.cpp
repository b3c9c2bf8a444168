// Engines in a worker process (isolation.h): the same outputs and node events
// as in process, and a kernel that crashes, aborts or never returns becomes a
// located error in the caller, which goes on with a fresh worker. The crashing
// kernels come from tests/plugins/test_crash.c, loaded only by the worker.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "model_builder.h"
#include "onnxscope/inputs.h"
#include "onnxscope/isolation.h"

using namespace onnxscope;
using namespace onnxscope::test;

namespace {

// x[2,8] -> Relu (r) -> OP (bad, com.test when given) -> Neg (n) -> y
std::shared_ptr<const Model> model(const std::string& op = {}) {
  ModelBuilder b(17);
  if (!op.empty()) b.opset("com.test", 1);
  b.input("x", DataType::Float, {int64_t{2}, int64_t{8}});
  b.node("Relu", {"x"}, {"a"}, "r");
  if (op.empty()) b.node("Sigmoid", {"a"}, {"b"}, "bad");
  else b.node(op, {"a"}, {"b"}, "bad", "com.test");
  b.node("Neg", {"b"}, {"y"}, "n");
  b.output("y", DataType::Float, {int64_t{2}, int64_t{8}});
  auto r = b.load();  // custom-domain operators load with a warning: this process never loads the plugin
  EXPECT_TRUE(r.ok()) << dump(r);
  return std::shared_ptr<const Model>(std::move(r.model));
}

NamedValues inputs(const Model& m) {
  InputSpec spec;
  spec.seed = 7;
  return make_inputs(m, spec);
}

std::unique_ptr<Engine> isolated(const std::string& name, double timeout = 0, double grace = 2) {
  EngineSettings s;
  s.limits.timeout_seconds = timeout;
  IsolationOptions o{ONNXSCOPE_WORKER, {ONNXSCOPE_PLUGIN_CRASH}, grace};
  auto e = make_isolated_engine(name, s, o);
  EXPECT_NE(e, nullptr);
  return e;
}

struct Events : Observer {
  std::vector<std::string> nodes, kernels;
  std::vector<Value> first_outputs;
  int stop_from_poll = -1;  // should_stop() is true from this (1-based) call on
  int polls = 0;
  void on_node(const NodeEvent& e) override {
    nodes.push_back(e.node->label(e.node_index));
    kernels.emplace_back(e.kernel);
    first_outputs.push_back(e.outputs.empty() ? Value() : e.outputs[0]);
  }
  bool should_stop() override { return stop_from_poll >= 0 && ++polls >= stop_from_poll; }
};

Diagnostic run_error(PreparedModel& p, const NamedValues& in, Observer* obs = nullptr) {
  RunOptions o;
  o.observer = obs;
  try {
    p.run(in, o);
  } catch (const Error& e) {
    return e.diagnostic();
  }
  ADD_FAILURE() << "the run did not fail";
  return {};
}

bool same(const Value& a, const Value& b) {
  return a.is_tensor() && b.is_tensor() && a.tensor().shape() == b.tensor().shape() &&
         a.tensor().byte_size() == b.tensor().byte_size() &&
         std::memcmp(a.tensor().raw(), b.tensor().raw(), a.tensor().byte_size()) == 0;
}

}  // namespace

TEST(Isolation, SameOutputsAndEventsAsInProcess) {
  auto m = model();
  const NamedValues in = inputs(*m);
  for (const std::string name : {"reference", "cpu"}) {
    Events local_ev, iso_ev;
    RunOptions lo, io;
    lo.observer = &local_ev;
    io.observer = &iso_ev;
    NamedValues local = make_engine(name)->prepare(m)->run(in, lo);
    auto engine = isolated(name);
    auto p = engine->prepare(m);
    NamedValues iso = p->run(in, io);
    ASSERT_EQ(iso.size(), 1u);
    EXPECT_EQ(iso[0].first, "y");
    EXPECT_TRUE(same(local[0].second, iso[0].second)) << name;
    EXPECT_EQ(iso_ev.nodes, local_ev.nodes) << name;
    EXPECT_EQ(iso_ev.kernels, local_ev.kernels) << name;
    ASSERT_EQ(iso_ev.first_outputs.size(), local_ev.first_outputs.size());
    for (size_t i = 0; i < iso_ev.first_outputs.size(); ++i)
      EXPECT_TRUE(same(iso_ev.first_outputs[i], local_ev.first_outputs[i])) << name << " node " << i;
    // A second run on the same worker, without an observer.
    EXPECT_TRUE(same(p->run(in)[0].second, local[0].second)) << name;
    EXPECT_GT(p->last_run_stats().peak_live_bytes, 0u) << name;
  }
}

TEST(Isolation, ACrashingKernelIsAnErrorAtItsNodeAndTheEngineGoesOn) {
  auto bad = model("Crash");
  auto good = model();
  auto engine = isolated("cpu");
  auto p = engine->prepare(bad);
  Events ev;
  const Diagnostic d = run_error(*p, inputs(*bad), &ev);
  EXPECT_EQ(d.code, "worker-crashed") << d.to_string();
  EXPECT_EQ(d.where.node, "bad") << d.to_string();
  EXPECT_EQ(d.where.op_type, "Crash") << d.to_string();
  EXPECT_EQ(d.where.graph, "main");
  EXPECT_NE(d.message.find("worker process"), std::string::npos) << d.message;
  EXPECT_EQ(ev.nodes, std::vector<std::string>{"r"});  // the node before it was reported
  // The same engine runs another model (a new worker), and the crashing one
  // again (prepared afresh in that worker), which crashes the same way.
  auto q = engine->prepare(good);
  EXPECT_EQ(q->run(inputs(*good)).size(), 1u);
  EXPECT_EQ(run_error(*p, inputs(*bad)).where.node, "bad");
  EXPECT_EQ(q->run(inputs(*good)).size(), 1u);
}

TEST(Isolation, AnAbortCarriesTheWorkersLastWords) {
  auto bad = model("Abort");
  auto p = isolated("reference")->prepare(bad);
  const Diagnostic d = run_error(*p, inputs(*bad));
  EXPECT_EQ(d.code, "worker-crashed");
  EXPECT_EQ(d.where.node, "bad");
  EXPECT_NE(d.message.find("Abort kernel giving up"), std::string::npos) << d.message;
}

TEST(Isolation, CancelStopsAKernelThatNeverReturns) {
  auto bad = model("Spin");
  auto p = isolated("reference", 0, 0.3)->prepare(bad);
  Events ev;
  // The caller polls once after Relu's event (no: the worker goes on into
  // Spin), then every 100 ms while nothing arrives (yes: Spin ignores it).
  ev.stop_from_poll = 2;
  const auto t0 = std::chrono::steady_clock::now();
  const Diagnostic d = run_error(*p, inputs(*bad), &ev);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(d.code, "cancelled") << d.to_string();
  EXPECT_EQ(d.where.node, "bad");
  EXPECT_GT(s, 0.3);  // the grace given to the kernel
  EXPECT_LT(s, 10.0);
  EXPECT_EQ(ev.nodes, std::vector<std::string>{"r"});
}

TEST(Isolation, TimeoutStopsAKernelThatNeverReturns) {
  auto bad = model("Spin");
  auto p = isolated("cpu", 0.5, 0.3)->prepare(bad);
  const Diagnostic d = run_error(*p, inputs(*bad));
  EXPECT_EQ(d.code, "timeout") << d.to_string();
  EXPECT_EQ(d.where.node, "bad");
  EXPECT_NE(d.message.find("--timeout"), std::string::npos) << d.message;
}

TEST(Isolation, EngineErrorsArriveLocatedAsInProcess) {
  auto m = model();
  EngineSettings s;
  s.limits.max_live_bytes = 16;  // every 2x8 float tensor is 64 bytes
  auto e = make_isolated_engine("reference", s, IsolationOptions{ONNXSCOPE_WORKER, {}, 2});
  auto p = e->prepare(m);
  const Diagnostic d = run_error(*p, inputs(*m));
  EXPECT_EQ(d.code, "live-bytes-limit") << d.to_string();
  EXPECT_EQ(d.where.node, "r") << d.to_string();
}

TEST(Isolation, AMissingWorkerOrPluginIsAClearError) {
  auto m = model();
  auto e = make_isolated_engine("cpu", {}, IsolationOptions{"/nonexistent/onnxscope-worker", {}, 2});
  try {
    e->prepare(m);
    ADD_FAILURE() << "prepared without a worker";
  } catch (const Error& err) {
    EXPECT_EQ(err.diagnostic().code, "worker");
    EXPECT_NE(std::string(err.what()).find("/nonexistent/onnxscope-worker"), std::string::npos) << err.what();
  }
  auto bad_plugin = make_isolated_engine("cpu", {}, IsolationOptions{ONNXSCOPE_WORKER, {"/nonexistent/plugin.so"}, 2});
  try {
    bad_plugin->prepare(m);
    ADD_FAILURE() << "prepared with a plugin that does not exist";
  } catch (const Error& err) {
    EXPECT_EQ(err.diagnostic().code, "plugin");
    EXPECT_NE(std::string(err.what()).find("/nonexistent/plugin.so"), std::string::npos) << err.what();
  }
  EXPECT_EQ(make_isolated_engine("no-such-engine", {}, IsolationOptions{ONNXSCOPE_WORKER, {}, 2}), nullptr);
}
